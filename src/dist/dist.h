/*
 * Data parallel over MPI: which rank this process is and the few
 * collectives training needs.  Nothing here knows devices or models.
 *
 * A process started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE, or PMI's
 * PMI_SIZE / PMIX_RANK, in its environment) joins the world of its job; any
 * other process is a world of one and MPI is never initialised, so the
 * same binary runs alone exactly as before.  Built without MPI (-DTT_MPI=OFF
 * or no Open MPI found), a process that mpirun started with more than one
 * rank gets an error that says how to build with it.
 *
 * Every collective is called by every rank in the same order; results are
 * the same on every rank.  Errors come back as a tt_status naming the call.
 */
#ifndef TT_DIST_DIST_H
#define TT_DIST_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct tt_dist {
    int rank, size;             /* in the job: 0 .. size-1 */
    int local_rank, local_size; /* among the ranks on this machine */
    int mpi;                    /* MPI was initialised (and is finalised by tt_dist_finish) */
} tt_dist;

/* A world of one: rank 0 of 1. */
tt_dist tt_dist_single(void);

/* Joins the job's world when mpirun started this process, else a world of
 * one.  Call once, before any thread is started. */
tt_status tt_dist_start(tt_dist *dist);
/* Leaves the world (MPI_Finalize when it was joined). */
void tt_dist_finish(tt_dist *dist);
/* 1 when this binary can join an MPI job. */
int tt_dist_built_with_mpi(void);

/* values[i] summed over every rank, in place. */
tt_status tt_dist_sum_f32(const tt_dist *dist, float *values, size_t n);
tt_status tt_dist_sum_f64(const tt_dist *dist, double *values, size_t n);
/* values[i] = the largest over every rank, in place. */
tt_status tt_dist_max_f64(const tt_dist *dist, double *values, size_t n);
/* all[r * n + i] = rank r's mine[i], on every rank. */
tt_status tt_dist_gather_u64(const tt_dist *dist, const uint64_t *mine, size_t n, uint64_t *all);
/* bytes from rank `root` to every rank. */
tt_status tt_dist_broadcast(const tt_dist *dist, void *bytes, size_t n, int root);
/* 1 once an MPI call of this process failed (a rank gone, the network, or
 * TT_FAULT=coll:N): the ranks may no longer be in step, so no error is
 * every rank's together and the job must be stopped with tt_dist_abort. */
int tt_dist_broken(void);
/* While `on`, this rank's collectives wait without the watchdog's bound
 * (TT_MPI_TIMEOUT): a wait whose length is the other ranks' work, not the
 * network's (the ranks waiting while rank 0 validates: minutes on a large
 * scene; rank 0's own wait there stays bounded, and its watchdog stops the
 * job when the network to the others is gone). */
void tt_dist_unbounded(int on);
/* Stops every rank of the job at once (MPI_Abort); returns only in a world
 * of one. */
void tt_dist_abort(const tt_dist *dist, int code);

#endif
