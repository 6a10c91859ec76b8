/*
 * The UNet over a ResNet encoder, laid out and named as
 * segmentation_models_pytorch's Unet(encoder_name="resnet18" | "resnet34")
 * (python/unet_resnet.py is the same model in PyTorch):
 *
 *   encoder.conv1 (7x7 stride 2, no bias), encoder.bn1, ReLU   -> F0 (64, H/2)
 *   max pool 3x3 stride 2 pad 1, encoder.layer1                -> F1 (64, H/4)
 *   encoder.layer2, layer3, layer4 (first block stride 2, a
 *   1x1 stride-2 conv + BN downsample)                         -> F2..F4 (128..512, H/8..H/32)
 *   decoder.blocks.0..4 (256, 128, 64, 32, 16 channels): nearest x2, [up, skip]
 *   with skips F3, F2, F1, F0 and none, then twice conv 3x3 (no bias) + BN + ReLU
 *   segmentation_head.0: 3x3 conv with bias to the classes   -> logits (H)
 *
 * A basic block: relu(bn2(conv2(relu(bn1(conv1 x)))) + identity), the
 * identity x or downsample(x).  Every convolution but the head is followed
 * by a batch norm; a fused ReLU where one follows.  With
 * freeze_encoder_bn the encoder's norms run as PyTorch's FrozenBatchNorm2d
 * in training too: running statistics used and kept, affine parameters
 * trained.  The tile's height and width must be multiples of 32.
 *
 * Forward and backward are written out top to bottom in unet_resnet.c;
 * building (parameters, layers, the planned activation arena) is
 * unet_resnet_build.c.  What the backward needs is kept or made again:
 *  - a norm's output that only the next convolution reads (inside a
 *    block, the decoder's) is made again from the convolution's output
 *    and the norm's statistics; so is an encoder block's output
 *    y = relu(norm(conv2) + identity) but its layer's last (F1..F4),
 *    before its layer's backward;
 *  - the stem's convolution output is made again from the image.
 * With checkpointing:
 *  - an encoder block keeps only its norms' statistics (and F1..F4): its
 *    backward runs its convolutions again first, and its layer's other
 *    outputs are made again from the layer's input; the pool and its
 *    argmax are made again too;
 *  - decoder blocks 0-3 run conv1 again in their backward from their
 *    input and skip made again; block 3 keeps its output (the last
 *    block's input), and its backward makes blocks 0-2's again from F4
 *    and the skips first;
 *  - the last decoder block's input is twice its output's size, too
 *    large to make again beside the gradients: it keeps what it keeps
 *    without.
 */
#ifndef TT_MODEL_UNET_RESNET_H
#define TT_MODEL_UNET_RESNET_H

#include "backend/backend.h"
#include "model/model.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"

#define TT_UR_MAX_BLOCKS 16   /* basic blocks: resnet34 has 3 + 4 + 6 + 3 */
#define TT_UR_DECODER_BLOCKS 5
#define TT_UR_TILE_UNIT 32     /* the encoder's five halvings */

/* A convolution and the batch norm after it (bn_w < 0: none, the head). */
typedef struct tt_ur_conv {
    char name[48];            /* "encoder.layer1.0.conv1": its weight is name.weight */
    int in_channels, out_channels, kernel, stride;
    int in_h, in_w, out_h, out_w;
    int weight, bias;         /* parameter indices; bias -1 without one */
    int bn_w, bn_b, bn_rm, bn_rv;
    tt_batch_norm_state bn;
    int relu;                 /* a ReLU follows the norm, fused into it */
    int frozen;               /* FrozenBatchNorm2d in training too */
    int first;                /* reads the image: no input gradient */
    int remade;               /* act lives in the forward only; the backward makes it again
                                 (act_again) from out and saved for the next conv's weight
                                 gradient: a cheap element-wise pass instead of a kept tensor */
    int remade_upsampled;     /* remade only as the next decoder block's up (remake_upsampled
                                 in unet_resnet.c): no act_again room */
    tt_mem out, act, saved;   /* conv output, norm(+ReLU) output, norm statistics */
    tt_mem act_again;         /* remade: act again, the same bits, for the backward */
    int recomputed;           /* out lives in the forward only; the backward runs the
                                 convolution again into out_again (the same bits) before the
                                 norm's backward: --checkpointing's encoder blocks and decoder
                                 conv1s, and the stem always */
    tt_mem out_again;
    tt_mem out_half;          /* 16-bit storage (spec.precision fp16 or bf16): out as kept,
                                 packed as soon as it is made; the norm reads it there in
                                 the forward and the backward, and out lives for the
                                 convolution alone (unet_resnet.c keeps_16) */
    tt_mem dout;              /* gradient at act, then (in place) at out */
} tt_ur_conv;

/* A basic block: conv1 (ReLU), conv2 (no ReLU), downsample (or none), and
 * y = relu(conv2.act + identity). */
