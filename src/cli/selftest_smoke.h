/*
 * The smoke kernels every device check starts with (selftest, doctor):
 * fill and axpy (opencl/util.cl, shaders/util/), a GEMM (CLBlast on
 * OpenCL, shaders/blas/gemm on Vulkan), each against the host, and the
 * device's timers that bench and profiling read (OpenCL profiling events,
 * Vulkan timestamp queries).
 */
#ifndef TT_CLI_SELFTEST_SMOKE_H
#define TT_CLI_SELFTEST_SMOKE_H

#include "backend/backend.h"
#include "cli/checks.h"

/* The kernels' checks into *checks; then, with a profiling backend, the
 * timers' (else a line saying why there are none: no_timers). */
tt_status tt_selftest_smoke(tt_backend *be, tt_status no_timers, tt_checks *checks);

#endif
