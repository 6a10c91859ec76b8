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

/* Times `steps` whole optimizer steps (after `warmup`) of `accum`
 * micro-batches on random images with random multi-label targets (BCE:
 * config's mask kind and planes are replaced), as the PyTorch peer's bench
 * mode does (python/tiletrain_torch.py); no data pipeline.  With a
 * profiling backend, backend->profile holds the device time per kind of
 * work of the timed steps. */
tt_status tt_probe_bench(tt_backend *be, const tt_step_config *config, int accum, int warmup,
                         int steps, tt_bench_result *out);

#endif
