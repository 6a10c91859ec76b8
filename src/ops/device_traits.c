/* The kernel variants for a device (see device_traits.h). */
#include "ops/device_traits.h"

#include <stdlib.h>
#include <string.h>

#include "core/knobs.h"

tt_device_traits tt_device_traits_of(const tt_backend *be)
{
    const char *type = be->device.type;
    int gpu = strcmp(type, "GPU") == 0, cpu = strcmp(type, "CPU") == 0;
    tt_device_traits t = {
        .direct = gpu ? TT_KERNEL_TILED : cpu ? TT_KERNEL_W8 : TT_KERNEL_SCALAR,
        .norm_interleave = !cpu,
    };
    static const char *const variants[] = {
        [TT_KERNEL_SCALAR] = "scalar", [TT_KERNEL_TILED] = "tiled", [TT_KERNEL_W8] = "w8"};
    t.direct = (tt_kernel_variant)tt_knob_choice(TT_KNOB_CONV_DIRECT_VARIANT, variants, 3,
                                                 (int)t.direct);
    t.norm_interleave = tt_knob_flag(TT_KNOB_NORM_INTERLEAVE, t.norm_interleave);
    t.w8 = t.direct == TT_KERNEL_W8;
    /* A CPU Vulkan device (lavapipe) runs a work-group's invocations side
     * by side in SIMD lanes: the direct convolutions' float8 code, with its
     * one-invocation groups, leaves them idle (3x slower than scalar
     * there), while the small float8 kernels (fill, bias gradient, 2x2
     * pooling, up-convolution tiles) still gain.  The knob sets both. */
    if (cpu && be->kernels_of == TT_BACKEND_VULKAN && !tt_knob_set(TT_KNOB_CONV_DIRECT_VARIANT))
        t.direct = TT_KERNEL_SCALAR;
    t.opencl_cpu = cpu && be->kernels_of == TT_BACKEND_OPENCL;
    /* gallivm (lavapipe) ends an invocation after 65535 loop iterations */
    t.loop_limit = cpu && be->kernels_of == TT_BACKEND_VULKAN ? 65535 : 0;
    const char *limit = tt_knob_str(TT_KNOB_LOOP_LIMIT);
    if (limit && *limit) t.loop_limit = strtoull(limit, NULL, 10);
    return t;
}
