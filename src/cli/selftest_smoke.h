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

/* The backend `request` asks for, with profiling when the device can time;
 * a device without timers is opened without them, *no_timers saying why
 * (else NULL; the caller frees it). */
tt_status tt_selftest_open(tt_backend_request request, tt_backend **be, tt_status *no_timers);

/* The kernels' checks into *checks; then, with a profiling backend, the
 * timers' (else a line saying why there are none: no_timers). */
tt_status tt_selftest_smoke(tt_backend *be, tt_status no_timers, tt_checks *checks);

#endif
