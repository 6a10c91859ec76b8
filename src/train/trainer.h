/*
 * The training loop with gradient accumulation.
 *
 * One optimizer step is one window of `accum` micro-batches: the gradient
 * arena is zeroed, every micro-batch runs forward, loss and backward (which
 * ADDS into the arena), then the gradients are scaled by 1 / (valid items
 * of the whole window), checked for non-finite values, optionally clipped
 * by global norm, and the optimizer runs once.  N micro-batches of B thus
 * give the update of one batch of N*B.  A short window (the data ran out)
 * is normalised by its own count.
 *
 * Valid items: non-ignored pixels (softmax cross-entropy, folder data),
 * pixels x classes (BCE, kaggle-rle data); the optional Dice term is
 * normalised by the images of the window.
 */
#ifndef TT_TRAIN_TRAINER_H
#define TT_TRAIN_TRAINER_H

#include <stdio.h>

#include "data/dataset.h"
#include "data/prefetch.h"
#include "data/sampler.h"
#include "data/tilecache.h"
#include "model/unet.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/metrics.h"
#include "train/train_options.h"

typedef struct tt_step_report {
    int64_t step;             /* optimizer steps taken so far (this one included) */
    double loss;              /* normalised over the window */
    double lr;
    double grad_norm;         /* before clipping */
    int skipped;              /* non-finite gradients: no update */
    int64_t images;           /* images in the window */
    int64_t valid_items;      /* the normaliser */
    double seconds;           /* wall time of the window */
    double data_wait_seconds; /* time the device side waited for batches */
    uint64_t peak_bytes;      /* device memory peak so far */
} tt_step_report;

typedef struct tt_trainer {
    tt_train_options opt;
    tt_backend *be;
    tt_dataset *dataset;
    tt_item_source source;
    tt_tilecache *cache;      /* owned by the prefetch thread once it runs */
    tt_tilecache *val_cache;  /* the validation split's own (a cache serves one thread) */
    tt_sampler *sampler;
    tt_prefetch *prefetch;
    int *train_items, train_count, *val_items, val_count;

    tt_unet *unet;
    tt_unet_config model;
    tt_mask_kind mask_kind;
    int normalize;            /* --mean / --std given */
    float mean[3], std[3];    /* of pixels / 255 */
    tt_buffer *labels;        /* (B, planes, H, W) uint8 */
    tt_buffer *loss_blocks;   /* [0] primary loss, [1] Dice */
    tt_buffer *reduce_block;  /* float sum of squares, uint32 non-finite count */
    tt_buffer *moment1;       /* AdamW exp_avg or SGD momentum buffer */
    tt_buffer *moment2;       /* AdamW exp_avg_sq */
    tt_adamw_config adamw;
    tt_sgd_config sgd;
    int use_sgd;
    tt_schedule schedule;

    int64_t max_steps;        /* the run's length in windows */
    int finished;             /* the data of a finite run (--epochs) ran out */
    int64_t step;             /* windows done */
    int64_t updates;          /* optimizer updates done (skipped steps excluded) */
    int64_t micro_batches;
    int64_t images_seen;      /* crops trained on, over the whole run */
    int64_t skipped_steps;
    tt_sampler_state sampler_state; /* after the last batch used */
    FILE *log;                /* OUT/train.jsonl (NULL without --out) */
    FILE *log_echo;           /* stdout with --log-format jsonl, else NULL */
    /* set by the caller (e.g. on Ctrl-C): the window stops after its current
     * micro-batch and is undone, so a checkpoint then resumes at its start */
    volatile int *interrupt;
    int interrupted;          /* a window was stopped that way */
    /* called after each micro-batch (may be NULL): m of accum done */
    void (*on_micro_batch)(void *ctx, int m, int accum);
    void *progress_ctx;
    double best_mean_dice;    /* of validations so far; -1 before the first */
} tt_trainer;

/* Opens the data, the device, the model and the optimizer as the options
 * say; with opt->resume, restores everything from the checkpoint.
 * *out: tt_trainer_destroy(). */
tt_status tt_trainer_create(const tt_train_options *opt, tt_trainer **out);
void tt_trainer_destroy(tt_trainer *trainer);

/* Runs one window and one optimizer step.  When a finite run's data has
 * ended before the window began, sets trainer->finished and returns NULL
 * with report->images == 0. */
tt_status tt_trainer_step(tt_trainer *trainer, tt_step_report *report);

/* Predicts the validation split at full resolution and scores it; logs a
 * line to OUT/train.jsonl and keeps OUT/best.safetensors by mean Dice.
 * *out (may be NULL): the metrics, tt_metrics_destroy().  Nothing is done
 * (and *out is NULL) without a validation split. */
tt_status tt_trainer_validate(tt_trainer *trainer, tt_metrics **out);

/* Allocates what a run of these options keeps on `be`, runs the device
 * side of one window (two micro-batches at most: a third changes nothing)
 * and the update on zeros, frees it all and gives the peaks per category in
 * *out (live list cleared).  On a dry backend (tt_backend_create_dry) this
 * is the estimate before a run; on a real one, the measurement. */
tt_status tt_trainer_memory_probe(tt_backend *be, const tt_train_options *opt,
                                  const tt_unet_config *model, tt_mask_kind kind, int planes,
                                  tt_memstats *out);

typedef struct tt_bench_result {
    double seconds;          /* the timed windows, wall clock */
    double images;           /* images trained on in them */
    double flops_per_image;  /* of a training step: 3 x the forward convolutions */
    uint64_t peak_bytes;
} tt_bench_result;

/* Times `steps` whole optimizer steps (after `warmup`) of the options'
 * micro-batch and accum on random images with random multi-label targets
 * (BCE), as python/tiletrain_torch.py bench does; no data pipeline.  With
 * a profiling backend, backend->profile holds the device time per kind of
 * work of the timed steps. */
tt_status tt_trainer_bench(tt_backend *be, const tt_train_options *opt, const tt_unet_config *model,
                           int warmup, int steps, tt_bench_result *out);

/* Writes a checkpoint (weights, optimizer state, counters, data position,
 * config) atomically to `path`. */
/* One line of the run's log (JSON Lines: train.jsonl, and stdout with
 * --log-format jsonl), printf-style; nothing when there is no log. */
void tt_trainer_log(tt_trainer *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

tt_status tt_trainer_save(tt_trainer *trainer, const char *path);

#endif
