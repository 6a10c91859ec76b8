/*
 * The model interface: what training, checkpoints, validation, prediction,
 * `mem` and `bench` may ask of a network, whatever its architecture.
 *
 * A model is a table of functions (tt_model_ops) over a common head
 * (struct tt_model): its tensors by PyTorch state_dict name and shape
 * (params), three flat device arenas laid out by that table (parameters,
 * gradients, running statistics), named host counters (batch norm's
 * num_batches_tracked), and the three tensors the caller touches: the
 * input it uploads, the logits it reads, the logits' gradient it fills.
 * Everything between the input and the logits — activations, the plan that
 * places them, the convolution workspace — belongs to the model.
 *
 * backward ADDS into the gradient arena, so N micro-batches accumulate;
 * tt_model_zero_grads() starts a window.  A kind is one row of the table
 * in model.c; the UNet (model/unet.c) is the first.
 */
#ifndef TT_MODEL_MODEL_H
#define TT_MODEL_MODEL_H

#include <stdint.h>

#include "backend/backend.h"
#include "core/precision.h"
#include "model/params.h"
#include "ops/conv2d.h"
#include "ops/conv_algo.h"
#include "ops/norm.h"

/* What to build.  The architecture (kind and its sizes) is what a
 * checkpoint records; checkpointing and algo only change how it runs. */
typedef struct tt_model_spec {
    char kind[32];        /* "unet", "unet-resnet18", ... (model.c's table) */
    int in_channels;      /* 3: RGB */
    int classes;
    int base_channels;    /* unet: channels of the top level */
    int depth;            /* unet: levels below the top */
    tt_norm_kind norm;
    int groups;           /* group norm groups */
    int checkpointing;    /* keep less, recompute in backward */
    tt_conv_algo algo;    /* AUTO: the autotuner picks per shape; else every convolution */
    int freeze_encoder_bn; /* unet-resnet*: the encoder's batch norms use and keep their
                              running statistics, affine parameters trained
                              (FrozenBatchNorm2d); how it trains, not what it is */
    int freeze_decoder_bn; /* unet-resnet*: the decoder's likewise (--freeze-bn: both, so
                              that no statistic depends on the micro-batch) */
    tt_precision precision; /* what is kept from forward to backward: fp32 (0), or fp16 or
                               bf16 storage (arithmetic stays fp32); how it runs */
    float drop_path;       /* EfficientNet encoders: stochastic depth in training, block i of
                              n dropping its residual branch per image with probability
                              drop_path i / n (timm's drop_path_rate); how it trains */
    int predict_only;      /* the eval forward alone (a training forward and backward are
                              refused): no gradient arena, parameters zeroed, not drawn; a
                              model whose weights a checkpoint then gives
                              (tt_infer_model_load); how it runs */
} tt_model_spec;

/* unet, 3 in, 4 classes, base 16, depth 3, group norm of 8 groups. */
tt_model_spec tt_model_spec_default(void);
/* Checks the spec; errors name the value and what to give. */
tt_status tt_model_spec_check(const tt_model_spec *spec);
/* A UNet or an FPN over a ResNet or ResNeXt encoder (unet-resnet18, -34,
 * -50, unet-resnext50_32x4d, fpn-resnet18 ...): sized by its kind, not by
 * base_channels, depth and norm; its tensors under "encoder." first;
 * trained on ImageNet-normalised inputs. */
int tt_model_spec_resnet_encoder(const tt_model_spec *spec);
/* What a tile's sides must be multiples of: 2^depth for the UNet, 32 for a
 * ResNet encoder. */
int tt_model_spec_tile_unit(const tt_model_spec *spec);

/* The smallest micro-batch a training step of the model takes: 2 for
 * DeepLabV3+ (its image pooling's batch norm sees one value a channel an
 * image), else 1 (model.c's table). */
int tt_model_spec_least_micro_batch(const tt_model_spec *spec);
/* The architecture for people: "UNet base 16 depth 3 group",
 * "unet-resnet34 (smp Unet, frozen encoder BN)". */
void tt_model_spec_describe(const tt_model_spec *spec, char *buf, size_t size);
/* The architecture as one line of JSON (a checkpoint's "model" metadata). */
void tt_model_spec_json(const tt_model_spec *spec, char *buf, size_t size);
/* Parses that JSON: "classes" required, other keys default; "kind" absent
 * means unet.  Errors (TT_ERR_FORMAT) name the key. */
tt_status tt_model_spec_parse(const char *json, tt_model_spec *spec);
/* 1 when a and b describe the same architecture (execution settings aside). */
int tt_model_spec_same(const tt_model_spec *a, const tt_model_spec *b);

/* One convolution shape of a model and how many of it one forward runs
 * (bench --layers times each alone). */
typedef struct tt_model_conv {
    char label[48];      /* the first layer that runs it ("enc.0.conv1"), as the step
                            named its layers (tt_backend_layer) */
    int in_channels, out_channels;
    int kernel;          /* square: 3 for 3x3; padded by dilation * (kernel / 2) */
    int stride;          /* 1, or 2 for the down-sampling ones */
    int dilation;        /* 1, or DeepLabV3+'s atrous rates */
    int groups;          /* 1, or the channels of a depthwise one, ResNeXt's 32 */
    int height, width;   /* the input's plane */
    int count;           /* convolutions of this shape in one forward */
    int no_input_grad;   /* the input's gradient is never asked for (the image's) */
    int transposed;      /* a transposed convolution (the UNet's up-convolutions: kernel =
                            stride, no padding, height x width its input's plane) */
} tt_model_conv;

