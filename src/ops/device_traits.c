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
    return t;
}
