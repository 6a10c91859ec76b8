/* Nearest x2 upsampling (see upsample_nearest.h): host side of
 * opencl/upsample_nearest.cl and shaders/upsample_nearest/. */
#include "ops/upsample_nearest.h"

#include "core/status.h"

tt_status tt_upsample_nearest2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                        const tt_upsample_desc *d)
{
    int planes;
    size_t in_count;
    TT_TRY(tt_upsample_check("upsample_nearest2x forward", d, inp, "inp", out, "out", &planes,
                             &in_count));
    return TT_LAUNCH_1D(be, "upsample_nearest", "upsample_nearest2x_forward", in_count,
                        tt_arg_mem(out), tt_arg_mem(inp), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}

tt_status tt_upsample_nearest2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                         const tt_upsample_desc *d)
{
    int planes;
    size_t in_count;
    TT_TRY(tt_upsample_check("upsample_nearest2x backward", d, dinp, "dinp", dout, "dout",
                             &planes, &in_count));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    return TT_LAUNCH_1D(be, "upsample_nearest", "upsample_nearest2x_backward", in_count,
                        tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}
