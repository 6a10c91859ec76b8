/*
 * Learning-rate schedules, on the host.  A schedule is a pure function of the
 * OPTIMIZER step count t (1-based: t = 1 for the first update), never of the
 * micro-batch count: with gradient accumulation the trainer passes the number
 * of optimizer steps, so N micro-batches of B follow the same curve as one
 * batch of N*B.  The rate of step t is
 *
 *   warmup (any kind), t <= W:  lr = base * t / W
 *   after it, k = t - W:
 *     constant:  lr = base
 *     cosine:    lr = min_lr + (base - min_lr) * (1 + cos(pi * p)) / 2,
 *                p = min(1, k / (T - W)); T = total steps, so t = T gets
 *                min_lr and later steps stay there
 *     step:      lr = base * gamma^floor((k - 1) / K); every K steps
 *
 * The cosine is transformers' get_cosine_schedule_with_warmup (num_cycles
 * 0.5) evaluated at its 0-based step index t, plus a floor min_lr: so the
 * first update does not run at rate 0.  With W = 0, step decay is torch's
 * StepLR(step_size=K, gamma) at epoch t - 1.
 */
#ifndef TT_OPTIM_SCHEDULE_H
#define TT_OPTIM_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

typedef enum tt_schedule_kind {
    TT_SCHEDULE_CONSTANT,
    TT_SCHEDULE_COSINE,
    TT_SCHEDULE_STEP,
} tt_schedule_kind;

typedef struct tt_schedule {
    tt_schedule_kind kind;
    int64_t warmup_steps; /* W >= 0, linear warmup from base/W to base */
    int64_t total_steps;  /* cosine: T > W, where min_lr is reached */
    double min_lr;        /* cosine: the floor, absolute, >= 0 */
    int64_t step_every;   /* step: K >= 1 */
    double gamma;         /* step: factor per K steps, > 0 */
} tt_schedule;

/* A constant rate, no warmup. */
tt_schedule tt_schedule_constant(void);

/* The rate of optimizer step `step` (1-based; values below 1 count as 1) for
 * base rate base_lr.  The schedule must have passed tt_schedule_check(). */
double tt_schedule_lr(const tt_schedule *schedule, double base_lr, int64_t step);

/* NULL when the fields are consistent, else TT_ERR_INVALID_ARGUMENT naming
 * the field. */
tt_status tt_schedule_check(const tt_schedule *schedule);

/* Parses "KIND[:key=value,...]":
 *   constant[:warmup=W]
 *   cosine:total=T[,warmup=W][,min_lr=X]
 *   step:every=K[,gamma=G][,warmup=W]        (gamma defaults to 0.1)
 * Unknown kinds or keys, missing '=', malformed or out-of-range numbers,
 * repeated keys and missing required keys are TT_ERR_FORMAT errors that
 * quote the text and show a valid example.  *out is written only on success. */
tt_status tt_schedule_parse(const char *text, tt_schedule *out);

/* Writes the text form that tt_schedule_parse() reads back to the same
 * schedule (for logs and checkpoint metadata).  Returns what snprintf does. */
int tt_schedule_format(const tt_schedule *schedule, char *buf, size_t size);

#endif
