/*
 * The smp-style models (--model unet-resnet*, fpn-*) against PyTorch:
 * their twins under python/ (unet_resnet.py, smp_decoders.py) run in
 * float64 by tests/torch_resnet_unet_check.py from the same weights, one
 * step: logits, every parameter gradient, the running statistics and
 * num_batches_tracked after it, dropout's masks drawn alike.  And the
 * checks that need no PyTorch: checkpointing gives the bits of the step
 * without in less memory, 16-bit storage gradients near fp32's.
 *
 * The batch and group norms' parameters are set so that float32 cannot
 * flip a ReLU (controlled() in smp_compare.c): with PyTorch's init a 64x96
 * step has a ReLU input within 1e-5 of 0, float32 PyTorch takes the other
 * side of it and its gradients differ from float64 by up to 6.5e-2 (the
 * script's self-test shows 3e-5 with these).  The script reports the
 * float64 forward's margins.
 */
#ifndef TT_TESTS_SMP_COMPARE_H
#define TT_TESTS_SMP_COMPARE_H

#include <stddef.h>

#include "harness.h"
#include "model/model.h"
#include "ops/conv_algo.h"

#define PY TH_PYTHON
#define CLASSES 3

typedef struct {
    const char *label;
    const char *kind;
    const char *mode;   /* train, freeze (encoder), freeze_all, eval */
    int batch, height, width;
    int twice;          /* then forward and backward again: the gradients double */
    const char *ill;    /* tensors whose names begin so ("": all) sit behind an
                           ill-conditioned norm (one value a channel an image): the
                           16-bit check leaves their worst element to the L2 bound */
} rcase;

/* The storage the models made next keep their activations in. */
extern tt_precision smp_storage;
/* Their convolution algorithm: AUTO, or smp_fixed_row() in checks whose
 * result does not depend on the picks, on shapes no other check tunes
 * (timing a new shape's candidates takes about 30 s of a fresh cache's run
 * on lavapipe). */
extern tt_conv_algo smp_convs;
/* A row that runs every shape untimed: on Vulkan im2col_gemm, the
 * autotuner's reference; on OpenCL implicit_gemm (on PoCL, CLBlast's GEMM
 * over the columns ran deeplabv3plus-resnet18's checkpointing and 16-bit
 * checks in 25.3 s against 6.7 s).  Not the direct rows: they run a
 * stride-2 layer's weight gradient on their scalar kernel, seconds a layer
 * on PoCL, and lavapipe ran direct's ResNet-50 step 50 s slower;
 * test_conv_batch checks those kernels. */
tt_conv_algo smp_fixed_row(void);
/* AUTO on OpenCL, smp_fixed_row() on Vulkan: a step whose model's picks on
 * lavapipe another check of the suite already runs. */
tt_conv_algo smp_picks_on_opencl(void);
/* 1 in the cases whose twins both backends' suites run: the first keeps
 * the twin's output, by its input's hash, in $TT_CACHE_DIR/torch-twins/
 * for the second (smp_compare.c). */
extern int smp_twin_both;
/* Their drop-path rate (EfficientNet encoders; 0: none). */
extern float smp_drop_path;
/* 1 on Vulkan, saying so: a check of what is the executor's or the host's
 * (frozen norms, eval mode, recomputation, another depth of the same
 * blocks, loading weights), the same code on either backend; the Vulkan
 * suites run the checks that reach kernels no other model check reaches
 * there, and the ops' suites check those kernels' frozen and eval modes on
 * both backends.  A model check takes 10 to 40 s of lavapipe. */
int smp_opencl_only(void);

/* 1 when PY imports `modules` ("torch", "torch, torchvision"); else prints
 * why the comparison is skipped. */
int smp_have(const char *modules);
/* A fresh file /tmp/tt-rtest-<what>-XXXXXX. */
void smp_temp_path(char *path, size_t size, const char *what);
/* system(cmd), printed when it fails; 1 when it succeeded. */
int smp_run(const char *cmd);
/* The model `kind` for `mode` (freeze: the encoder's norms frozen;
 * freeze_all: every one), CLASSES classes, seed 11. */
tt_model *smp_create(const char *kind, const char *mode, int capacity, int height, int width);
tt_model *smp_create_checkpointing(const char *kind, const char *mode, int capacity, int height,
                                   int width, int checkpointing);
int smp_is_encoder(const char *name);

/* One step of c against the PyTorch twin in float64 (skipped without
 * torch); with c->twice, a second step doubles every gradient. */
void smp_check_step(const rcase *c);
/* A window of two micro-batches (dropout masks of two seeds) accumulated
 * and one AdamW step, against the PyTorch twin in float64: the window's
 * gradients and running statistics as smp_check_step compares them, and
 * the weights after the update (skipped without torch). */
void smp_check_window(const rcase *c);
/* Two steps with --checkpointing: the same bits in less memory. */
void smp_check_checkpointing(const rcase *c);
/* fp16 and bf16 storage, with and without checkpointing: gradients near
 * fp32's in fewer bytes. */
void smp_check_16bit(const rcase *c);
/* For each of the n kinds: every name and shape of the model's is its
 * PyTorch twin's, and every one of the twin's ours (one Python process for
 * all; at most SMP_MAX_KINDS). */
#define SMP_MAX_KINDS 64
#define SMP_KIND_SIZE 40
void smp_check_names(const char *const *kinds, int n);
/* Every kind of --model but the plain unet (TT_MODEL_CHOICES), at most
 * max; their number. */
int smp_every_kind(char kinds[][SMP_KIND_SIZE], int max);

#endif
