/*
 * A model as a list of layers over named tensors, and the one executor
 * that runs it (exec.c): the forward in list order, the backward that adds
 * in reverse, and what the backward reads made again where the model said
 * not to keep it.
 *
 * The UNet (unet.c) and the ResNet UNet (unet_resnet.c) are built this
 * way; each gives the gradients of the hand-written passes it replaced bit
 * for bit, in no more work (but for one up-convolution) and no more bytes.
 *
 * Tensors are per micro-batch (capacity images); a tensor's place in the
 * forward is `fwd`, the place it is made again in for the backward is
 * `again`, and its gradient's is `grad`.  The arena plan (arena_plan.h)
 * names each of them and places them by their lives in the recorded step.
 */
#ifndef TT_MODEL_GRAPH_H
#define TT_MODEL_GRAPH_H

#include "backend/backend.h"
#include "core/precision.h"
#include "ops/activation.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/norm.h"

typedef enum tt_layer_kind {
    TT_LAYER_CONV,       /* out = conv(in[0]) (+ conv(in[1]): the weight's input channels
                            split [in[0] | in[1]], no concatenated copy) (+ bias) */
    TT_LAYER_NORM,       /* out = [relu](batch or group norm(in[0])), statistics kept in
                            `saved` */
    TT_LAYER_RELU,       /* out = relu(in[0]) (written in place over it: `alias`) */
    TT_LAYER_ADD,        /* out = [relu](in[0] + in[1]) */
    TT_LAYER_MAX_POOL,   /* out = max pool(in[0]) (kernel, stride, pad); the backward
                            finds the winners by its argmax (argmax set) or again in
                            the input */
    TT_LAYER_UPSAMPLE,   /* out = nearest x2 of in[0], or bilinear x factor with
                            align_corners (bilinear set: smp's FPN and heads) */
    TT_LAYER_CONV_T,     /* out = transposed conv(in[0]) + bias (kernel, stride, pad:
                            the UNet's up-convolutions 2, 2, 0; Linknet's 4, 2, 1) */
    TT_LAYER_DROPOUT,    /* out = in[0] with whole images (per_sample: drop-path), whole
                            channels of an image (per_channel: Dropout2d) or single
                            elements (Dropout) dropped with
                            probability p, the others scaled by 1 / (1 - p), in
                            training; in[0] itself in eval; the mask drawn from the
                            model's dropout_seed and `salt` */
    TT_LAYER_CONCAT,     /* out = [in[0], in[1]] along channels */
    TT_LAYER_MEAN,       /* out (C x 1 x 1) = the mean of each plane of in[0] */
    TT_LAYER_BROADCAST,  /* out (C x H x W) = in[0] (C x 1 x 1) over every pixel */
    TT_LAYER_ACT,        /* out = SiLU or sigmoid (act) of in[0] */
    TT_LAYER_CHANNEL_MUL, /* out = in[0] (C x H x W) times in[1] (C x 1 x 1), channel by
                             channel (squeeze-and-excitation's scale) */
} tt_layer_kind;

typedef enum tt_scope { TT_SCOPE_AUTO, TT_SCOPE_LAYER, TT_SCOPE_GROUP } tt_scope;

/* What the backward does about a tensor the forward made. */
typedef enum tt_keep {
    TT_KEEP,             /* kept from the forward to the backward */
    TT_REMAKE,           /* forward only: its producer makes it again (into `again`)
                            when a backward first reads it, and later reads take that */
    TT_RECOMPUTE,        /* forward only: made again for each group of layers (a
                            block) whose backward reads it, in a place of that
                            group's own (a tensor that should not live between two
                            blocks that read it) */
} tt_keep;

