/* Utility ops: thin launches of opencl/util.cl. */
#include "ops/util.h"

#include "core/status.h"
#include "ops/device_traits.h"

#define FILL_RUN 4096 /* floats a work-item of fill_w8 sets (opencl/util.cl) */

tt_status tt_fill(tt_backend *be, tt_mem x, float value, size_t n)
{
    TT_TRY(tt_launch_check_count("fill", n));
    if (tt_device_traits_of(be).w8) { /* CPUs: long runs of float8 stores */
        size_t global[1] = {(n + FILL_RUN - 1) / FILL_RUN}, local[1] = {1};
        if (n == 0) return NULL;
        return tt_launch_kernel(be, "util", "fill_w8", NULL, 1, global, local,
                                TT_ARGS(tt_arg_mem(x), tt_arg_f32(value), tt_arg_i32((int)n),
                                        tt_arg_i32(FILL_RUN)));
    }
    return TT_LAUNCH_1D(be, "util", "fill", n, tt_arg_mem(x), tt_arg_f32(value), tt_arg_i32((int)n));
}

tt_status tt_scale(tt_backend *be, tt_mem x, float alpha, size_t n)
{
    TT_TRY(tt_launch_check_count("scale", n));
    return TT_LAUNCH_1D(be, "util", "scale", n, tt_arg_mem(x), tt_arg_f32(alpha), tt_arg_i32((int)n));
}

tt_status tt_axpy(tt_backend *be, tt_mem y, tt_mem x, float alpha, size_t n)
{
    TT_TRY(tt_launch_check_count("axpy", n));
    return TT_LAUNCH_1D(be, "util", "axpy", n, tt_arg_mem(y), tt_arg_mem(x), tt_arg_f32(alpha),
                        tt_arg_i32((int)n));
}

tt_status tt_copy_f32(tt_backend *be, tt_mem y, tt_mem x, size_t n)
{
    TT_TRY(tt_launch_check_count("copy", n));
    return TT_LAUNCH_1D(be, "util", "copy", n, tt_arg_mem(y), tt_arg_mem(x), tt_arg_i32((int)n));
}
