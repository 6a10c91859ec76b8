/*
 * Everything `tiletrain train` can be told, with its defaults, as one
 * typed struct described by one option table (core/options.h): the same
 * names work as flags and as keys of a --config file, and --help prints
 * each default from tt_train_options_default's struct.  Choices are enums
 * in the order of their names in the table.
 */
#ifndef TT_TRAIN_OPTIONS_H
#define TT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "core/options.h"
#include "core/precision.h"
#include "data/dataset.h"
#include "infer/predict.h"
#include "ops/conv_algo.h"
#include "ops/norm.h"

/* --model: an index into TT_MODEL_CHOICES (model.c's kinds: the plain
 * unet, or a decoder over an encoder) */
typedef enum tt_model_choice { TT_MODEL_UNET } tt_model_choice;
#define TT_MODEL_CHOICES \
    "unet|unet-resnet18|unet-resnet34|unet-resnet50|unet-resnext50_32x4d|unet-efficientnet-b0|" \
    "unet-efficientnet-b1|unet-efficientnet-b2|unet-efficientnet-b3|unet-efficientnet-b4|" \
    "fpn-resnet18|fpn-resnet34|fpn-resnet50|fpn-resnext50_32x4d|fpn-efficientnet-b0|" \
    "fpn-efficientnet-b1|fpn-efficientnet-b2|fpn-efficientnet-b3|fpn-efficientnet-b4|" \
    "linknet-resnet18|linknet-resnet34|linknet-resnet50|linknet-resnext50_32x4d|" \
    "linknet-efficientnet-b0|linknet-efficientnet-b1|linknet-efficientnet-b2|" \
    "linknet-efficientnet-b3|linknet-efficientnet-b4|deeplabv3plus-resnet18|" \
    "deeplabv3plus-resnet34|deeplabv3plus-resnet50|deeplabv3plus-resnext50_32x4d|" \
    "deeplabv3plus-efficientnet-b0|deeplabv3plus-efficientnet-b1|" \
    "deeplabv3plus-efficientnet-b2|deeplabv3plus-efficientnet-b3|deeplabv3plus-efficientnet-b4"

/* --optimizer */
typedef enum tt_optimizer_choice { TT_OPTIMIZER_ADAMW, TT_OPTIMIZER_SGD } tt_optimizer_choice;
#define TT_OPTIMIZER_CHOICES "adamw|sgd"

/* --backend (TT_BACKEND_CHOICES's order) */
typedef enum tt_backend_choice {
    TT_BACKEND_CHOICE_AUTO,
    TT_BACKEND_CHOICE_OPENCL,
    TT_BACKEND_CHOICE_VULKAN,
} tt_backend_choice;

/* --log-format */
typedef enum tt_log_format { TT_LOG_TEXT, TT_LOG_JSONL } tt_log_format;
#define TT_LOG_FORMAT_CHOICES "text|jsonl"

/* --norm: tt_norm_kind's order */
#define TT_NORM_CHOICES "none|group|batch"
/* --format: tt_dataset_format's order */
#define TT_DATASET_FORMAT_CHOICES "auto|folder|kaggle-rle|raster"

