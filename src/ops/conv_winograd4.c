/*
 * The WINOGRAD4X4 algorithm, F(4x4, 3x3) (opencl/conv_winograd4.cl): 3x3
 * kernels, stride 1, dilation 1, groups 1, any padding, channel counts a
 * multiple of 16.  Each output tile of 4x4 costs 36 products a channel pair
 * instead of the direct algorithm's 144; the products run in the
 * program's own kernels, channels in the vector lanes, over every image of
 * the batch at once (docs/ops.md).
 *
 *   forward         U = transform(weight); the input packed (16 channels
 *                   of a pixel side by side); over chunks of whole rows of
 *                   tiles: V = transform(inp), M[e] = V[e] U[e] for the 36
 *                   e, out = Aᵀ M A (+ bias)
 *   backward data   the forward of dout with the flipped, transposed kernel
 *                   and padding 2 - pad (so pad <= 2), adding into dinp
 *                   or over it
 *   backward weight input and dout packed; over chunks: V =
 *                   transform(inp), dM = A dout Aᵀ, dU[e] = dM[e]ᵀ V[e],
 *                   dweight += Gᵀ dU G (dU stored)
 *
 * WINOGRAD4X4_SUM is the weight gradient alone in one pass, a row of its
 * own that the autotuner times against the split: each dU folded into the
 * taps as it is summed (wino4_weight_sum), which saves dU's traffic twice
 * where dU (36 Cin Cout) is large against the transforms it sums (36
 * tiles (Cin + Cout)), but reads every e's transforms a work-item, from L2
 * only while they are few.
 *
 * Workspace (floats): 36 Cin Cout (U, or dU) + the packed images (N (Cin
 * H W + Cout OH OW), at most W4_PACK_FLOATS: larger shapes are declined) +
 * 36 tiles (Cin + Cout) (V and M, or dM, of one chunk, at most
 * W4_CHUNK_FLOATS).  OpenCL only: Vulkan has no conv_winograd4 program, so
 * the dispatch never offers it there (conv_algo.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/conv_winograd4.h"

#define W4_CHUNK_FLOATS ((size_t)1 << 20) /* V and M of one chunk: 4 MiB */
#define W4_PACK_FLOATS ((size_t)8 << 20)  /* the packed images: 32 MiB */
#define W4_MAX_TILES 16                   /* the most tiles a product's work-item takes */
#define W4_WCO 8                          /* output channels of wino4_weight_product */

/* Work-groups: small, so that a CPU runtime neither runs a whole chunk as
 * one group (PoCL's per-item private arrays of a group of thousands
 * overflowed its thread's stack) nor leaves a core idle. */
static const size_t local_tiles[2] = {1, 8};
static const size_t local_products[3] = {1, 1, 4};
static const size_t local_single[3] = {1, 1, 1};

/* Floats of the packed input and output gradient (wino4_pack). */
static size_t pack_floats(const tt_conv_shape *s)
{
    return s->batch * (s->cin * s->in_plane + s->cout * s->out_plane);
}

static int w4_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    int ok = tt_conv_winograd_shape(s) && s->cin % 16 == 0 && s->cout % 16 == 0 &&
             pack_floats(s) <= W4_PACK_FLOATS;
    if (dir == TT_CONV_DIR_BACKWARD_DATA) return ok && s->ph <= 2 && s->pw <= 2;
    return ok;
}

#define W4_STR(x) #x
#define W4_TEXT(x) W4_STR(x)
/* The fused kernels' bounds, in every build of the program */
#define W4F_LIMITS \
    " -DTT_W4F_MAX_CIN=" W4_TEXT(TT_W4F_MAX_CIN) " -DTT_W4F_MAX_WEIGHT=" W4_TEXT(TT_W4F_MAX_WEIGHT)

/* A product's work-item: `vectors` float16 vectors of the channels in its
 * lanes (as many as divide them, up to `most`) by `tiles` tiles
 * (wino4_product) or W4_WCO output channels (wino4_weight_product, most
 * 2): 16 to 24 accumulators; and the program's defines. */
typedef struct w4_form {
    size_t vectors, tiles;
    char options[128];
} w4_form;

static w4_form form_of(size_t channels, size_t most)
{
    w4_form f;
    f.vectors = channels % 64 == 0 && most >= 4 ? 4 : channels % 32 == 0 ? 2 : 1;
    f.tiles = f.vectors == 4 ? 6 : f.vectors == 2 ? 8 : W4_MAX_TILES;
    snprintf(f.options, sizeof f.options, "-DTT_W4_VECTORS=%zu -DTT_W4_TILES=%zu -DTT_W4_WCO=%d%s",
             f.vectors, f.tiles, W4_WCO, W4F_LIMITS);
    return f;
}

