/*
 * The UNet on a device: parameters, gradients and activations in accounted
 * buffers, and a forward and backward pass written out top to bottom.
 *
 * A tt_unet is built for a micro-batch capacity and a tile (H, W multiples
 * of 2^depth); forward and backward may run on fewer images (the short last
 * micro-batch).  Backward ADDS into the gradient arena, so N micro-batches
 * accumulate; the trainer zeroes it once per window.
 */
#ifndef TT_MODEL_UNET_H
#define TT_MODEL_UNET_H

#include "backend/backend.h"
#include "model/model.h"
#include "model/unet_config.h"
#include "ops/batch_norm.h"
#include "ops/conv_algo.h"

#define TT_UNET_MAX_DEPTH 8

/* What one block's forward writes. */
typedef struct tt_unet_tensors {
    tt_mem conv1, act1;          /* (N, C, H, W); act == conv without norm; with a norm
                                    act1 is made again for backward, not kept */
    tt_mem conv2, act2;          /* (N, C, H, W); act2 is the block output */
    tt_mem saved1, saved2;       /* norm statistics for backward */
    tt_mem input;                /* (N, Cin, H, W), not owned, what conv1 reads; a decoder
                                    block's is up[i] (N, Cin/2, H, W) (in a recomputed
                                    set, up[i] made again), and the rest of [up, skip]
                                    is its skip (never copied together) */
    tt_mem skip;                 /* decoder: enc.i's output (the forward's, or made again
                                    for the backward with checkpointing) */
} tt_unet_tensors;

/* The banded step's full-size tensors of one block (16-bit storage with
 * checkpointing, unet_banded.c), each stored as tt_unet_band_store says
 * for its width. */
typedef struct tt_unet_block_bands {
    tt_mem conv1, conv2;         /* the forward's */
    tt_mem conv1_again, conv2_again; /* made again for the backward */
    tt_mem out;                  /* the block's output: the checkpoint, kept */
    tt_mem grad;                 /* the gradient at the output, then down the block in place */
    tt_mem dinput;               /* enc.i (i > 0) and the bottleneck: the input's gradient */
    tt_mem skip_conv1, skip_conv2, skip_out; /* enc.i (i > 0) made again as dec.i's skip */
} tt_unet_block_bands;

/* One conv-norm-ReLU-conv-norm-ReLU block and what its backward needs. */
typedef struct tt_unet_block {
    char name[24];               /* "enc.0", "bottleneck", "dec.1" */
    int in_channels, channels;   /* Cin, C */
    int height, width;           /* H, W of this level */
    int level;                   /* i of enc.i and dec.i; depth for the bottleneck */
    int recompute;               /* inner tensors not kept: made again in backward
                                    (checkpointing; enc.0 always) */
    int lean;                    /* backward in two rooms, conv1 made twice (unet.c) */
    tt_unet_tensors fwd;         /* written by the forward pass; consumers read fwd.act2 */
    tt_unet_tensors bwd;         /* read by the block's backward: fwd itself, or when
                                    recomputed a recomputation made just before */
    tt_unet_tensors again;       /* checkpointing, enc.i (i > 0): its output made again
                                    for dec.i's backward, as dec.i's bwd.skip */
    int keeps_again;             /* again is kept, whole, as this block's bwd: its
                                    backward makes nothing a third time */
    tt_mem half_conv1, half_conv2; /* 16-bit storage (config.precision fp16 or bf16): what a
                                    block that is not recomputed keeps of conv1 and conv2,
                                    unpacked into bwd for its backward (unet.c keep_block) */
    tt_mem half_act2;            /* 16-bit storage: the block's output, unpacked where the
                                    forward or backward reads it later (skip, below, head) */
    tt_unet_block_bands band;    /* the banded step's (unet_banded.c); else unused */
    tt_batch_norm_state bn1, bn2;
    int conv1_w, conv1_b, norm1_w, norm1_b, norm1_rm, norm1_rv;  /* param indices */
    int conv2_w, conv2_b, norm2_w, norm2_b, norm2_rm, norm2_rv;
} tt_unet_block;

