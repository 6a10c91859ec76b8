/*
 * Choosing a convolution algorithm by timing, like MIOpen's find-db.
 *
 * For TT_CONV_ALGO_AUTO an op asks tt_conv_autotune_pick() for the fastest
 * of the algorithms that can run one direction of one layer shape.  The
 * answer comes from memory, else from the device's find-db file, else from
 * timing the candidates (each once untimed, then 2 rounds timing each in
 * turn, wall clock around tt_finish; a candidate's best counts) and is
 * then written to the find-db so that the next process reuses it without
 * timing.  Before it is timed, every candidate is verified on the call's
 * own inputs (conv_verify.h: against the reference algorithm everywhere
 * and the host's double at sampled elements); one off by more than fp32
 * rounding allows for the reduction is refused, warned about once, and
 * kept in the find-db entry as refused, so that no later process on that
 * device and driver tries it for that key again:
 *
 *   $TT_CACHE_DIR/find-db/<backend>-<device-hash>.json, else
 *   $XDG_CACHE_HOME/tiletrain/find-db/..., else ~/.cache/tiletrain/find-db/...
 *
 * written to a temporary file, fsynced and renamed (atomic).  The backend
 * ("opencl", "vulkan") is part of the key, in the name and in the file's
 * "backend" field: a pick timed through one API is never used on the
 * other, even for the same device.  A file that cannot be parsed, or names
 * another backend, is ignored with a warning on stderr, and rewritten; one
 * timed with other code (its "code", below) is timed again, with a note.
 *
 * A desc that names its algorithm never reaches the autotuner: a run that
 * wants one algorithm (--algo, $TT_CONV_ALGO: tt_conv_algo_setting) puts it
 * in every desc through the model.  The find-db's state is process-wide,
 * keyed by the device and the backend, and guarded by a mutex.
 */
#ifndef TT_OPS_CONV_AUTOTUNE_H
#define TT_OPS_CONV_AUTOTUNE_H

#include <stdint.h>

#include "backend/backend.h"
#include "ops/conv_algo.h"

/* The find-db file's layout, raised only when its JSON changes shape (15:
 * the "code" field).  What a pick costs depends on code, and that is the
 * file's "code": tt_conv_find_db_code, a hash of the host's convolution
 * code and the backend's kernels made at build time
 * (cmake/conv_code_hash.cmake).  A file timed with other code is timed
 * again, so no change to a kernel, a variant or a candidate table needs a
 * version raised by hand. */
#define TT_FIND_DB_VERSION 15

/* The hash of the convolution code that `be`'s picks are timed with. */
const char *tt_conv_find_db_code(const tt_backend *be);


/* Runs candidate `algo` once on the op's buffers (queued, not finished). */
typedef tt_status (*tt_conv_run_fn)(void *ctx, tt_conv_algo algo);

/* What verifying one candidate found: its error (the largest difference
 * over the output's largest value; infinity for a NaN), the bound fp32
 * rounding allows, and the algorithm it was compared with; and how long
 * its run for the check took (ms, launch to finish; <= 0 when unknown),
 * the autotuner's first look at its speed. */
typedef struct tt_conv_verdict {
    double error, bound;
    tt_conv_algo reference;
    int undecided; /* the call's inputs are not all finite (an overflowed
                      loss-scaled step): no test of a kernel */
    double ms;
} tt_conv_verdict;

/* Runs candidate `algo` on the op's buffers and compares its output
 * (finished) with the reference's; a failure to run is a status. */
typedef tt_status (*tt_conv_verify_fn)(void *ctx, tt_conv_algo algo, tt_conv_verdict *verdict);

/* *best = the fastest of `candidates` (count >= 1) for `key` (the op,
 * direction and shape, as text) on `be`'s device, among those `verify`
 * (NULL: none) passes.  The first `timed` are timed; the rest are checked
 * (references for the others) and timed only where none of the first is
 * left.  One candidate is returned without timing or verifying.  When the check is undecided (inputs not all finite), the
 * first candidate runs this call and nothing is timed or kept: the next
 * call decides.  A candidate whose run fails is skipped; if all fail, the
 * last failure is returned; if all are refused, TT_ERR_BACKEND (the
 * device computes none of them right). */
