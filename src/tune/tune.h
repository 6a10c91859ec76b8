/*
 * The CLBlast GEMM tuner behind `tiletrain tune`: the GEMM shapes a model
 * runs (shapes.c), the search over CLBlast's parameters (search.c), the
 * timing and checking of one configuration (bench.c), the search in rounds
 * of fresh processes (rounds.c) and OpenBLAS on the host as a yardstick
 * (host_blas.c).  It writes the per-device table that the OpenCL backend
 * applies when it starts (backend/opencl/cl_tuning.h).
 *
 * The tuner sits above the backend and the ops: it may include backend
 * internals (it drives CLBlast on the backend's device); nothing below it
 * includes src/tune/.
 */
#ifndef TT_TUNE_H
#define TT_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "backend/opencl/cl_tuning.h"

/* One GEMM the model runs, row-major as tt_gemm: op(A) m x k, op(B) k x n. */
typedef struct tt_gemm_shape {
    int trans_a, trans_b;
    size_t m, n, k;
    int count;        /* how often one training step runs it per image */
    char label[48];   /* "enc.0.conv2 forward" (first one seen) */
} tt_gemm_shape;

/* GFLOP of one call. */
static inline double tt_gemm_shape_gflop(const tt_gemm_shape *s)
{
    return 2e-9 * (double)s->m * (double)s->n * (double)s->k;
}

/* The im2col GEMMs of one training step of the built-in UNet (see
 * model/unet_config.h) per image: forward, weight gradient and input
 * gradient of every convolution, the 2x2 up-convolutions and the 1x1 head,
 * merged by shape (count adds up).  *shapes: free(). */
tt_status tt_gemm_shapes_unet(int in_channels, int classes, int base_channels, int depth,
                              int height, int width, tt_gemm_shape **shapes, int *count);

/* Reads shapes from a text file: one GEMM a line, "TA TB M N K [COUNT]"
 * with TA/TB N or T; '#' starts a comment.  Errors name file and line. */
tt_status tt_gemm_shapes_load(const char *path, tt_gemm_shape **shapes, int *count);

typedef struct tt_cl_tune_options {
    double budget_s;         /* wall-clock seconds for the whole search */
    int measure_baseline;    /* time the parameters in force before the search */
    const tt_cl_tuning *previous; /* NULL, or a previous winner to start from */
    uint64_t seed;           /* random search seed */
    int max_xgemm;           /* at most this many Xgemm candidates; 0: no limit */
    int max_direct;          /* the same for XgemmDirect; < 0: none */
    const char *save_path;   /* NULL, or where to save each new best that beats
                                the parameters in force (needs measure_baseline) */
    FILE *log;               /* progress lines; NULL for quiet */
} tt_cl_tune_options;

typedef struct tt_cl_tune_result {
    tt_cl_tuning best;       /* applied to the device when the search returns */
    double *before_s;        /* per shape, seconds per call; 0 if not measured */
    double *after_s;         /* per shape, with `best` */
    int *direct;             /* per shape: 1 if `best` runs it on XgemmDirect */
    int candidates;          /* configurations timed */
    int rejected;            /* failed to build/run or gave wrong results */
    double elapsed_s;
} tt_cl_tune_result;

/* Searches Xgemm, then XgemmDirect and the switch between them, timing
 * CLBlastSgemm on `shapes` (weighted by count) within the budget (one
 * configuration is always completed, so a tiny budget still gives a valid
 * result; at most 10 are timed per process, see search.c).  Every
 * configuration's results are checked (a Freivalds test on sampled rows);
 * wrong or failing ones are skipped.  The winner is applied to the device
 * on return.  *out owns arrays: tt_cl_tune_result_free(). */
tt_status tt_cl_tune(tt_backend *backend, const tt_gemm_shape *shapes, int count,
                     const tt_cl_tune_options *options, tt_cl_tune_result *out);
void tt_cl_tune_result_free(tt_cl_tune_result *result);

/* The first configuration the search tries without a previous winner (a
 * known good one for CPUs), with XGEMM_MIN_INDIRECT_SIZE 0. */
void tt_cl_tuning_seed(const tt_device_info *device, tt_cl_tuning *out);

#endif
