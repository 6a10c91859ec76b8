/* The kernel variants for a device (see device_traits.h). */
#include "ops/device_traits.h"

#include <stdlib.h>
#include <string.h>

#include "core/knobs.h"

tt_device_traits tt_device_traits_of(const tt_backend *be)
{
    const char *type = be->device.type;
    int gpu = strcmp(type, "GPU") == 0, cpu = strcmp(type, "CPU") == 0;
    tt_device_traits t = {.gpu = gpu, .w8 = cpu, .norm_interleave = !cpu};
    if (be->forced.w8) t.w8 = be->forced.w8 == TT_VARIANT_ON;
    if (be->forced.norm_interleave) t.norm_interleave = be->forced.norm_interleave == TT_VARIANT_ON;
    t.opencl_cpu = cpu && be->kernels_of == TT_BACKEND_OPENCL;
    /* gallivm (lavapipe) ends an invocation after 65535 loop iterations */
    t.loop_limit = cpu && be->kernels_of == TT_BACKEND_VULKAN ? 65535 : 0;
    const char *limit = tt_knob_str(TT_KNOB_LOOP_LIMIT);
    if (limit && *limit) t.loop_limit = strtoull(limit, NULL, 10);
    t.dispatch_flops = gpu ? 4294967296.0 : 0.0;
    const char *flops = tt_knob_str(TT_KNOB_DISPATCH_FLOPS);
    if (flops && *flops) t.dispatch_flops = strtod(flops, NULL);
    return t;
}

size_t tt_dispatch_units(const tt_backend *be, double flops_per_unit, size_t units)
{
    double cap = tt_device_traits_of(be).dispatch_flops;
    if (cap <= 0 || flops_per_unit <= 0 || flops_per_unit * (double)units <= cap) return units;
    size_t fit = (size_t)(cap / flops_per_unit);
    return fit < 1 ? 1 : fit;
}