typedef struct tt_unet {
    tt_model model;              /* the interface's head (model/model.h): it owns the
                                    parameter, gradient, input, workspace and activation
                                    buffers */
    tt_backend *be;
    tt_unet_config config;
    tt_param_table params;
    int capacity;                /* largest micro-batch */
    tt_conv_algo conv_algo;      /* AUTO, or DIRECT when AUTO's workspace would be too large */
    int height, width;           /* the tile */

    tt_buffer *wsplit_buffer;    /* a decoder conv1 weight and its gradient in halves by
                                    input channels ([up | skip]): 4 x C' C 9 floats */

    tt_unet_block enc[TT_UNET_MAX_DEPTH], bottleneck, dec[TT_UNET_MAX_DEPTH];
    tt_mem pool[TT_UNET_MAX_DEPTH];   /* (N, C_i, H_i/2, W_i/2) */
    tt_mem pool_again[TT_UNET_MAX_DEPTH]; /* with checkpointing pool[i] lives in the
                                         forward only and is made again for the
                                         backward, from enc.i's output after dec.i's
                                         backward (unet_memory.c); else pool[i] */
    tt_mem skip_fwd[TT_UNET_MAX_DEPTH]; /* 16-bit storage: enc.i's output unpacked for
                                         dec.i's forward (dec.i's fwd.skip); else unused */
    tt_mem skip_bwd[TT_UNET_MAX_DEPTH]; /* 16-bit storage, enc.i recomputed and not made
                                         again: its output unpacked for dec.i's backward
                                         (dec.i's bwd.skip); else unused */
    tt_mem pool_source[TT_UNET_MAX_DEPTH]; /* 16-bit storage without checkpointing, enc.i
                                         recomputed: its output unpacked once more to
                                         make pool[i] again, so skip_bwd lives for
                                         dec.i's backward only; else unused */
    tt_mem below_again[TT_UNET_MAX_DEPTH]; /* 16-bit storage, dec.i kept: the output
                                         below dec.i unpacked to make up.i again, so
                                         that the one up.i's backward reads is
                                         unpacked after dec.i's conv1 backward */
    tt_mem up[TT_UNET_MAX_DEPTH];     /* (N, C_i, H_i, W_i): up-convolution output, the
                                         first half of dec.i's input [up, skip]; lives in
                                         the forward only (made again in backward) */
    tt_mem input;                     /* (N, in_channels, H, W), TT_MEM_DATA */
    tt_mem logits;                    /* (N, classes, H, W) */
    tt_mem dlogits;                   /* same shape: the loss adds its gradient here */

    /* the banded step (16-bit storage with checkpointing and a norm;
     * unet_banded.c): every full-size tensor stored in 16 bits (fp32 at an
     * odd width), the fp32 kernels run on row bands of them */
    int banded;
    tt_mem band_up[TT_UNET_MAX_DEPTH];       /* up.i for dec.i's forward */
    tt_mem band_up_again[TT_UNET_MAX_DEPTH]; /* up.i made again for dec.i's recomputation */
    tt_mem band_up_wgrad[TT_UNET_MAX_DEPTH]; /* and once more for its conv1 weight gradient */
    tt_mem band_pool[TT_UNET_MAX_DEPTH];     /* pool.i for the forward */
    tt_mem band_pool_again[TT_UNET_MAX_DEPTH]; /* pool.i made again after dec.i's backward */
    tt_buffer *band_buffer;                  /* three band rooms of band_floats each */
    size_t band_floats;

    /* backward scratch */
    tt_mem dskip[TT_UNET_MAX_DEPTH];  /* gradient of enc[i].act2: from pool and skip */
    tt_mem dnext[TT_UNET_MAX_DEPTH];  /* gradient of the output below dec[i] (dec[i+1]'s
                                         or the bottleneck's) */
    tt_mem dinput;                    /* (N, C_0, H/2, W/2): the input gradient of the
                                         bottleneck and enc[1..]; a decoder block's goes
                                         to its two sources directly (no [up, skip] copy) */
    tt_mem dlevel;                    /* (N, C_0, H, W): the head's output gradient, then
                                         dec.0's up gradient; below level 0 the gradient
                                         runs in rooms of the blocks (unet.c) */
    int batch;                        /* images of the last forward */
    int training;                     /* mode of the last forward */
    int poison;                       /* $TT_POISON_ACTIVATIONS: fill the arena before each
                                         forward with NaN (or the value given), to catch
                                         reads of dead memory */
    float poison_value;
} tt_unet;

/* Builds the model and allocates everything it needs on the device for
 * micro-batches up to `capacity` images of height x width.  Parameters are
 * initialised from `seed` (PyTorch's default distributions).
 * *out: tt_unet_destroy(). */
tt_status tt_unet_create(tt_backend *be, const tt_unet_config *config, int capacity, int height,
                         int width, uint64_t seed, tt_unet **out);
void tt_unet_destroy(tt_unet *unet);

/* The UNet as a tt_model of kind "unet" (its row in model.c's table). */
tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out);
/* What its forward keeps for the backward is stored in 16 bits
 * (config.precision fp16 or bf16; unet.c, unet_memory.c). */
static inline int tt_unet_stores_16(const tt_unet *unet)
{
    return unet->config.precision != TT_PRECISION_FP32;
}
/* How the banded step stores a full-size tensor of this width: the
 * model's 16-bit precision, or fp32 at an odd width (two bands would share
 * a 32-bit word). */
static inline tt_precision tt_unet_band_store(const tt_unet *unet, int width)
{
    return width % 2 ? TT_PRECISION_FP32 : unet->config.precision;
}
/* The UNet behind a model of kind "unet". */
static inline tt_unet *tt_unet_of(tt_model *model) { return (tt_unet *)model; }
/* The UNet's configuration from a spec of kind "unet", and back. */
tt_unet_config tt_unet_config_of(const tt_model_spec *spec);
tt_model_spec tt_unet_spec_of(const tt_unet_config *config);

/* The index in unet->params of "<prefix>.<suffix>", -1 when there is none. */
int tt_unet_param_index(const tt_unet *unet, const char *prefix, const char *suffix);
/* The device place of a named tensor (tt_model_param, tt_model_grad). */
static inline tt_mem tt_unet_param(const tt_unet *unet, int index)
{
    return tt_model_param(&unet->model, index);
}
static inline tt_mem tt_unet_grad(const tt_unet *unet, int index)
{
    return tt_model_grad(&unet->model, index);
}

/* logits = unet(input) for `batch` <= capacity images already in
 * unet->input.  training != 0 uses batch statistics (batch norm) and keeps
 * what backward needs. */
tt_status tt_unet_forward(tt_unet *unet, int batch, int training);

/* Adds the gradient of the loss, given in unet->dlogits, into the gradient
 * arena.  Must follow a training forward of the same batch. */
tt_status tt_unet_backward(tt_unet *unet);

/* ---- memory (src/model/unet_memory.c) ------------------------------------- */

/* Places every activation and backward temporary by lifetime (taken from
 * one step recorded on a dry backend) in as few bytes as possible and
 * allocates the arena (split at the device's largest single allocation),
 * plus the shared convolution workspace the same record sizes. */
tt_status tt_unet_allocate(tt_unet *unet);

#endif
