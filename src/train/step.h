/*
 * The device half of one accumulation window: a model, its optimizer, the
 * labels and the loss blocks on one backend, and the calls a window makes
 * in order:
 *
 *   tt_step_begin                 zero the gradients and the loss sums
 *   with a term reduced over the window (tt_loss_spec_two_pass):
 *     for each micro-batch:
 *       tt_step_upload            images and labels to the device
 *       tt_step_window_sums       forward only: the term's sums
 *     tt_step_window_finish       the window's sums (over the ranks too)
 *   for each micro-batch:
 *     tt_step_upload              images and labels to the device
 *     tt_step_micro_batch         forward, loss, backward (ADDS gradients,
 *                                 each term normalised by the window's count)
 *   tt_step_losses                the window's loss sums per term
 *   tt_step_scale_grads           undo the loss scale (fp16)
 *   tt_step_update                norm, non-finite check, clip, optimizer
 *
 * The trainer (data, counters, logs), memory fitting, the memory probe and
 * bench all drive this one engine, so an estimate is of exactly what a run
 * allocates.
 */
#ifndef TT_TRAIN_STEP_H
#define TT_TRAIN_STEP_H

#include <stdint.h>

#include "data/source.h"
#include "dist/dist.h"
#include "model/model.h"
#include "ops/reduce.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/loss_spec.h"

/* Everything a step engine is built from. */
typedef struct tt_step_config {
    tt_model_spec model;
    int micro_batch;            /* the model's capacity */
    int height, width;          /* the tile */
    uint64_t seed;              /* parameter init */
    tt_mask_kind mask_kind;     /* class index or multi-label: what the loss terms take */
    int planes;                 /* label planes: classes (multi-label) or 1 */
    tt_loss_spec loss;          /* --loss: the terms and their weights (none: the
                                   mask kind's own, tt_loss_spec_parse "auto") */
    int class_weighted;         /* --class-weights given: class_weights[0..classes) */
    float class_weights[TT_LOSS_CLASSES_MAX];
    double clip_norm;           /* global gradient norm cap, 0 for none */
    tt_optimizer_request optimizer;
    /* parameter groups: with encoder_group, the encoder's tensors
     * ("encoder.*", one range of the arena) are group 0 at encoder_lr_scale
     * of the rate and the rest group 1 (the trainer freezes group 0 per
     * step: tt_recipe_freeze); else one group */
    int encoder_group;
    double encoder_lr_scale;
    /* data parallel: the job (borrowed; NULL alone): the ranks agree on the
     * global norm and the non-finite count before clipping and skipping */
    const tt_dist *dist;
    /* --sync-bn: batch norm's sums over this job's ranks (borrowed; alone
     * the same host arithmetic); NULL: each micro-batch its own */
    const tt_dist *norm_dist;
    /* --ema: an exponential moving average of the trainable weights,
     * ema = decay * ema + (1 - decay) * weights after each update (0: none) */
    double ema_decay;
} tt_step_config;

typedef struct tt_step {
    tt_backend *be;
    tt_step_config config;
    tt_model *model;
    tt_optimizer *optimizer;
    tt_buffer *labels;        /* (micro_batch, planes, H, W) uint8 */
    tt_buffer *loss_blocks;   /* (loss.count) tt_loss_value: one per term */
    tt_buffer *class_weights; /* (classes) floats with config.class_weighted, else NULL */
    /* terms reduced over the window: per term (classes, 3) sums, one uint32
     * of invalid targets, (classes, 2) stats; NULL without such a term */
    tt_buffer *window_sums;
    int window_ready;         /* tt_step_window_finish ran for this window */
    tt_buffer *reduce_block;  /* float sum of squares, uint32 non-finite count */
    const tt_dist *dist;      /* config.dist */
    tt_norm_sync norm_sync;   /* with config.norm_dist: the model's batch norm sums */
    tt_buffer *ema;           /* with config.ema_decay: (trainable floats), NULL otherwise */
    int ema_in_use;           /* the model's weights are the average's (tt_step_use_ema) */
} tt_step;

/* What tt_step_update did. */
typedef struct tt_update_result {
    double grad_norm;   /* global, before clipping */
    uint32_t nonfinite; /* gradient values that were NaN or infinite */
    int skipped;        /* non-finite: no update, weights unchanged */
    double lr;          /* the rate applied (0 when skipped) */
} tt_update_result;

/* Builds the model, the optimizer state (and its parameter groups) and the
 * step's buffers on `be`, whole: nothing is set on it from outside after.
 * *out: tt_step_destroy(). */
tt_status tt_step_create(tt_backend *be, const tt_step_config *config, tt_step **out);
/* NULL is allowed. */
void tt_step_destroy(tt_step *step);

/* A fresh window: gradients and loss sums zeroed. */
tt_status tt_step_begin(tt_step *step);
/* n images (n, in_channels, H, W) floats and their labels (n, planes, H, W)
 * bytes into the device. */
tt_status tt_step_upload(tt_step *step, const float *images, const uint8_t *labels, int n);
/* Two-pass windows, pass 1: the forward of the n images uploaded (the
 * model's running statistics and counters left as they were), adding
 * their sums to each term reduced over the window. */
tt_status tt_step_window_sums(tt_step *step, int n);
/* Two-pass windows, between the passes: each such term's sums summed over
 * the job's ranks (dist NULL: alone), its loss into its block and its
 * scores ready for the backward. */
tt_status tt_step_window_finish(tt_step *step, const tt_dist *dist);
/* Forward, loss and backward of the n images uploaded; each term's block
 * collects its sums, and its gradient is added times weight / (its count
 * in `window`: the whole window's, over every rank) times loss_scale
 * (dynamic loss scaling, train/loss_scale.h; 1 for none).  window NULL:
 * every count 1, and a term reduced over the window takes this batch
 * alone (the memory probe, bench). */
tt_status tt_step_micro_batch(tt_step *step, int n, const tt_loss_counts *window,
                              float loss_scale);
/* The window's sums, one block per term of config.loss (values[0..count)). */
tt_status tt_step_losses(tt_step *step, tt_loss_value values[TT_LOSS_TERMS_MAX]);
/* Multiplies the gradient arena by `scale`. */
tt_status tt_step_scale_grads(tt_step *step, double scale);
/* The end of a window whose gradients are normalised: the global norm and
 * a non-finite check reduced on the device, clipping, then one optimizer
 * update at the schedule's rate for update optimizer->updates + 1, and the
 * moving average's (--ema).  Non-finite gradients skip the update (and the
 * average's).  Waits for the device. */
tt_status tt_step_update(tt_step *step, const tt_schedule *schedule, double base_lr,
                         tt_update_result *out);

/* --ema: the average set to the weights (at the start, after --init). */
tt_status tt_step_ema_reset(tt_step *step);
/* --ema: on, the model runs with the average's weights (its own kept in
 * the gradient arena, free between windows); off, its own back.  Nothing
 * without an average. */
tt_status tt_step_use_ema(tt_step *step, int on);

#endif
