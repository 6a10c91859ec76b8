/*
 * OpenBLAS SGEMM on the host, loaded at run time (no build dependency):
 * the yardstick that `tiletrain tune` and `tiletrain bench --layers` put
 * next to the device's figures with --compare-openblas.
 */
#ifndef TT_TUNE_HOST_BLAS_H
#define TT_TUNE_HOST_BLAS_H

#include <stdio.h>

#include "tune/tune.h"

/* cblas_sgemm's signature (CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112). */
typedef void (*tt_cblas_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k,
                                  float alpha, const float *a, int lda, const float *b, int ldb,
                                  float beta, float *c, int ldc);

/* OpenBLAS's cblas_sgemm from libopenblas.so.0, loaded once and kept for
 * the process; NULL, having said why on `log` ("tiletrain COMMAND: ..."),
 * when the library or the symbol is missing.  OPENBLAS_NUM_THREADS, when
 * set before the first call, fixes its threads; OPENBLAS_CORETYPE, unset,
 * is set from the CPU's features (AVX-512: SkylakeX, AVX2: Haswell) so
 * that a CPU model OpenBLAS does not know does not run its SSE3 kernels.
 * Says on `log` which kernels it runs. */
tt_cblas_sgemm_fn tt_host_sgemm_load(const char *command, FILE *log);

/* secs[s] = seconds of one call of shapes[s] (row-major, as tt_gemm), the
 * best of a few after a warm-up, with OpenBLAS's own threads.  Returns 0,
 * having said why on `log` ("tiletrain COMMAND: ..."), when libopenblas.so.0
 * or its cblas_sgemm is missing or memory runs out. */
int tt_host_sgemm_time(const char *command, const tt_gemm_shape *shapes, int count, double *secs,
                       FILE *log);

#endif
