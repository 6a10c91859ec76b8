/*
 * OpenBLAS SGEMM on the host, loaded at run time (no build dependency):
 * the yardstick that `tiletrain tune` and `tiletrain bench --layers` put
 * next to the device's figures with --compare-openblas.
 */
#ifndef TT_TUNE_HOST_BLAS_H
#define TT_TUNE_HOST_BLAS_H

#include <stdio.h>

#include "tune/tune.h"

/* secs[s] = seconds of one call of shapes[s] (row-major, as tt_gemm), the
 * best of a few after a warm-up, with OpenBLAS's own threads.  Returns 0,
 * having said why on `log` ("tiletrain COMMAND: ..."), when libopenblas.so.0
 * or its cblas_sgemm is missing or memory runs out. */
int tt_host_sgemm_time(const char *command, const tt_gemm_shape *shapes, int count, double *secs,
                       FILE *log);

#endif
