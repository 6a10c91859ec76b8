/*
 * The report of a tuning search as JSON (`tiletrain tune --json`): device,
 * GFLOP/s per shape before and after, the winning parameters.  A search
 * round prints it; the parent that runs the rounds reads it back.
 */
#ifndef TT_TUNE_REPORT_H
#define TT_TUNE_REPORT_H

#include <cjson/cJSON.h>

#include "tune/tune.h"

/* GFLOP/s of one call of g taking secs; 0 when secs is not a time. */
double tt_tune_gflops(const tt_gemm_shape *g, double secs);
/* GFLOP/s of one training step's GEMMs (each shape `count` times); 0 when
 * a shape was not timed. */
double tt_tune_step_gflops(const tt_gemm_shape *shapes, int count, const double *secs);

/* The report (blas: OpenBLAS seconds per shape, or NULL; saved: the file
 * the parameters went to, or NULL).  The caller owns it: cJSON_Delete(). */
cJSON *tt_tune_report_json(const tt_device_info *device, const tt_gemm_shape *shapes, int count,
                           const tt_cl_tune_result *r, const double *blas, const char *saved);

/* The per-shape figures and parameters of a round's report (its shapes
 * are `shapes`, in the same order).  *r owns arrays:
 * tt_cl_tune_result_free(). */
tt_status tt_tune_report_read(const cJSON *report, const tt_gemm_shape *shapes, int count,
                              tt_cl_tune_result *r);

#endif
