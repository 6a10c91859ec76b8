/*
 * The cross-rank half of a data-parallel run (`mpirun -np K tiletrain
 * train`): every rank trains its share of each window on its own device,
 * then
 *   - the window's loss sums, valid-item counts and images are summed over
 *     the ranks, so the loss is normalised by the valid items of the whole
 *     global window (not a mean of per-rank means);
 *   - the gradient arena is summed over the ranks through one host staging
 *     buffer allocated once (MPI takes no device buffers);
 *   - every rank applies the same update, and every K steps a checksum of
 *     the weights is compared across ranks: a difference stops the run.
 * A failure on one rank (a bad image, memory, a device error) reaches every
 * rank at the window's end, which all stop naming the rank and its cause;
 * a rank that dies outright is mpirun's to report (it stops the others).
 *
 * In a world of one none of this runs and nothing is allocated.
 */
#ifndef TT_TRAIN_DATA_PARALLEL_H
#define TT_TRAIN_DATA_PARALLEL_H

#include "dist/dist.h"
#include "ops/norm.h"
#include "train/step.h"
#include "train/train_options.h"

#define TT_DP_MAX_SUMS 16

typedef struct tt_data_parallel {
    tt_dist dist;
    tt_step *engine;            /* borrowed */
    float *staging;             /* (trainable floats): the gradient arena's host copy */
    double sum_seconds;         /* the last gradient sum, staging copies included */
} tt_data_parallel;

/* Picks this rank's device: the local rank's entry of a comma-separated
 * --device list, or without one, the backend's GPUs (else its devices) in
 * turn; rewrites o->device (and o->backend to the API chosen).  A world of
 * one leaves the options as they are (a list is an error there). */
tt_status tt_dp_pick_device(const tt_dist *dist, tt_train_options *o);

/* The cross-rank state of `engine`; *out is NULL in a world of one. */
tt_status tt_dp_create(const tt_dist *dist, tt_step *engine, tt_data_parallel **out);

void tt_dp_destroy(tt_data_parallel *dp);

/* values[0..n) (n <= TT_DP_MAX_SUMS) summed over the ranks, with this
 * rank's outcome of the window: when any rank failed, every rank returns an error naming the
 * first failed rank and its message (the failed rank's own error is
 * returned there; `mine` is consumed either way). */
tt_status tt_dp_sum_window(const tt_dist *dist, double *values, size_t n, tt_status mine);

/* The gradient arena summed over the ranks (device -> host -> MPI -> device). */
tt_status tt_dp_sum_grads(tt_data_parallel *dp);

/* Compares a checksum of the weights across the ranks; a difference is an
 * error naming the ranks whose weights differ from rank 0's at `step`. */
tt_status tt_dp_check_weights(tt_data_parallel *dp, int64_t step);

/* Per-rank batch norm: running statistics replaced by their mean over the
 * ranks (at checkpoints, so every rank and the file hold the same). */
tt_status tt_dp_average_running_stats(tt_data_parallel *dp);

#endif