/* Every convolution shape of the model `spec` describes, at a tile of
 * height x width, as its plain step runs them (fp32, no checkpointing):
 * the model built on a dry backend like `like`, its forward's
 * convolutions as recorded (tt_model.convs), in *out (free()), their
 * number in *count.  Errors name a tile the model cannot take. */
tt_status tt_model_conv_shapes(tt_backend *like, const tt_model_spec *spec, int height, int width,
                               tt_model_conv **out, int *count);
/* The output plane of `c` (OH * OW; a transposed one's is its input's
 * times stride squared). */
size_t tt_model_conv_out_plane(const tt_model_conv *c);
/* The conv2d desc of a shape that is not transposed, at `batch`, with
 * `algo`: padded by dilation * (kernel / 2), as the models run it. */
tt_conv2d_desc tt_model_conv_desc(const tt_model_conv *c, int batch, tt_conv_algo algo);

typedef struct tt_model tt_model;

typedef struct tt_model_ops {
    /* logits = model(input) for `batch` <= capacity images already in
     * model->input; training != 0 uses batch statistics and keeps what
     * backward needs. */
    tt_status (*forward)(tt_model *model, int batch, int training);
    /* Adds the gradient of the loss, given in model->dlogits, into the
     * gradient arena; follows a training forward of the same batch. */
    tt_status (*backward)(tt_model *model);
    void (*destroy)(tt_model *model);
} tt_model_ops;

/* A named host integer the model keeps (saved in checkpoints as I64). */
typedef struct tt_model_counter {
    char name[96];
    int64_t *value;
} tt_model_counter;

/* How the model placed its activations (the memory plan). */
typedef struct tt_model_memory {
    size_t activations;        /* the planned arena, bytes */
    size_t activations_apart;  /* what one buffer per tensor would take */
    size_t workspace;          /* the convolution workspace, bytes */
    size_t workspace_limit;    /* AUTO's bound on one convolution's (head.c), bytes */
} tt_model_memory;

struct tt_model {
    const tt_model_ops *ops;
    tt_backend *be;
    tt_model_spec spec;
    const tt_param_table *params; /* names, shapes, offsets in the arenas */
    /* The head owns every device buffer of the model (tt_model_head_free,
     * head.h): */
    tt_buffer *param_buffer;      /* (params->trainable_floats) */
    tt_buffer *grad_buffer;       /* same layout; backward adds here */
    tt_buffer *state_buffer;      /* (params->state_floats); NULL without running statistics */
    tt_buffer *input_buffer;      /* input's */
    tt_buffer *workspace_buffer;  /* shared by every convolution; NULL when none needs one */
    tt_buffer **act_buffers;      /* the planned activation arena (model/arena_plan.h) */
    int act_count;
    int counter_count;
    tt_model_counter *counters;
    int capacity;                 /* largest micro-batch */
    int height, width;            /* the tile */
    tt_mem input;                 /* (capacity, in_channels, H, W), TT_MEM_DATA */
    tt_mem logits;                /* (capacity, classes, H, W) */
    tt_mem dlogits;               /* same shape */
    tt_model_memory memory;
    /* From the step recorded when the model was built (head.h): the
     * distinct convolution shapes its forward runs, with their counts, and
     * the floating-point operations of those convolutions per image */
    tt_model_conv *convs;
    int conv_count;
    double flops_per_image;
    /* NULL: batch norm layers use their own micro-batch's statistics; set
     * (train/dist.c, --sync-bn) to sum them over every rank's micro-batch */
    const tt_norm_sync *norm_sync;
    /* Whose dropout masks the next training forward (and its backward)
     * draws: image k's are drawn from dropout_seed, the layer and its crop,
     * dropout_first + k * dropout_stride in the run's stream of crops
     * (ops/dropout.h).  The trainer sets the seed once (tt_dropout_run_seed)
     * and the crops per micro-batch: a crop's masks are its own. */
    uint64_t dropout_seed;
    int64_t dropout_first;
    int dropout_stride;   /* 0 counts as 1 */
};

/* Builds the model of `spec` on `be` for micro-batches up to `capacity`
 * tiles of height x width, parameters initialised from `seed` (PyTorch's
 * default distributions).  *out: tt_model_destroy(). */
tt_status tt_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                          int width, uint64_t seed, tt_model **out);
/* NULL is allowed. */
void tt_model_destroy(tt_model *model);

static inline tt_status tt_model_refused(const tt_model *m, const char *what)
{
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "model %s was loaded for prediction and has no "
                        "gradients: create it for training to run %s", m->spec.kind, what);
}
static inline tt_status tt_model_forward(tt_model *m, int batch, int training)
{
    if (training && m->spec.predict_only) return tt_model_refused(m, "a training forward");
    return m->ops->forward(m, batch, training);
}
static inline tt_status tt_model_backward(tt_model *m)
{
    if (m->spec.predict_only) return tt_model_refused(m, "backward");
    return m->ops->backward(m);
}
/* Floating-point operations of one image's forward (its convolutions;
 * norms, pools and activations are a few percent and left out). */
static inline double tt_model_flops_per_image(const tt_model *m) { return m->flops_per_image; }
/* Zeroes the gradient arena: the start of an accumulation window. */
tt_status tt_model_zero_grads(tt_model *model);
/* The device place of tensor `index` of model->params: trainable ones in
 * the parameter arena, running statistics in the state arena. */
tt_mem tt_model_param(const tt_model *model, int index);
tt_mem tt_model_grad(const tt_model *model, int index);
/* Host copies of the arenas (trainable_floats and state_floats floats);
 * either pointer may be NULL. */
tt_status tt_model_get_params(tt_model *model, float *trainable, float *state);
tt_status tt_model_set_params(tt_model *model, const float *trainable, const float *state);

#endif