/* The transforms' and fused kernels' program (they read none of the
 * products' blocks). */
const char *const tt_wino4_options = "-DTT_W4_VECTORS=1 -DTT_W4_TILES=" W4_TEXT(
    W4_MAX_TILES) " -DTT_W4_WCO=" W4_TEXT(W4_WCO) W4F_LIMITS;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static size_t tiles_of(size_t batch, size_t oh, size_t ow)
{
    return batch * ((oh + 3) / 4) * ((ow + 3) / 4);
}

/* Tiles of a chunk of `total` tiles, rows of `tiles_w`, with `ci` and `co`
 * channels: whole rows, as many as W4_CHUNK_FLOATS hold or as U holds,
 * whichever is more (every chunk reads all of U again), at least one row;
 * `forced` tiles (a desc's blocks.w4_chunk_tiles): as many rows as that
 * many tiles hold. */
static size_t chunk_of(size_t total, size_t tiles_w, size_t ci, size_t co, int forced)
{
    size_t cap = W4_CHUNK_FLOATS / (36 * (ci + co)), as_u = ci * co / (ci + co);
    if (cap < as_u) cap = as_u;
    if (forced > 0) cap = (size_t)forced;
    cap = cap < tiles_w ? tiles_w : cap / tiles_w * tiles_w;
    return total < cap ? total : cap;
}

/* The workspace: U (or dU), the packed images, and the V and M of the
 * largest chunk rounded up to the product's work-items (at most
 * W4_MAX_TILES - 1 more tiles). */
static size_t w4_workspace_bytes(const tt_conv_shape *s)
{
    size_t fwd = chunk_of(tiles_of(s->batch, s->oh, s->ow), (s->ow + 3) / 4, s->cin, s->cout,
                          s->blocks.w4_chunk_tiles);
    size_t bwd = chunk_of(tiles_of(s->batch, s->h, s->w), (s->w + 3) / 4, s->cin, s->cout,
                          s->blocks.w4_chunk_tiles);
    size_t chunk = (fwd > bwd ? fwd : bwd) + W4_MAX_TILES - 1;
    return (36 * (s->cin * s->cout + chunk * (s->cin + s->cout)) + pack_floats(s)) *
           sizeof(float);
}

/* `images` images (images, channels, h, w) packed into dst (wino4_pack). */
static tt_status launch_pack(tt_backend *be, tt_mem dst, tt_mem src, size_t images,
                             size_t channels, size_t h, size_t w)
{
    size_t global[3] = {(w + 15) / 16, h, images * channels / 16};
    return tt_launch_kernel(be, "conv_winograd4", "wino4_pack", tt_wino4_options, 3, global,
                            local_single,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src), tt_arg_i32((int)h),
                                    tt_arg_i32((int)w)));
}

/* One product: out (N, co, oh, ow) [+]= winograd(inp (N, ci, h, w), U) with
 * the given padding; U is already in ws. */
typedef struct w4_product {
    size_t batch, ci, h, w, co, oh, ow, pad_h, pad_w;
    int chunk_tiles; /* the desc's blocks.w4_chunk_tiles (0: chunk_of's own) */
} w4_product;

/* V of tiles t0 .. t0 + tiles - 1 of `total` over an (oh, ow) output grid. */
static tt_status launch_input(tt_backend *be, tt_mem v, tt_mem inp, size_t channels, size_t h,
                              size_t w, size_t pad_h, size_t pad_w, size_t oh, size_t ow,
                              size_t t0, size_t total, size_t tiles)
{
    size_t global[2] = {channels / 16, tiles};
    return tt_launch_kernel(
        be, "conv_winograd4", "wino4_input", tt_wino4_options, 2, global, local_tiles,
        TT_ARGS(tt_arg_mem(v), tt_arg_mem(inp), tt_arg_i32((int)channels), tt_arg_i32((int)h),
                tt_arg_i32((int)w), tt_arg_i32((int)pad_h), tt_arg_i32((int)pad_w),
                tt_arg_i32((int)((oh + 3) / 4)), tt_arg_i32((int)((ow + 3) / 4)),
                tt_arg_i32((int)t0), tt_arg_i32((int)total), tt_arg_i32((int)tiles)));
}

