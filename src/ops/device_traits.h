/*
 * Which kernel variants the ops launch on a device.  This is the one place
 * that looks at the device's type (tt_device_info.type), so that no op
 * compares type strings: GPUs get local-memory tiles and interleaved
 * sharing, CPUs (PoCL) explicit 8-wide vector code with a long run per
 * work-item (16-wide for the 3x3 convolution where the device prefers
 * 16-lane vectors), other devices the scalar kernels.  A backend's forced
 * variants (tt_forced_variants, backend.h) override the choice, and the
 * test knobs $TT_LOOP_LIMIT and $TT_DISPATCH_FLOPS a device's limits.  Where the choice is a
 * convolution's, it is the autotuner's among rows (conv_algo.h), and these
 * traits only say which rows can win.
 */
#ifndef TT_OPS_DEVICE_TRAITS_H
#define TT_OPS_DEVICE_TRAITS_H

#include "backend/backend.h"

typedef struct tt_device_traits {
    /* A GPU (CL_DEVICE_TYPE_GPU, or Vulkan's discrete, integrated or
     * virtual GPU): the local-memory tiles of DIRECT_TILED and
     * implicit_gemm's GPU tiles are worth timing there. */
    int gpu;
    /* fill, the bias gradient and 2x2 max pooling run their float8
     * kernels: on CPU devices (PoCL, lavapipe); be->forced.w8 overrides. */
    int w8;
    /* norm.cl shares a plane's vectors interleaved across work-items (not
     * in contiguous runs, as on CPUs); be->forced.norm_interleave overrides. */
    int norm_interleave;
    /* An OpenCL CPU (PoCL): the convolution algorithms AUTO times are the
     * CPU's row of conv_algo.c's tuned_on. */
    int opencl_cpu;
    /* The loop iterations one invocation may run, all its loops together,
     * before the device ends it without an error (lavapipe: gallivm's
     * loop limiter, 65535); 0: no limit.  Kernels that loop long split
     * their launches below it.  $TT_LOOP_LIMIT=N overrides. */
    size_t loop_limit;
    /* The work one convolution launch may hold, in floating-point
     * operations (0: no cap): a GPU's watchdog ends a dispatch that runs
     * past about 2 s (Windows' TDR; amdgpu, i915 on Linux), and one
     * full-resolution layer is tens of GFLOP.  GPUs 2^32, about 40 ms at
     * the 100 GFLOP/s an integrated GPU's scalar kernels reach; CPUs have
     * no watchdog.  Launches past it run as bands (tt_dispatch_units).
     * $TT_DISPATCH_FLOPS=N overrides. */
    double dispatch_flops;
} tt_device_traits;

/* The traits of `be`'s device, with its forced variants and the test knob applied. */
tt_device_traits tt_device_traits_of(const tt_backend *be);

/* Of `units` (rows, images, a reduction's steps) costing `flops_per_unit`
 * each, how many one launch may hold on `be`'s device: all of them where
 * there is no cap, else as many as keep within it, at least one. */
size_t tt_dispatch_units(const tt_backend *be, double flops_per_unit, size_t units);

#endif