typedef struct tt_ur_block {
    tt_ur_conv conv1, conv2, down;
    int has_down;
    tt_mem *input;            /* x: the previous block's y, or the pool */
    tt_mem *dinput;           /* where x's gradient is added */
    tt_mem y, dy;             /* output and its gradient */
    int output_again;         /* not its layer's last block: y lives in the forward only;
                                 the backward makes it again (y_again, the same bits) before
                                 the layer's backward (block_output_pass) */
    tt_mem y_again;
    tt_mem pass_a, pass_b;    /* the rooms of the pass that makes y_again */
} tt_ur_block;

typedef struct tt_ur_decoder {
    int in_channels, skip_channels, channels;
    int h, w;                 /* output size (2x the input's) */
    tt_mem *input, *dinput;   /* the feature below and where its gradient goes */
    tt_mem *skip, *dskip;     /* NULL for the last block */
    tt_ur_conv *below;        /* the conv whose output is the input (remade upsampled), NULL: F4 */
    tt_mem skip_out_again;    /* skip_conv recomputed: its convolution output made again
                                 from the image for this block's backward */
    tt_ur_conv *skip_conv;    /* the conv whose output is the skip, when made again in the
                                 backward (the stem's: F0); NULL: the skip is kept */
    tt_mem up, dup;           /* nearest x2 of the input (forward only), and its gradient */
    tt_mem up_again;          /* up made again for conv1's weight gradient */
    tt_mem up_pass, skip_pass; /* conv1.recomputed: up and (the stem's) skip made again for
                                 conv1's output again, in rooms of that pass */
    tt_mem pass_up, pass_out, pass_act; /* conv2.recomputed: the rooms of the pass that makes
                                 this block's output again (decoder_pass) */
    tt_ur_conv conv1, conv2;  /* conv1 reads [up, skip] as two convolutions into one
                                 output: no concatenated copy (the UNet's way) */
} tt_ur_decoder;

typedef struct tt_unet_resnet {
    tt_model model;           /* the interface's head, which owns the device buffers; first */
    tt_backend *be;
    tt_model_spec spec;
    int layers[4];            /* basic blocks per encoder layer */
    tt_param_table params;
    int capacity, height, width;
    tt_conv_algo conv_algo;

    tt_buffer *wsplit_buffer; /* a decoder conv1's weight in halves by input channels
                                 ([up | skip]) and its gradient's: 2 x its floats */

    tt_ur_conv stem;          /* encoder.conv1 + encoder.bn1 + ReLU: F0 = stem.act; stem.dout
                                 gathers F0's gradient (decoder block 3's skip, the pool) */
    tt_mem pool, dpool;       /* max pool of F0: layer1's input */
    tt_mem pool_argmax;       /* where each pooled value came from (int32, the pool's size):
                                 the backward a lookup, not a search of F0 again */
    int pool_again_made;      /* --checkpointing: the pool lives in the forward only; before
                                 layer1's backward it is made again (pool_again, and the
                                 argmax then) from F0 made again (stem_act_pool) */
    tt_mem pool_again, stem_act_pool;
    tt_ur_block blocks[TT_UR_MAX_BLOCKS];
    int block_count;
    int layer_end[4];         /* blocks[layer_end[l] - 1] ends layer l + 1: F(l + 1) */
    tt_ur_decoder dec[TT_UR_DECODER_BLOCKS];
    tt_ur_conv head;          /* segmentation_head.0 */
    tt_mem input, logits, dlogits;
    int batch, training;      /* of the last forward */
} tt_unet_resnet;

/* Builds a model of kind "unet-resnet18" or "unet-resnet34" (model.c's
 * table) for micro-batches up to `capacity` tiles of height x width. */
tt_status tt_unet_resnet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                      int height, int width, uint64_t seed, tt_model **out);
/* ---- between unet_resnet_build.c and unet_resnet.c ------------------------ */
tt_status tt_unet_resnet_forward(tt_unet_resnet *u, int batch, int training);
tt_status tt_unet_resnet_backward(tt_unet_resnet *u);
static inline tt_mem tt_unet_resnet_param(const tt_unet_resnet *u, int index)
{
    return tt_model_param(&u->model, index);
}
static inline tt_mem tt_unet_resnet_grad(const tt_unet_resnet *u, int index)
{
    return tt_model_grad(&u->model, index);
}
/* The descriptor of conv c for n images. */
tt_conv2d_desc tt_unet_resnet_conv_desc(const tt_unet_resnet *u, const tt_ur_conv *c, int n);
/* A decoder with a skip runs conv1 over [up, skip] as two convolutions,
 * one per half of its input: the descriptor of the half of `channels`
 * (d->in_channels, the up half; d->skip_channels, the skip half). */
tt_conv2d_desc tt_unet_resnet_half_desc(const tt_unet_resnet *u, const tt_ur_decoder *d,
                                        int channels, int n);
/* With 16-bit storage, whether c keeps its convolution output in 16 bits
 * (out_half): kept (not recomputed), read by a norm, not made again
 * upsampled. */
int tt_unet_resnet_keeps_16(const tt_unet_resnet *u, const tt_ur_conv *c);

#endif