typedef struct tt_train_options {
    /* data */
    char data[TT_OPT_STRING_MAX];
    tt_dataset_format format;
    char csv[TT_OPT_STRING_MAX];
    char images[TT_OPT_STRING_MAX];
    char cache_dir[TT_OPT_STRING_MAX];
    int tile[2];                           /* H, W */
    double fg_fraction;
    double val_fraction;
    char val_list[TT_OPT_STRING_MAX];      /* file of validation image names */
    int no_shuffle, no_augment, skip_bad;
    char augment[TT_OPT_STRING_MAX];       /* a spec (data/augment.h) */
    double max_pixels;
    float mean[3];                         /* of pixels / 255; NaN: not given */
    float std[3];
    char bands[TT_OPT_STRING_MAX];         /* raster data: the image bands, "4,3,2"; "": all */
    int mask_nodata;                       /* raster data: a mask value ignored besides 255; -1 */
    /* model */
    tt_model_choice model;
    int freeze_encoder_bn;                 /* unet-resnet*: FrozenBatchNorm2d in the encoder */
    int freeze_bn;                         /* unet-resnet*: and in the decoder */
    char encoder_lr[TT_OPT_STRING_MAX];    /* "X" or "Rx" (a ratio of --lr) */
    int freeze_encoder_steps;              /* encoder weights not updated for K steps */
    double drop_path;                      /* EfficientNet encoders' stochastic depth */
    int classes;                           /* 0: from the data set */
    int base_channels, depth, groups;
    tt_norm_kind norm;
    char loss[TT_OPT_STRING_MAX];          /* --loss: auto or terms (train/loss_spec.h) */
    char class_weights[TT_OPT_STRING_MAX]; /* --class-weights: "" or one per class */
    /* schedule of work */
    int steps, micro_batch, accum;         /* micro_batch 0: auto (fit --mem-limit) */
    int batch;                             /* with --micro-batch auto: the effective batch */
    uint64_t mem_limit;                    /* bytes; 0: the device's memory less a margin */
    int checkpointing;                     /* recompute block insides in backward */
    int epochs;                            /* > 0: a finite run of this many passes */
    /* optimizer */
    tt_optimizer_choice optimizer;
    double lr, weight_decay, momentum;
    int nesterov;
    char schedule[TT_OPT_STRING_MAX];      /* constant | cosine | step, or the full form */
    int warmup;
    double min_lr, gamma;
    int step_every;
    double clip_norm;                      /* 0: off */
    /* run */
    uint64_t seed;
    char device[TT_OPT_STRING_MAX];
    tt_backend_choice backend;
    tt_conv_algo algo;                     /* convolutions: auto, or one for every layer */
    tt_precision precision;                /* storage of what backward reads */
    char loss_scale[TT_OPT_STRING_MAX];    /* auto | off | a power of two (train/loss_scale.h) */
    int loss_scale_interval;               /* clean windows before the scale doubles */
    char plan[TT_OPT_STRING_MAX];          /* train: off | auto | a plan.json (train/run_plan.h) */
    char out[TT_OPT_STRING_MAX];
    char init[TT_OPT_STRING_MAX];
    char init_prefix[TT_OPT_STRING_MAX];   /* put before the file's names (e.g. "encoder.") */
    char resume[TT_OPT_STRING_MAX];
    char save_grads[TT_OPT_STRING_MAX];
    int checkpoint_every;
    int val_every;                         /* steps between validations (0: at the end only) */
    int patience;                          /* stop after K validations without a better one */
    int keep_best;                         /* keep the K best validations' checkpoints */
    double ema;                            /* decay of the weights' moving average (0: none) */
    double threshold;                      /* multi-label: probability for "in the mask" */
    double val_overlap;                    /* validation's sliding-window overlap */
    tt_tta_kind tta;                       /* validation's test-time augmentation */
    int min_size;                          /* validation: drop smaller components (multi-label) */
    int quiet;
    tt_log_format log_format;
    int sync_bn;                           /* mpirun: batch norm statistics over every rank */
    int check_weights_every;               /* mpirun: steps between cross-rank weight checks */
    /* not an option: set by `tiletrain bench --data` */
    int profile;                           /* a profiling backend (device time per kind) */
} tt_train_options;

#define TT_TRAIN_OPTION_MAX 96 /* rows of train's option table, at most (a given[] array's size) */

extern const tt_opt tt_train_option_table[];
extern const size_t tt_train_option_count;

void tt_train_options_default(tt_train_options *o);

/* The option's name of an enum value, for messages and logs: "batch". */
const char *tt_model_choice_name(tt_model_choice model);
const char *tt_optimizer_choice_name(tt_optimizer_choice optimizer);
const char *tt_backend_choice_name(tt_backend_choice backend);
/* 1 when the options' mean or std was given (normalised inputs). */
int tt_train_options_normalize(const tt_train_options *o);

#endif
