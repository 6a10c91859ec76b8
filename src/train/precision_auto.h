/*
 * --precision auto: which storage a run keeps its activations in
 * (core/precision.h), chosen on the device at the start of the run.  Each
 * mode the model offers (fp32 always; fp16 and bf16 where the model stores
 * 16 bits) is timed on whole optimizer steps of the run's configuration
 * (probe.h's bench, alternating, best of two), and each 16-bit mode's
 * gradients of one fixed micro-batch are compared with fp32's (relative L2
 * error under TT_PRECISION_PARITY).  The fastest mode that passes wins, a
 * 16-bit one only when it is at least 5% faster than fp32 (as Leela Zero's
 * auto mode); else fp32.  The choice is kept in the cache's precision-db
 * per device and configuration, as the convolution find-db keeps
 * algorithms, and a later run takes it from there.
 */
#ifndef TT_TRAIN_PRECISION_AUTO_H
#define TT_TRAIN_PRECISION_AUTO_H

#include "train/step.h"

/* Largest relative L2 error of a 16-bit mode's gradients against fp32's
 * that passes the parity check, either format: the update's direction
 * within about half a degree of fp32's.  A 16-bit forward is a slightly
 * different function, and at initialisation on random data the gradients
 * of the UNet move by up to 3.3e-2 (fp16) and 1.3e-1 (bf16; with batch
 * norm, test_unet "16-bit storage" and `train --precision auto`); a device
 * that stores or loads halves wrongly gives errors of order 1.  The check
 * is for that, as Leela Zero's self-check is. */
#define TT_PRECISION_PARITY 0.15

typedef struct tt_precision_trial {
    tt_precision precision;
    double images_per_second;  /* of the timed steps */
    double grad_error;         /* relative L2 against fp32's; 0 for fp32 */
    int passed;                /* parity within its bound (fp32: 1) */
} tt_precision_trial;

typedef struct tt_precision_choice {
    tt_precision chosen;
    int from_cache;            /* taken from the precision-db, nothing timed */
    tt_precision_trial trials[3];
    int trial_count;
    char reason[320];          /* one line for people and train.jsonl */
} tt_precision_choice;

/* Resolves config->model.precision when it is TT_PRECISION_AUTO (otherwise
 * says so in *out and changes nothing): from the precision-db, or by timing
 * and the parity check on `be`; config->model.precision becomes the choice.
 * The engines it builds are freed before it returns.  A cache that cannot
 * be read or written costs the timing, never the run. */
tt_status tt_precision_auto(tt_backend *be, tt_step_config *config, tt_precision_choice *out);

/* The parity check alone: the relative L2 error of config's gradients of
 * the fixed micro-batch in `precision` against fp32's, on `be` (0 for
 * fp32); passes within TT_PRECISION_PARITY. */
tt_status tt_precision_parity(tt_backend *be, const tt_step_config *config,
                              tt_precision precision, double *error);

#endif