typedef struct tt_tensor_def {
    char name[48];
    int channels, height, width;  /* one image's */
    int producer;                 /* the layer that writes it; -1: the model's input */
    tt_keep keep;
    int kept_outside;             /* TT_RECOMPUTE: readers outside its producer's group read
                                   the forward's (kept until the last of them); its own
                                   group, recomputed anyway, makes it again (enc.0's output,
                                   its skip kept, the pool's backward reading it again) */
    tt_scope scope;               /* TT_RECOMPUTE: made again once for each group (block) whose
                                     backward reads it, or for each layer that does (less
                                     alive, more work); TT_SCOPE_AUTO: a convolution's output
                                     per group, anything cheaper per layer */
    int alias;                    /* written in place over tensor `alias` (its places are that
                                     one's); -1: a place of its own */
    int grad_alias;               /* its gradient is tensor grad_alias's gradient's place (a
                                     norm's backward runs in place); -1: its own */
    int needs_grad;               /* some parameter depends on it (set by tt_graph_finish) */
    tt_precision storage;         /* fp16 or bf16: a kept convolution output, packed into
                                     `half` as soon as made and read there by the norm after
                                     it, forward and backward (fwd then lives for the
                                     convolution alone); else fp32 */
    tt_precision rounded;         /* fp16 or bf16: its values kept to 16 bits, rounded in place
                                     as soon as made (forward and backward compute with the
                                     values the backward reads); readers after its producer's
                                     group and the layer that follows it, forward or backward,
                                     get it again: unpacked from `half`, or made again and
                                     rounded; else fp32 */
    int halved;                   /* rounded: a 16-bit copy kept in `half` (set by
                                     tt_graph_finish: kept, kept outside, or read far on in
                                     the forward and not cheaply made again there) */
    tt_mem fwd, again, grad, half; /* the places */
    int fused;                    /* banded storage (exec_band.c): a norm's output never stored;
                                     each band its reader gathers is the norm applied to the
                                     norm's stored input */
    int eager;                    /* TT_REMAKE: made again as soon as its input is (while that
                                     is at hand), not when first read */
    int made_again;               /* during a backward: `again` holds it */
    int grad_started;             /* during a backward: its gradient holds a contribution */
} tt_tensor_def;

typedef struct tt_layer {
    tt_layer_kind kind;
    char name[48];
    int in[2], out;               /* tensor indices; in[1] -1 when one input */
    int group;                    /* layers whose backwards share what is recomputed for
                                     them (a block): the index of the group's first layer */
    /* conv */
    int kernel, stride, relu;     /* relu: norm and add */
    int dilation;                 /* 0 means 1; padded by dilation * (kernel / 2) */
    int weight, bias;             /* parameter indices (-1: none) */
    int no_input_grad;            /* the image's */
    /* norm */
    tt_norm_kind norm;            /* TT_NORM_BATCH (the default) or TT_NORM_GROUP */
    int groups;                   /* group norm's groups, or a convolution's (0: 1) */
    int bn_w, bn_b, bn_rm, bn_rv; /* weight, bias; batch norm's running statistics */
    int frozen;                   /* FrozenBatchNorm2d: running statistics in training too */
    int restat;                   /* made again (in training), the norm computes its
                                     statistics again into a place of its group's own, which
                                     its backward reads: the forward's die with the forward
                                     (a recomputed block's, as the plain UNet's) */
    tt_batch_norm_state bn;
    tt_mem saved;                 /* statistics (a plan item of its own) */
    /* pool: kernel, stride and pad (above's kernel and stride) */
    int pad, keeps_argmax;
    tt_mem argmax;
    /* upsample: bilinear with align_corners by `factor` (else nearest x2) */
    int bilinear, factor;
    /* dropout: the probability, whole channels or elements, and what tells
     * its mask from another dropout layer's in the same step */
    float p;
    int per_sample, per_channel, salt;
    /* act: TT_ACT_SILU or TT_ACT_SIGMOID */
    tt_activation_kind act;
} tt_layer;

typedef struct tt_graph {
    tt_tensor_def *tensors;
    int tensor_count, tensor_capacity;
    tt_layer *layers;
    int layer_count, layer_capacity;
    int input, output;            /* tensor indices */
    int failed;                   /* out of host memory while adding */
} tt_graph;

/* A tensor of one image's channels x height x width; its index (-1 when
 * out of host memory: g->failed). */
int tt_graph_tensor(tt_graph *g, const char *name, int channels, int height, int width,
                    tt_keep keep);
/* A layer; its index.  The caller fills the kind's fields of the result. */
/* Tensor t's definition for a model's builder to read; a zeroed one for
 * the -1 of a tensor that found no memory (g->failed says so), so that a
 * builder goes on to its end and the error is met once, in
 * tt_graph_finish. */
const tt_tensor_def *tt_graph_def(const tt_graph *g, int t);
tt_layer *tt_graph_layer(tt_graph *g, tt_layer_kind kind, const char *name, int in0, int in1,
                         int out);
/* Layers from `first` to the last one added form one group (a block):
 * a TT_RECOMPUTE tensor is made again once for their backwards. */
void tt_graph_group(tt_graph *g, int first);
/* After the last layer: which tensors need gradients, which rounded ones
 * keep a 16-bit copy. */
tt_status tt_graph_finish(tt_graph *g);
/* Whether layer `reader` reads tensor t in the forward where its producer
 * left it: in the producer's group or the layer right after it. */
int tt_graph_near(const tt_graph *g, int t, int reader);
void tt_graph_free(tt_graph *g);

#endif
