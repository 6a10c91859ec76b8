/*
 * The step engine run outside a training loop: the memory probe (the
 * estimate on a dry backend, the measurement on a real one) and bench
 * (whole optimizer steps on random data, timed).
 */
#ifndef TT_TRAIN_PROBE_H
#define TT_TRAIN_PROBE_H

#include "core/memstats.h"
#include "train/step.h"

/* Builds the engine of `config` on `be`, runs the device side of one
 * window of `accum` micro-batches (two at most: a third changes nothing)
 * and the update on zeros, frees it all and gives the peaks per category
 * in *out (live list cleared).  On a dry backend this is the estimate
 * before a run; on a real one, the measurement. */
tt_status tt_probe_memory(tt_backend *be, const tt_step_config *config, int accum,
                          tt_memstats *out);

typedef struct tt_bench_result {
    double seconds;          /* the timed windows, wall clock */
    double images;           /* images trained on in them */
    double flops_per_image;  /* of a training step: 3 x the forward convolutions */
    uint64_t peak_bytes;
} tt_bench_result;

/* A micro-batch of random data for `config` (multi-label: `planes` 0/1
 * planes): images uniform in [0, 1), targets 0 or 1, from `seed`; both
 * malloc'd, NULL when out of host memory (the other freed). */
void tt_probe_random_batch(const tt_step_config *config, uint64_t seed, float **image,
                           uint8_t **labels);
/* *c: config as the probes run it (BCE-style multi-label targets, a plane
 * per class), and its random micro-batch from `seed` (tt_probe_random_batch);
 * TT_ERR_OUT_OF_MEMORY naming `what` when the host has no room. */
tt_status tt_probe_multi_label(const tt_step_config *config, uint64_t seed, const char *what,
                               tt_step_config *c, float **image, uint8_t **labels);

/* Times `steps` whole optimizer steps (after `warmup`) of `accum`
 * micro-batches on random images with random multi-label targets (BCE:
 * config's mask kind and planes are replaced), as the PyTorch peer's bench
 * mode does (python/tiletrain_torch.py); no data pipeline.  With a
 * profiling backend, backend->profile holds the device time per kind of
 * work of the timed steps. */
tt_status tt_probe_bench(tt_backend *be, const tt_step_config *config, int accum, int warmup,
                         int steps, tt_bench_result *out);

/* What tt_probe_overfit saw. */
typedef struct tt_overfit_result {
    double first_loss, last_loss; /* the first and the last step's (the terms' sum) */
    double seconds;               /* the steps after the first, wall clock */
    double images;                /* images trained on in them */
    int steps;
} tt_overfit_result;

/* Trains config's model for `steps` optimizer steps (one micro-batch each)
 * on one fixed micro-batch of random images whose targets follow from
 * them (multi-label: class k is set where channel k % 3 exceeds 0.5), at
 * config's learning rate or TT_OVERFIT_LR, whichever is larger (a
 * fine-tuning rate moves too little in a few steps), constant: a model and
 * device that train at all cut the loss by half within 20 steps. */
#define TT_OVERFIT_LR 1e-2
tt_status tt_probe_overfit(tt_backend *be, const tt_step_config *config, int steps,
                           tt_overfit_result *out);

#endif
