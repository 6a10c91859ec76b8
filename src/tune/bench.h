/* Timing and checking GEMM shapes for the tuner (internal to src/tune/). */
#ifndef TT_TUNE_BENCH_H
#define TT_TUNE_BENCH_H

#include "tune/tune.h"

typedef struct tt_cl_tune_bench {
    tt_backend *be;
    const tt_gemm_shape *shapes;
    int count;
    tt_buffer *in;           /* A and B both read from here (random in [-1, 1)) */
    tt_buffer *out;          /* C */
    float *host_in;
    double **x, **z, **zabs; /* per shape: x (n), op(B) x and |op(B)| |x| (k) */
    float *row;              /* one row of C */
} tt_cl_tune_bench;

/* Uploads random data big enough for every shape and prepares the checks.
 * On error, tt_cl_tune_bench_release() still frees what was made. */
tt_status tt_cl_tune_bench_init(tt_cl_tune_bench *b, tt_backend *be,
                                const tt_gemm_shape *shapes, int count, uint64_t seed);
void tt_cl_tune_bench_release(tt_cl_tune_bench *b);

/* Seconds per call of shape s with the CLBlast parameters in force (best of
 * a few), after a warm-up call that builds the kernels and a check of the
 * result (TT_ERR_INTERNAL "wrong GEMM results" when it fails). */
tt_status tt_cl_tune_bench_time(tt_cl_tune_bench *b, int s, double *secs);

/* Runs a few odd-sized GEMMs (NN, NT, TN) with the parameters in force and
 * compares every entry with a double-precision product: TT_ERR_INTERNAL
 * "wrong GEMM results" when one differs. */
tt_status tt_cl_tune_bench_check_odd(tt_cl_tune_bench *b);

#endif
