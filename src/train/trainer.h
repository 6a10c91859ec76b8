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
#include "data/raster_holdout.h"
#include "data/raster_sampler.h"
#include "data/sampler.h"
#include "data/tilecache.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/metrics.h"
#include "train/recipe.h"
#include "train/step.h"
#include "train/train_options.h"

typedef struct tt_step_report {
    int64_t step;             /* optimizer steps taken so far (this one included) */
    double loss;              /* normalised over the window */
    double term_loss[TT_LOSS_TERMS_MAX]; /* each --loss term's, unweighted */
    int terms;
    double lr;
    double grad_norm;         /* before clipping */
    int skipped;              /* non-finite gradients: no update */
    double loss_scale;        /* the window's dynamic loss scale (0: none; loss_scale.h) */
    int64_t images;           /* images in the window (of every rank) */
    int64_t valid_items;      /* the normaliser */
    double seconds;           /* wall time of the window */
    double data_wait_seconds; /* time the device side waited for batches */
    uint64_t peak_bytes;      /* device memory peak so far (this rank's) */
    double sum_seconds;       /* data parallel: summing the gradients over the ranks */
} tt_step_report;

typedef struct tt_trainer {
    tt_train_options opt;
    char precision_reason[320]; /* --precision auto: what was chosen and why; "" otherwise */
    tt_backend *be;
    tt_dataset *dataset;
    tt_item_source source;
    tt_tilecache *cache;      /* owned by the prefetch thread once it runs */
    tt_tilecache *val_cache;  /* the validation split's own (a cache serves one thread) */
    tt_sampler *sampler;
    tt_prefetch *prefetch;
    int *train_items, train_count, *val_items, val_count;
    tt_raster_set *rasters;   /* a raster data set instead of dataset (then no cache, sampler) */
    tt_raster_sampler *raster_sampler; /* its crops; owned by the prefetch thread once it runs */
    tt_band_norm bands;       /* its bands and their normalisation (count 0: RGB) */
    tt_raster_holdout holdout; /* --val-fraction on rasters: the held-out scenes or blocks
                                  (val_count: their count) */

    tt_model_spec model;      /* what the options and the data set describe */
    tt_mask_kind mask_kind;
    int normalize;            /* --mean / --std given */
    float mean[3], std[3];    /* of pixels / 255 */
    tt_augment_config augment; /* the training crops' (unless --no-augment) */
    tt_step *engine;          /* the device half: model, optimizer, labels, loss blocks */
    tt_dist dist;             /* this rank in the job: rank 0 of 1 alone */
    tt_data_parallel *dp;     /* the cross-rank half; NULL alone */
    tt_schedule schedule;

    int64_t max_steps;        /* the run's length in windows */
    int finished;             /* the data of a finite run (--epochs) ran out (on every rank) */
    int data_done;            /* this rank's share of it ran out */
    tt_train_counters counters; /* step, micro-batches, images, skipped, data position */
    int log_fd;               /* OUT/train.jsonl, appended a whole line at a time (-1 without --out) */
    char log_path[TT_OPT_STRING_MAX + 32];
    tt_status log_failed;     /* the first append that failed: the run stops with it */
    FILE *log_echo;           /* stdout with --log-format jsonl, else NULL */
    void (*on_log_line)(void *ctx, const char *line); /* the recipe's log sink, or NULL */
    void *log_ctx;
    char *log_pending;        /* the line so far (a line is logged in pieces) */
    size_t log_pending_length, log_pending_capacity;
    /* set by the caller (e.g. on Ctrl-C): the window stops after its current
     * micro-batch (data parallel: at its end, on every rank) and is undone,
     * so a checkpoint then resumes at its start */
    volatile int *interrupt;
    int interrupted;          /* a window was stopped that way */
    int stopped_together;     /* data parallel: an error every rank returned at once (no abort needed) */
    /* called after each micro-batch (may be NULL): m of accum done */
    void (*on_micro_batch)(void *ctx, int m, int accum);
    void *progress_ctx;
    int stopped_early;        /* --patience validations without a better mean Dice */
    /* the post-processing search of the last validation: per class (NULL
     * before one), into the checkpoints' metadata for predict and eval */
    tt_pp_choice *postprocess;
} tt_trainer;

/* The trainer of a resolved recipe (tt_recipe_resolve) as rank dist->rank
 * of a data-parallel job (dist NULL: alone): takes the recipe's data set
 * and backend (NULL in it after), builds the tile caches, split, sampler,
 * step engine and optimizer, and with --init or --resume restores weights
 * or the whole state.  Every rank calls every tt_trainer_* function below
 * in the same order; only rank 0 writes files and logs (validation runs
 * there too).  *out: tt_trainer_destroy(). */
tt_status tt_trainer_create_ranked(tt_recipe *recipe, const tt_dist *dist, tt_trainer **out);
/* Alone, from options taken as they are (nothing given, as --plan off
 * unless opt->plan says otherwise): resolved, then created. */
tt_status tt_trainer_create(const tt_train_options *opt, tt_trainer **out);
void tt_trainer_destroy(tt_trainer *trainer);

/* Runs one window and one optimizer step.  When a finite run's data has
 * ended before the window began, sets trainer->finished and returns NULL
 * with report->images == 0.  Data parallel: each rank runs its share of the
 * window, then the sums, counts and gradients of every rank make one
 * update; an interrupt on any rank drops the window on all (at its end). */
tt_status tt_trainer_step(tt_trainer *trainer, tt_step_report *report);

/* Predicts the validation split at full resolution and scores it; logs a
 * line to OUT/train.jsonl, keeps OUT/best.safetensors by mean Dice (and
 * with --keep-best K the K best as OUT/best-step<N>.safetensors), and sets
 * trainer->stopped_early after --patience validations without a better
 * one.
 * *out (may be NULL): the metrics, tt_metrics_destroy().  Nothing is done
 * (and *out is NULL) without a validation split. */
tt_status tt_trainer_validate(tt_trainer *trainer, tt_metrics **out);

/* Writes a checkpoint (weights, optimizer state, counters, data position,
 * what prediction needs of the data) atomically to `path`. */
tt_status tt_trainer_save(tt_trainer *trainer, const char *path);

#endif
