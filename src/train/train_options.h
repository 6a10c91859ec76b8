/*
 * Everything `tiletrain train` can be told, with its defaults, as one
 * struct described by one option table (core/options.h): the same names
 * work as flags and as keys of a --config file.
 */
#ifndef TT_TRAIN_OPTIONS_H
#define TT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "core/options.h"

typedef struct tt_train_options {
    /* data */
    char data[TT_OPT_STRING_MAX];
    char format[TT_OPT_STRING_MAX];        /* auto | folder | kaggle-rle */
    char csv[TT_OPT_STRING_MAX];
    char images[TT_OPT_STRING_MAX];
    char cache_dir[TT_OPT_STRING_MAX];
    int tile[2];                           /* H, W */
    double fg_fraction;
    double val_fraction;
    char val_list[TT_OPT_STRING_MAX];      /* file of validation image names */
    int no_shuffle, no_augment, skip_bad;
    double max_pixels;
    char mean[TT_OPT_STRING_MAX];          /* "r,g,b" of pixels / 255, or "" */
    char std[TT_OPT_STRING_MAX];
    /* model */
    char model[TT_OPT_STRING_MAX];         /* unet | unet-resnet18 | unet-resnet34 */
    int freeze_encoder_bn;                 /* unet-resnet*: FrozenBatchNorm2d in the encoder */
    int freeze_bn;                         /* unet-resnet*: and in the decoder */
    char encoder_lr[TT_OPT_STRING_MAX];    /* "X" or "Rx" (a ratio of --lr) */
    int freeze_encoder_steps;              /* encoder weights not updated for K steps */
    int classes;                           /* 0: from the data set */
    int base_channels, depth, groups;
    char norm[TT_OPT_STRING_MAX];          /* group | batch | none */
    double dice_weight;                    /* kaggle-rle: BCE + weight * Dice */
    /* schedule of work */
    int steps, micro_batch, accum;         /* micro_batch 0: auto (fit --mem-limit) */
    int batch;                             /* with --micro-batch auto: the effective batch */
    uint64_t mem_limit;                    /* bytes; 0: the device's memory less a margin */
    int checkpointing;                     /* recompute block insides in backward */
    int epochs;                            /* > 0: a finite run of this many passes */
    /* optimizer */
    char optimizer[TT_OPT_STRING_MAX];     /* adamw | sgd */
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
    char backend[TT_OPT_STRING_MAX];       /* opencl | vulkan */
    char algo[TT_OPT_STRING_MAX];          /* convolution algorithm: auto | im2col_gemm | ... */
    char precision[TT_OPT_STRING_MAX];     /* storage of what backward reads: fp32 | fp16 | bf16 */
    char loss_scale[TT_OPT_STRING_MAX];    /* auto | off | a power of two (train/loss_scale.h) */
    char plan[TT_OPT_STRING_MAX];          /* train: off | auto | a plan.json (train/run_plan.h) */
    char out[TT_OPT_STRING_MAX];
    char init[TT_OPT_STRING_MAX];
    char init_prefix[TT_OPT_STRING_MAX];   /* put before the file's names (e.g. "encoder.") */
    char resume[TT_OPT_STRING_MAX];
    char save_grads[TT_OPT_STRING_MAX];
    int checkpoint_every;
    int val_every;                         /* steps between validations (0: at the end only) */
    double threshold;                      /* multi-label: probability for "in the mask" */
    double val_overlap;                    /* validation's sliding-window overlap */
    int min_size;                          /* validation: drop smaller components (multi-label) */
    int quiet;
    char log_format[TT_OPT_STRING_MAX];    /* text | jsonl */
    int sync_bn;                           /* mpirun: batch norm statistics over every rank */
    int check_weights_every;               /* mpirun: steps between cross-rank weight checks */
    /* not an option: set by `tiletrain bench --data` */
    int profile;                           /* a profiling backend (device time per kind) */
    /* not an option: set by train when a flag resizes a planned network */
    int micro_batch_cap;                   /* with --micro-batch auto: at most this many (0: --batch) */
} tt_train_options;

extern const tt_opt tt_train_option_table[];
extern const size_t tt_train_option_count;

void tt_train_options_default(tt_train_options *o);

#endif