static tt_status run_product(tt_backend *be, tt_mem out, tt_mem inp, tt_mem bias,
                             const w4_product *p, tt_mem ws, int accumulate)
{
    size_t tiles_w = (p->ow + 3) / 4, total = tiles_of(p->batch, p->oh, p->ow);
    size_t chunk = chunk_of(total, tiles_w, p->ci, p->co, p->chunk_tiles);
    w4_form form = form_of(p->co, 4);
    tt_mem u = ws;
    tt_mem packed = tt_mem_f32(ws, 36 * p->co * p->ci);
    tt_mem v = tt_mem_f32(packed, p->batch * p->ci * p->h * p->w);
    tt_mem m = tt_mem_f32(v, 36 * round_up(chunk, form.tiles) * p->ci);
    tt_mem bias_mem = bias.buffer ? bias : inp; /* any valid buffer; unread */
    TT_TRY(launch_pack(be, packed, inp, p->batch, p->ci, p->h, p->w));
    for (size_t t0 = 0; t0 < total; t0 += chunk) {
        size_t count = total - t0 < chunk ? total - t0 : chunk;
        size_t tiles = round_up(count, form.tiles);
        TT_TRY(launch_input(be, v, packed, p->ci, p->h, p->w, p->pad_h, p->pad_w, p->oh, p->ow, t0,
                            total, tiles));
        size_t gprod[3] = {tiles / form.tiles, p->co / (16 * form.vectors), 36};
        TT_TRY(tt_launch_kernel(be, "conv_winograd4", "wino4_product", form.options, 3,
                                gprod, local_products,
                                TT_ARGS(tt_arg_mem(m), tt_arg_mem(v), tt_arg_mem(u),
                                        tt_arg_i32((int)p->ci), tt_arg_i32((int)p->co),
                                        tt_arg_i32((int)tiles))));
        size_t gout[3] = {p->co / 16, count / tiles_w, (tiles_w + 3) / 4};
        TT_TRY(tt_launch_kernel(
            be, "conv_winograd4", "wino4_output", tt_wino4_options, 3, gout, local_single,
            TT_ARGS(tt_arg_mem(out), tt_arg_mem(m), tt_arg_mem(bias_mem),
                    tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate),
                    tt_arg_i32((int)p->co), tt_arg_i32((int)p->oh), tt_arg_i32((int)p->ow),
                    tt_arg_i32((int)((p->oh + 3) / 4)), tt_arg_i32((int)((p->ow + 3) / 4)),
                    tt_arg_i32((int)t0), tt_arg_i32((int)tiles),
                    tt_arg_i32((int)(count / tiles_w)))));
    }
    return NULL;
}

tt_status tt_wino4_weight_transform(tt_backend *be, tt_mem u, tt_mem weight, size_t cout,
                                    size_t cin, int flip)
{
    size_t global[2] = {cout / 16, cin};
    return tt_launch_kernel(be, "conv_winograd4", "wino4_weight", tt_wino4_options, 2, global,
                            local_tiles,
                            TT_ARGS(tt_arg_mem(u), tt_arg_mem(weight), tt_arg_i32((int)cout),
                                    tt_arg_i32((int)cin), tt_arg_i32(flip)));
}

tt_status tt_wino4_weight_finish(tt_backend *be, tt_mem dweight, tt_mem du, size_t cin,
                                 size_t cout, size_t parts)
{
    size_t global[2] = {cin / 16, cout};
    return tt_launch_kernel(be, "conv_winograd4", "wino4_weight_finish", tt_wino4_options, 2,
                            global, local_tiles,
                            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(du), tt_arg_i32((int)cin),
                                    tt_arg_i32((int)cout), tt_arg_i32((int)parts)));
}

static tt_status w4_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                            const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    TT_TRY(tt_wino4_weight_transform(be, ws, weight, s->cout, s->cin, 0));
    w4_product p = {s->batch, s->cin, s->h, s->w, s->cout, s->oh, s->ow, s->ph, s->pw,
                    s->blocks.w4_chunk_tiles};
    return run_product(be, out, inp, bias, &p, ws, accumulate);
}

static tt_status w4_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    /* dinp[ci] = sum_co correlate(dout[co] padded by 2 - pad, flip(w[co, ci])) */
    TT_TRY(tt_wino4_weight_transform(be, ws, weight, s->cin, s->cout, 1));
    w4_product p = {s->batch, s->cout, s->oh, s->ow, s->cin, s->h, s->w, 2 - s->ph, 2 - s->pw,
                    s->blocks.w4_chunk_tiles};
    return run_product(be, dinp, dout, (tt_mem){0}, &p, ws, accumulate);
}

