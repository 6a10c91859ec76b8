/*
 * Dynamic loss scaling, PyTorch GradScaler's rule: the loss's gradient is
 * multiplied by a scale before the backward, so that small gradients that
 * pass through 16-bit storage keep their digits instead of flushing to
 * zero; the summed gradients are divided by it again before the optimizer.
 * Once per accumulation window, with one scale inside the window: a window
 * whose gradients hold an infinity or a NaN is skipped (weights and
 * optimizer state unchanged) and the scale halved; after `interval`
 * clean windows in a row (GradScaler's growth_interval, 2000 unless
 * --loss-scale-interval says) it is doubled.  Powers of
 * two only, so scaling and unscaling an fp32 gradient are exact.
 *
 * On by default with fp16 storage (`--loss-scale auto`), where a value past
 * 65504 becomes infinite; bf16 has fp32's range and needs none.  Its state
 * (the scale and the clean windows since it last changed) is part of the
 * run's counters: logged per step in train.jsonl, in the report and in
 * every checkpoint, so a resumed run scales as the uninterrupted one.
 */
#ifndef TT_TRAIN_LOSS_SCALE_H
#define TT_TRAIN_LOSS_SCALE_H

#include <stdint.h>

#include "core/precision.h"
#include "core/status.h"

#define TT_LOSS_SCALE_INIT 65536.0 /* 2^16, GradScaler's init_scale */
#define TT_LOSS_SCALE_INTERVAL 2000 /* clean windows before the scale doubles, by default */
#define TT_LOSS_SCALE_MIN 0x1p-126 /* never below fp32's smallest normal */
#define TT_LOSS_SCALE_MAX 0x1p127  /* fp32's largest power of two */

typedef struct tt_loss_scale {
    double scale;       /* 0: no loss scaling */
    int64_t clean;      /* clean windows in a row since the scale last changed */
    int64_t interval;   /* clean windows before it doubles (0: TT_LOSS_SCALE_INTERVAL) */
} tt_loss_scale;

/* The scaler a run starts with, from --loss-scale ("auto": 65536 with fp16
 * storage, none otherwise; "off"; or a power of two, the initial scale)
 * and the precision the run stores in.  A bad text is an error naming the
 * flag. */
tt_status tt_loss_scale_start(const char *text, tt_precision precision, tt_loss_scale *out);

/* The window's end: `nonfinite` says its gradients held an infinity or a
 * NaN.  Returns 1 when the scale changed (halved, or doubled after
 * `interval` clean windows).  No scaling: nothing changes. */
int tt_loss_scale_update(tt_loss_scale *s, int nonfinite);

/* The factor the loss's gradient is multiplied by this window (1 without
 * scaling). */
static inline double tt_loss_scale_factor(const tt_loss_scale *s)
{
    return s->scale > 0 ? s->scale : 1.0;
}

#endif
