/*
 * The WINOGRAD F(2x2, 3x3) algorithm (opencl/conv_winograd.cl): 3x3 kernels,
 * stride 1, dilation 1, groups 1, any padding.
 *
 *   forward        U = transform(weight); per image n: V = transform(inp[n]),
 *                  M[e] = U[e] (Cout, Cin) . V[e] (Cin, T) for the 16 e in one
 *                  CLBlast strided-batched GEMM, out[n] = Aᵀ M A (+ bias)
 *   backward data  the forward of dout with the flipped, transposed kernel
 *                  and padding 2 - pad (so pad <= 2), adding into dinp
 *   backward weight not here: falls back to IM2COL_GEMM (conv2d.c)
 *
 * Workspace (floats): 16 Cout Cin (U) + 16 T (Cin + Cout) (V and M of one
 * image), T = tiles of the larger of the two products.
 */
#include "core/status.h"
#include "ops/conv_algo.h"

static int winograd_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    int ok = tt_conv_winograd_shape(s);
    if (dir == TT_CONV_DIR_BACKWARD_DATA) return ok && s->ph <= 2 && s->pw <= 2;
    return ok && dir == TT_CONV_DIR_FORWARD;
}

static size_t tiles_of(size_t oh, size_t ow) { return ((oh + 1) / 2) * ((ow + 1) / 2); }

static size_t winograd_workspace_bytes(const tt_conv_shape *s)
{
    size_t fwd = tiles_of(s->oh, s->ow), bwd = tiles_of(s->h, s->w);
    size_t tiles = fwd > bwd ? fwd : bwd;
    return (16 * s->cout * s->cin + 16 * tiles * (s->cin + s->cout)) * sizeof(float);
}

/* One product: out (N, co, oh, ow) [+]= winograd(inp (N, ci, h, w), U) with
 * the given padding; U is already in ws. */
typedef struct wino_product {
    size_t batch, ci, h, w, co, oh, ow, pad_h, pad_w;
} wino_product;

static tt_status run_product(tt_backend *be, tt_mem out, tt_mem inp, tt_mem bias,
                             const wino_product *p, tt_mem ws, int accumulate)
{
    size_t tiles_h = (p->oh + 1) / 2, tiles_w = (p->ow + 1) / 2, tiles = tiles_h * tiles_w;
    tt_mem u = ws;
    tt_mem v = tt_mem_f32(ws, 16 * p->co * p->ci);
    tt_mem m = tt_mem_f32(v, 16 * p->ci * tiles);
    tt_mem bias_mem = bias.buffer ? bias : inp; /* any valid buffer; unread */
    for (size_t n = 0; n < p->batch; n++) {
        size_t gin[3] = {tiles_w, tiles_h, p->ci}, gout[3] = {tiles_w, tiles_h, p->co};
        TT_TRY(tt_launch_kernel(
            be, "conv_winograd", "winograd_input", NULL, 3, gin, NULL,
            TT_ARGS(tt_arg_mem(v), tt_arg_mem(tt_mem_f32(inp, n * p->ci * p->h * p->w)),
                    tt_arg_i32((int)p->ci), tt_arg_i32((int)p->h), tt_arg_i32((int)p->w),
                    tt_arg_i32((int)p->pad_h), tt_arg_i32((int)p->pad_w),
                    tt_arg_i32((int)tiles_h), tt_arg_i32((int)tiles_w))));
        tt_gemm gemm = {.m = p->co, .n = tiles, .k = p->ci, .alpha = 1.0f, .beta = 0.0f,
                        .a = u, .lda = p->ci, .stride_a = p->co * p->ci,
                        .b = v, .ldb = tiles, .stride_b = p->ci * tiles,
                        .c = m, .ldc = tiles, .stride_c = p->co * tiles, .batch = 16};
        TT_TRY(tt_gemm_run(be, &gemm));
        TT_TRY(tt_launch_kernel(
            be, "conv_winograd", "winograd_output", NULL, 3, gout, NULL,
            TT_ARGS(tt_arg_mem(tt_mem_f32(out, n * p->co * p->oh * p->ow)), tt_arg_mem(m),
                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate),
                    tt_arg_i32((int)p->co), tt_arg_i32((int)p->oh), tt_arg_i32((int)p->ow),
                    tt_arg_i32((int)tiles_h), tt_arg_i32((int)tiles_w))));
    }
    return NULL;
}

static tt_status weight_transform(tt_backend *be, tt_mem u, tt_mem weight, size_t cout,
                                  size_t cin, int flip)
{
    size_t global[2] = {cin, cout};
    return tt_launch_kernel(be, "conv_winograd", "winograd_weight", NULL, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(u), tt_arg_mem(weight), tt_arg_i32((int)cout),
                                    tt_arg_i32((int)cin), tt_arg_i32(flip)));
}

static tt_status winograd_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                  tt_mem bias, const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    TT_TRY(weight_transform(be, ws, weight, s->cout, s->cin, 0));
    wino_product p = {s->batch, s->cin, s->h, s->w, s->cout, s->oh, s->ow, s->ph, s->pw};
    return run_product(be, out, inp, bias, &p, ws, accumulate);
}

static tt_status winograd_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                        const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    /* dinp[ci] = sum_co correlate(dout[co] padded by 2 - pad, flip(w[co, ci])) */
    TT_TRY(weight_transform(be, ws, weight, s->cin, s->cout, 1));
    wino_product p = {s->batch, s->cout, s->oh, s->ow, s->cin, s->h, s->w, 2 - s->ph, 2 - s->pw};
    return run_product(be, dinp, dout, (tt_mem){0}, &p, ws, accumulate);
}

const tt_conv_algo_impl tt_conv_winograd_impl = {
    .program = "conv_winograd",
    .needs = TT_CONV_NEEDS_GEMM,
    /* it won no pick on PoCL in any find-db measured (docs/ops.md, "The
     * first run on a device"): a first run there does not compile it */
    .tuned_on = TT_TUNED_ELSEWHERE,
    .supports = winograd_supports,
    .workspace_bytes = winograd_workspace_bytes,
    .forward = winograd_forward,
    .backward_data = winograd_backward_data,
    .backward_weight = NULL, /* falls back to IM2COL_GEMM */
};
