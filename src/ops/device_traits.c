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
    t.w8 = tt_knob_flag(TT_KNOB_KERNEL_W8, t.w8);
    t.norm_interleave = tt_knob_flag(TT_KNOB_NORM_INTERLEAVE, t.norm_interleave);
    t.opencl_cpu = cpu && be->kernels_of == TT_BACKEND_OPENCL;
    /* gallivm (lavapipe) ends an invocation after 65535 loop iterations */
    t.loop_limit = cpu && be->kernels_of == TT_BACKEND_VULKAN ? 65535 : 0;
    const char *limit = tt_knob_str(TT_KNOB_LOOP_LIMIT);
    if (limit && *limit) t.loop_limit = strtoull(limit, NULL, 10);
    return t;
}
