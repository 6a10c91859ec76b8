/* Casts between fp32 and 16-bit storage (cast.h): host side, launching
 * opencl/cast.cl or shaders/cast/.  Every kernel takes eight values a
 * work-item, n / 8 + 1 work-items: the Vulkan pack owns four 32-bit words
 * of dst each, and dst may start at either half of a word. */
#include "ops/cast.h"

#include "core/status.h"

static tt_status check(const char *pass, tt_mem dst, size_t dst_bytes, tt_mem src,
                       size_t src_bytes, tt_precision precision, size_t n)
{
    if (precision != TT_PRECISION_FP16 && precision != TT_PRECISION_BF16)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "cast %s: precision %s is not a 16-bit storage; use fp16 or bf16", pass,
                            tt_precision_name(precision));
    TT_TRY(tt_launch_check_count("cast", n + 8));
    TT_TRY(tt_mem_check("cast", "dst", dst, dst_bytes));
    TT_TRY(tt_mem_check("cast", "src", src, src_bytes));
    tt_mem halves = dst_bytes < src_bytes ? dst : src;
    if (halves.offset % 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "cast %s: a 16-bit tensor starts at odd byte %zu; place it at an even "
                            "byte", pass, halves.offset);
    if (dst.buffer == src.buffer && dst.offset < src.offset + src_bytes &&
        src.offset < dst.offset + dst_bytes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "cast %s: dst and src overlap; give the result its own memory", pass);
    return NULL;
}

tt_status tt_cast_pack(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision, size_t n)
{
    TT_TRY(check("pack", dst, 2 * n, src, 4 * n, precision, n));
    if (n == 0) return NULL;
    return TT_LAUNCH_1D(be, "cast", "cast_pack", n / 8 + 1, tt_arg_mem(dst), tt_arg_mem(src),
                        tt_arg_i32(tt_precision_format(precision)), tt_arg_i32((int)n));
}

tt_status tt_cast_round(tt_backend *be, tt_mem x, tt_precision precision, size_t n)
{
    if (precision != TT_PRECISION_FP16 && precision != TT_PRECISION_BF16)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "cast round: precision %s is not a 16-bit storage; use fp16 or bf16",
                            tt_precision_name(precision));
    TT_TRY(tt_launch_check_count("cast", n + 8));
    TT_TRY(tt_mem_check("cast", "x", x, 4 * n));
    if (n == 0) return NULL;
    return TT_LAUNCH_1D(be, "cast", "cast_round", n / 8 + 1, tt_arg_mem(x),
                        tt_arg_i32(tt_precision_format(precision)),
                        tt_arg_i32((int)n));
}

tt_status tt_cast_unpack(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision, size_t n)
{
    TT_TRY(check("unpack", dst, 4 * n, src, 2 * n, precision, n));
    if (n == 0) return NULL;
    return TT_LAUNCH_1D(be, "cast", "cast_unpack", n / 8 + 1, tt_arg_mem(dst), tt_arg_mem(src),
                        tt_arg_i32(tt_precision_format(precision)), tt_arg_i32((int)n));
}
