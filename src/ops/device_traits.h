/*
 * Which kernel variants the ops launch on a device.  This is the one place
 * that looks at the device's type (tt_device_info.type), so that no op
 * compares type strings: GPUs get local-memory tiles and interleaved
 * sharing, CPUs (PoCL) explicit 8-wide vector code with a long run per
 * work-item (16-wide for the 3x3 convolution where the device prefers
 * 16-lane vectors), other devices the scalar kernels.  Test knobs override
 * the choice ($TT_CONV_DIRECT_VARIANT, $TT_NORM_INTERLEAVE).
 */
#ifndef TT_OPS_DEVICE_TRAITS_H
#define TT_OPS_DEVICE_TRAITS_H

#include "backend/backend.h"

typedef enum tt_kernel_variant {
    TT_KERNEL_SCALAR,  /* one element (or column) per work-item */
    TT_KERNEL_TILED,   /* work-groups staging tiles in local memory (GPUs) */
    TT_KERNEL_W8       /* explicit float8 code, a work-item each (CPUs) */
} tt_kernel_variant;

typedef struct tt_device_traits {
    /* DIRECT convolutions (conv_direct.c, convt_tiles.c); a kernel family
     * without the variant for a shape falls back to scalar.
     * $TT_CONV_DIRECT_VARIANT=scalar|tiled|w8 overrides. */
    tt_kernel_variant direct;
    /* fill, the bias gradient, 2x2 max pooling and the up-convolution
     * tiles run their float8 kernels: where direct is TT_KERNEL_W8, and on
     * CPU Vulkan devices (lavapipe), whose direct is scalar. */
    int w8;
    /* norm.cl shares a plane's vectors interleaved across work-items (not
     * in contiguous runs, as on CPUs); $TT_NORM_INTERLEAVE=0|1 overrides. */
    int norm_interleave;
    /* An OpenCL CPU (PoCL): the convolution algorithms AUTO times are the
     * CPU's row of conv_algo.c's tuned_on. */
    int opencl_cpu;
    /* The loop iterations one invocation may run, all its loops together,
     * before the device ends it without an error (lavapipe: gallivm's
     * loop limiter, 65535); 0: no limit.  Kernels that loop long split
     * their launches below it.  $TT_LOOP_LIMIT=N overrides. */
    size_t loop_limit;
} tt_device_traits;

/* The traits of `be`'s device, with the test knobs applied. */
tt_device_traits tt_device_traits_of(const tt_backend *be);

#endif
