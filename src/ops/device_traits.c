/* The kernel variants for a device (see device_traits.h). */
#include "ops/device_traits.h"

#include <stdlib.h>
#include <string.h>

tt_device_traits tt_device_traits_of(const tt_backend *be)
{
    const char *type = be->device.type;
    int gpu = strcmp(type, "GPU") == 0, cpu = strcmp(type, "CPU") == 0;
    tt_device_traits t = {
        .direct = gpu ? TT_KERNEL_TILED : cpu ? TT_KERNEL_W8 : TT_KERNEL_SCALAR,
        .norm_interleave = !cpu,
    };
    const char *env = getenv("TT_CONV_DIRECT_VARIANT");
    if (env && strcmp(env, "scalar") == 0) t.direct = TT_KERNEL_SCALAR;
    if (env && strcmp(env, "tiled") == 0) t.direct = TT_KERNEL_TILED;
    if (env && strcmp(env, "w8") == 0) t.direct = TT_KERNEL_W8;
    env = getenv("TT_NORM_INTERLEAVE");
    if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0)) t.norm_interleave = env[0] == '1';
    t.w8 = t.direct == TT_KERNEL_W8;
    return t;
}
