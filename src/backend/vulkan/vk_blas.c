/*
 * The Vulkan backend's GEMM, im2col and col2im (the `gemm`, `im2col` and
 * `col2im` members of the table): launches of our own shaders
 * shaders/blas/gemm.comp, im2col.comp and col2im.comp (there is no CLBlast
 * for Vulkan).  Arguments are whole floats, as CLBlast requires on OpenCL.
 */
#include <limits.h>
#include <stdio.h>

#include "backend/vulkan/vk_internal.h"

/* The rows and columns of C one invocation of blas/gemm computes (the
 * shader's TM and TN: keep them equal) and the work-group's side. */
#define GEMM_TM 8
#define GEMM_TN 8
#define GEMM_WG 8
/* The most of k one launch of blas/gemm sums: lavapipe (Mesa's gallivm)
 * ends every loop of a shader invocation once they have run 65535
 * iterations together, so a longer k (a weight gradient's H x W of 256 x
 * 256 and up) would stop short.  Longer products run as launches over
 * slices of k, each adding into C. */
#define GEMM_K_SLICE 32768

static int fits_int(size_t v) { return v <= (size_t)INT_MAX; }

tt_status tt_vk_gemm(tt_backend *backend, const tt_gemm *g)
{
    const size_t f = sizeof(float);
    if (g->a.offset % f || g->b.offset % f || g->c.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "GEMM: buffer offsets must be whole floats");
    size_t batch = g->batch > 1 ? g->batch : 1;
    if (!fits_int(g->m) || !fits_int(g->n) || !fits_int(g->k) || !fits_int(g->lda) ||
        !fits_int(g->ldb) || !fits_int(g->ldc) || !fits_int(g->stride_a) ||
        !fits_int(g->stride_b) || !fits_int(g->stride_c))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "GEMM (m=%zu n=%zu k=%zu batch=%zu): sizes, leading dimensions and "
                            "strides must fit an int on the vulkan backend",
                            g->m, g->n, g->k, batch);
    static const char *const options[2][2] = {{"-DTRANS_A=0 -DTRANS_B=0", "-DTRANS_A=0 -DTRANS_B=1"},
                                              {"-DTRANS_A=1 -DTRANS_B=0", "-DTRANS_A=1 -DTRANS_B=1"}};
    size_t global[3] = {(g->n + GEMM_TN - 1) / GEMM_TN, (g->m + GEMM_TM - 1) / GEMM_TM, batch};
    size_t local[3] = {GEMM_WG, GEMM_WG, 1};
    size_t strides[3] = {batch > 1 ? g->stride_a : 0, batch > 1 ? g->stride_b : 0,
                         batch > 1 ? g->stride_c : 0};
    /* where slice k0 of op(A)'s columns and op(B)'s rows starts, in floats per k */
    size_t a_step = g->trans_a ? g->lda : 1, b_step = g->trans_b ? 1 : g->ldb;
    size_t k0 = 0;
    do {
        size_t k = g->k - k0 < GEMM_K_SLICE ? g->k - k0 : GEMM_K_SLICE;
        TT_TRY(tt_launch_kernel(
            backend, "blas", "gemm", options[g->trans_a != 0][g->trans_b != 0], 3, global, local,
            TT_ARGS(tt_arg_mem(tt_mem_f32(g->a, k0 * a_step)),
                    tt_arg_mem(tt_mem_f32(g->b, k0 * b_step)), tt_arg_mem(g->c),
                    tt_arg_i32((int)g->m), tt_arg_i32((int)g->n), tt_arg_i32((int)k),
                    tt_arg_i32((int)g->lda), tt_arg_i32((int)g->ldb), tt_arg_i32((int)g->ldc),
                    tt_arg_i32((int)strides[0]), tt_arg_i32((int)strides[1]),
                    tt_arg_i32((int)strides[2]), tt_arg_f32(g->alpha),
                    tt_arg_f32(k0 ? 1.0f : g->beta))));
        k0 += k;
    } while (k0 < g->k);
    return NULL;
}

/* im2col: one invocation per column entry; col2im: one per image pixel,
 * which gathers (and adds) every column entry that came from it. */
static tt_status im2col_or_col2im(tt_backend *backend, const tt_im2col *g, int to_columns)
{
    const char *what = to_columns ? "im2col" : "col2im";
    const size_t f = sizeof(float);
    if (g->im.offset % f || g->col.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: buffer offsets must be whole floats",
                            what);
    size_t out_h = (g->height + 2 * g->pad_h - g->dilation_h * (g->kernel_h - 1) - 1) /
                       g->stride_h + 1;
    size_t out_w = (g->width + 2 * g->pad_w - g->dilation_w * (g->kernel_w - 1) - 1) /
                       g->stride_w + 1;
    size_t items = to_columns ? g->channels * g->kernel_h * g->kernel_w * out_h * out_w
                              : g->channels * g->height * g->width;
    if (!fits_int(items) || !fits_int(g->channels * g->height * g->width) ||
        !fits_int(g->pad_h + g->height) || !fits_int(g->pad_w + g->width))
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: %zu entries are too many for the vulkan "
                            "backend (an int)", what, items);
    if (!fits_int(g->channels * g->kernel_h * g->kernel_w))
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: %zu column rows are too many for the vulkan "
                            "backend (an int)", what, g->channels * g->kernel_h * g->kernel_w);
    /* 3-D over (column, row, plane): no index is split by a division that
     * is not a constant's (the kernel size and strides are specialization
     * constants); work-groups as wide as the rows, up to 32 */
    char options[128];
    snprintf(options, sizeof options, "-DTT_KH=%zu -DTT_KW=%zu -DTT_SH=%zu -DTT_SW=%zu",
             g->kernel_h, g->kernel_w, g->stride_h, g->stride_w);
    size_t cols = to_columns ? out_w : g->width, rows = to_columns ? out_h : g->height;
    size_t planes = to_columns ? g->channels * g->kernel_h * g->kernel_w : g->channels;
    size_t wide = 1;
    while (wide < cols && wide < 32) wide *= 2;
    size_t global[3] = {cols, rows, planes}, local[3] = {wide, 64 / wide, 1};
    return tt_launch_kernel(
        backend, "blas", what, options, 3, global, local,
        TT_ARGS(tt_arg_mem(g->im), tt_arg_mem(g->col), tt_arg_i32((int)g->channels),
                tt_arg_i32((int)g->height), tt_arg_i32((int)g->width),
                tt_arg_i32((int)g->kernel_h), tt_arg_i32((int)g->kernel_w),
                tt_arg_i32((int)g->pad_h), tt_arg_i32((int)g->pad_w),
                tt_arg_i32((int)g->stride_h), tt_arg_i32((int)g->stride_w),
                tt_arg_i32((int)g->dilation_h), tt_arg_i32((int)g->dilation_w),
                tt_arg_i32((int)out_h), tt_arg_i32((int)out_w)));
}

tt_status tt_vk_im2col(tt_backend *backend, const tt_im2col *g)
{
    return im2col_or_col2im(backend, g, 1);
}

tt_status tt_vk_col2im(tt_backend *backend, const tt_im2col *g)
{
    return im2col_or_col2im(backend, g, 0);
}
