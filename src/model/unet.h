/*
 * The UNet (unet_config.h) as a model of kind "unet": built as a layer
 * list on the executor (unet_graph.c), or, for the banded step (16-bit
 * storage with checkpointing and a norm: tt_unet_banded), the step written
 * out by hand here (tt_unet, unet_banded.c, unet_memory.c), the one hand
 * step left; it moves onto the executor next (issue 40).
 *
 * A model is built for a micro-batch capacity and a tile (H, W multiples
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

/* One conv-norm-ReLU-conv-norm-ReLU block of the banded step. */
typedef struct tt_unet_block {
    char name[24];               /* "enc.0", "bottleneck", "dec.1" */
    int in_channels, channels;   /* Cin, C */
    int height, width;           /* H, W of this level */
    int level;                   /* i of enc.i and dec.i; depth for the bottleneck */
    tt_mem saved1, saved2;       /* the forward's norm statistics */
    tt_unet_block_bands band;    /* its full-size tensors */
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
    tt_mem input;                /* (N, in_channels, H, W), TT_MEM_DATA */
    tt_mem logits;               /* (N, classes, H, W) */
    tt_mem dlogits;              /* same shape: the loss adds its gradient here */

    /* every full-size tensor stored in 16 bits (fp32 at an odd width), the
     * fp32 kernels run on row bands of them */
    tt_mem band_up[TT_UNET_MAX_DEPTH];       /* up.i for dec.i's forward */
    tt_mem band_up_again[TT_UNET_MAX_DEPTH]; /* up.i made again for dec.i's recomputation */
    tt_mem band_up_wgrad[TT_UNET_MAX_DEPTH]; /* and once more for its conv1 weight gradient */
    tt_mem band_pool[TT_UNET_MAX_DEPTH];     /* pool.i for the forward */
    tt_mem band_pool_again[TT_UNET_MAX_DEPTH]; /* pool.i made again after dec.i's backward */
    tt_buffer *band_buffer;                  /* three band rooms of band_floats each */
    size_t band_floats;

    int batch;                   /* images of the last forward */
    int training;                /* mode of the last forward */
    int poison;                  /* $TT_POISON_ACTIVATIONS: fill the arena before each
                                    forward with NaN (or the value given), to catch reads
                                    of dead memory */
    float poison_value;
} tt_unet;

/* Builds the banded step's model (tt_unet_banded(config) must hold) and
 * allocates everything it needs on the device for micro-batches up to
 * `capacity` images of height x width.  Parameters are initialised from
 * `seed` (PyTorch's default distributions).  *out: tt_unet_destroy(). */
tt_status tt_unet_create(tt_backend *be, const tt_unet_config *config, int capacity, int height,
                         int width, uint64_t seed, tt_unet **out);
void tt_unet_destroy(tt_unet *unet);

/* The UNet as a tt_model of kind "unet" (its row in model.c's table): the
 * executor's, or the banded step's. */
tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out);
/* How the banded step stores a full-size tensor of this width: the
 * model's 16-bit precision, or fp32 at an odd width (two bands would share
 * a 32-bit word). */
static inline tt_precision tt_unet_band_store(const tt_unet *unet, int width)
{
    return width % 2 ? TT_PRECISION_FP32 : unet->config.precision;
}
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

/* The banded step (unet_banded.c): logits = unet(input) for `batch` <=
 * capacity images already in unet->input.  training != 0 uses batch
 * statistics (batch norm) and keeps what backward needs. */
tt_status tt_unet_forward(tt_unet *unet, int batch, int training);

/* Adds the gradient of the loss, given in unet->dlogits, into the gradient
 * arena.  Must follow a training forward of the same batch. */
tt_status tt_unet_backward(tt_unet *unet);

/* Places every tensor of the banded step by lifetime (unet_memory.c) and
 * allocates the arena, the band rooms and the convolution workspace. */
tt_status tt_unet_allocate(tt_unet *unet);

#endif