tt_status tt_conv_autotune_pick(tt_backend *be, const char *key, const tt_conv_algo *candidates,
                                int count, int timed, tt_conv_run_fn run,
                                tt_conv_verify_fn verify, void *ctx, tt_conv_algo *best);
/* Whether `algo` is refused for `key` on `be`'s device (in memory or in
 * its find-db); *verdict (may be NULL) what its verification found. */
int tt_conv_autotune_refused(const tt_backend *be, const char *key, tt_conv_algo algo,
                             tt_conv_verdict *verdict);

/* Whether `key` already has a pick among `candidates` on `be`'s device (in
 * memory or in its find-db), without timing anything; *out is the pick.
 * Lets callers size workspaces for what will run rather than for every
 * candidate. */
int tt_conv_autotune_known(const tt_backend *be, const char *key, const tt_conv_algo *candidates,
                           int count, tt_conv_algo *out);
/* The candidates that can still run `key`: the known pick alone (moved to
 * candidates[0], returns 1), else all `count` of them unchanged. */
int tt_conv_autotune_narrow(const tt_backend *be, const char *key, tt_conv_algo *candidates,
                            int count);

/* What the autotuner tells an observer: a key's timing starts (algo AUTO,
 * ms < 0) or ends with its pick.  done: keys timed in this process before
 * (START) or with (DONE) this one; total: those and the keys a model has
 * sized for every candidate on this device and not yet timed (what this
 * run will still tune); programs: the backend's programs built from
 * source so far (a first run on a device compiles them as it tunes). */
typedef enum tt_conv_tune_phase { TT_CONV_TUNE_START, TT_CONV_TUNE_DONE } tt_conv_tune_phase;
typedef struct tt_conv_tune_event {
    tt_conv_tune_phase phase;
    const char *device; /* the device's name */
    const char *key;
    tt_conv_algo algo;
    double ms;
    uint64_t done, total, programs;
    /* DONE: the candidates weighed and each one's time in ms (< 0: refused
     * or failed; 1e300: not timed, as a checked-only reference) */
    const tt_conv_algo *candidates;
    const double *candidate_ms;
    int count;
} tt_conv_tune_event;
typedef void (*tt_conv_tune_observer)(void *ctx, const tt_conv_tune_event *event);
/* Sets the process's observer (NULL: none).  It is called with the
 * autotuner's lock held, so it must not call the autotuner. */
void tt_conv_autotune_observe(tt_conv_tune_observer fn, void *ctx);

/* Counters since the start or the last tt_conv_autotune_reset(). */
typedef struct tt_conv_autotune_stats {
    uint64_t timed;        /* keys decided by timing */
    uint64_t runs;         /* candidate runs, warm-ups included */
    uint64_t pruned;       /* timed runs left out: the candidate too slow to win */
    uint64_t memory_hits;  /* keys answered from memory */
    uint64_t db_hits;      /* keys answered from a find-db file */
    uint64_t db_loads;     /* find-db files read */
    uint64_t db_writes;    /* find-db files written */
    uint64_t db_ignored;   /* find-db files (or entries) ignored as corrupt */
    uint64_t db_stale;     /* find-db files timed with other code: timed again */
    uint64_t sized_unknown; /* keys sized for every candidate: not yet timed */
    uint64_t verified;     /* candidate runs checked against the reference */
    uint64_t refused;      /* candidates refused by that check */
    uint64_t undecided;    /* keys left for a later call: inputs not finite */
} tt_conv_autotune_stats;

tt_conv_autotune_stats tt_conv_autotune_stats_get(void);
/* Forgets every pick held in memory and zeroes the counters, as a new
 * process would start; the files stay. */
void tt_conv_autotune_reset(void);
/* The find-db file of `be`'s device and backend, into buf (size bytes). */
tt_status tt_conv_find_db_path(const tt_backend *be, char *buf, size_t size);

/* Calls fn for every refusal the autotuner knows on be's device (its
 * find-db's and this process's): the key, the algorithm and its verdict.
 * Called with the autotuner's lock held: fn must not call the autotuner. */
void tt_conv_autotune_each_refusal(const tt_backend *be,
                                   void (*fn)(void *ctx, const char *key, tt_conv_algo algo,
                                              const tt_conv_verdict *verdict),
                                   void *ctx);

#endif