/* The weight gradient over chunks of tiles: dU stored and folded
 * (wino4_weight_product, then wino4_weight_finish), or with `sum` folded
 * into the taps as it is summed (wino4_weight_sum). */
static tt_status weight_gradient(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                 const tt_conv_shape *s, tt_mem ws, int sum)
{
    size_t total = tiles_of(s->batch, s->oh, s->ow);
    size_t chunk = chunk_of(total, (s->ow + 3) / 4, s->cin, s->cout,
                          s->blocks.w4_chunk_tiles);
    w4_form form = form_of(s->cin, 2);
    tt_mem du = ws;
    tt_mem packed_inp = tt_mem_f32(ws, 36 * s->cout * s->cin);
    tt_mem packed_dout = tt_mem_f32(packed_inp, s->batch * s->cin * s->in_plane);
    tt_mem v = tt_mem_f32(packed_dout, s->batch * s->cout * s->out_plane);
    tt_mem dm = tt_mem_f32(v, 36 * chunk * s->cin);
    int tiles_h = (int)((s->oh + 3) / 4), tiles_w = (int)((s->ow + 3) / 4);
    TT_TRY(launch_pack(be, packed_inp, inp, s->batch, s->cin, s->h, s->w));
    TT_TRY(launch_pack(be, packed_dout, dout, s->batch, s->cout, s->oh, s->ow));
    for (size_t t0 = 0; t0 < total; t0 += chunk) {
        size_t count = total - t0 < chunk ? total - t0 : chunk, tiles = count;
        TT_TRY(launch_input(be, v, packed_inp, s->cin, s->h, s->w, s->ph, s->pw, s->oh, s->ow, t0,
                            total, tiles));
        size_t gdout[2] = {s->cout / 16, tiles};
        TT_TRY(tt_launch_kernel(
            be, "conv_winograd4", "wino4_dout", tt_wino4_options, 2, gdout, local_tiles,
            TT_ARGS(tt_arg_mem(dm), tt_arg_mem(packed_dout), tt_arg_i32((int)s->cout),
                    tt_arg_i32((int)s->oh), tt_arg_i32((int)s->ow), tt_arg_i32(tiles_h),
                    tt_arg_i32(tiles_w), tt_arg_i32((int)t0), tt_arg_i32((int)total),
                    tt_arg_i32((int)tiles))));
        if (sum) {
            size_t gsum[2] = {s->cin / (16 * form.vectors), s->cout / W4_WCO};
            TT_TRY(tt_launch_kernel(be, "conv_winograd4", "wino4_weight_sum", form.options, 2,
                                    gsum, local_single,
                                    TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dm), tt_arg_mem(v),
                                            tt_arg_i32((int)s->cin), tt_arg_i32((int)s->cout),
                                            tt_arg_i32((int)tiles))));
            continue;
        }
        size_t gprod[3] = {s->cin / (16 * form.vectors), s->cout / W4_WCO, 36};
        TT_TRY(tt_launch_kernel(be, "conv_winograd4", "wino4_weight_product", form.options, 3,
                                gprod, local_products,
                                TT_ARGS(tt_arg_mem(du), tt_arg_mem(dm), tt_arg_mem(v),
                                        tt_arg_i32((int)s->cin), tt_arg_i32((int)s->cout),
                                        tt_arg_i32((int)tiles))));
        TT_TRY(tt_wino4_weight_finish(be, dweight, du, s->cin, s->cout, 1));
    }
    return NULL;
}

static tt_status w4_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                    const tt_conv_shape *s, tt_mem ws)
{
    return weight_gradient(be, dweight, dout, inp, s, ws, 0);
}

static tt_status sum_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                     const tt_conv_shape *s, tt_mem ws)
{
    return weight_gradient(be, dweight, dout, inp, s, ws, 1);
}

const tt_conv_algo_impl tt_conv_winograd4_impl = {
    .program = "conv_winograd4",
    /* code for PoCL: a work-item per group, the transforms in private
     * memory, which a GPU would spill */
    .tuned_on = TT_TUNED_CL_CPU,
    .supports = w4_supports,
    .workspace_bytes = w4_workspace_bytes,
    .forward = w4_forward,
    .backward_data = w4_backward_data,
    .backward_weight = w4_backward_weight,
};

const tt_conv_algo_impl tt_conv_winograd4_sum_impl = {
    .program = "conv_winograd4",
    .tuned_on = TT_TUNED_CL_CPU, /* as winograd4x4 */
    .supports = w4_supports,
    .workspace_bytes = w4_workspace_bytes,
    .backward_weight = sum_backward_weight,
};
