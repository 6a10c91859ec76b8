/*
 * The WINOGRAD4X4_FUSED algorithm: F(4x4, 3x3) for narrow layers, with the
 * transforms and the products in one kernel (wino4_fused in
 * opencl/conv_winograd4.cl).  The lanes of a float16 are 16 tiles of a
 * row, so the transforms are whole-vector arithmetic, and only the input,
 * U and the output pass through memory.  WINOGRAD4X4 instead stores V and
 * M for the whole batch, which costs more traffic than its products save
 * where the channels are few (16-32).  A 4x4 tile costs 36 products a
 * channel pair against the direct kernels' 144.
 *
 *   forward        U = transform(weight); out = the fused kernel over
 *                  rows of 16 tiles, padding 1 (+ bias)
 *   backward data  the same over dout with the flipped, transposed kernel
 *                  (padding 2 - 1 = 1), adding into dinp or over it
 *   backward weight  each work-item a column of 16 tiles over a share of
 *                  the batch's tile rows: V and dM of a row in private
 *                  memory, dU[e] += dMᵀ V into its own part (tiles
 *                  turned into lanes of channels, w4_transpose); then
 *                  dweight += Gᵀ (the parts' sum) G (wino4_weight_finish)
 *
 * Shapes: 3x3, stride 1, dilation 1, groups 1, padding 1, any H and W
 * (the tiles past the plane compute on zeros, unstored: where W is far
 * from a multiple of 64 the lanes run part empty); the product's output
 * channels a multiple of 16 and its
 * input channels at most TT_W4F_MAX_CIN (the kernel's private V holds
 * 36 x 16 floats of each); for the weight gradient both channel counts a
 * multiple of 16 and Cin Cout at most TT_W4F_MAX_WEIGHT (a work-item's dU).
 * Workspace: U, 36 Cin Cout floats, or the weight gradient's parts (36
 * Cin Cout each, parts_of).  OpenCL only, with the conv_winograd4 program
 * (conv_algo.c).
 */
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/conv_winograd4.h"

#define WF_ITEMS 16             /* the weight gradient's work-items, about: 8 a core of two */

static const size_t local_single[3] = {1, 1, 1};

static int wf_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    int ok = tt_conv_winograd_shape(s) && s->ph == 1 && s->pw == 1;
    if (dir == TT_CONV_DIR_BACKWARD_WEIGHT)
        return ok && s->cin % 16 == 0 && s->cout % 16 == 0 && s->cin * s->cout <= TT_W4F_MAX_WEIGHT;
    size_t ci = dir == TT_CONV_DIR_FORWARD ? s->cin : s->cout;
    size_t co = dir == TT_CONV_DIR_FORWARD ? s->cout : s->cin;
    return ok && co % 16 == 0 && ci <= TT_W4F_MAX_CIN;
}

/* The weight gradient's split: `rows` tile rows a work-item, `slices`
 * work-items down each column of 64, `parts` of dU in all. */
typedef struct wf_split {
    size_t groups, total_rows, rows, slices, parts;
} wf_split;

static wf_split split_of(const tt_conv_shape *s)
{
    wf_split p;
    p.groups = (s->w + 63) / 64;
    p.total_rows = s->batch * ((s->h + 3) / 4);
    size_t rows = p.total_rows > 0 ? p.total_rows : 1; /* an empty batch: one empty part */
    size_t want = (WF_ITEMS + p.groups - 1) / p.groups;
    if (want > rows) want = rows;
    p.rows = (rows + want - 1) / want;
    p.slices = (rows + p.rows - 1) / p.rows;
    p.parts = p.groups * p.slices;
    return p;
}

static size_t wf_workspace_bytes(const tt_conv_shape *s)
{
    /* the weight gradient's parts; U (forward, input gradient) is one */
    return 36 * s->cin * s->cout * split_of(s).parts * sizeof(float);
}

/* out (batch, co, h, w) [+]= the fused kernel over inp (batch, ci, h, w)
 * with U in u. */
static tt_status run_fused(tt_backend *be, tt_mem out, tt_mem inp, tt_mem u, tt_mem bias,
                           size_t batch, size_t ci, size_t co, size_t h, size_t w, int accumulate)
{
    size_t global[3] = {(w + 63) / 64, (h + 3) / 4, batch};
    tt_mem bias_mem = bias.buffer ? bias : inp; /* any valid buffer; unread */
    return tt_launch_kernel(be, "conv_winograd4", "wino4_fused", tt_wino4_options, 3, global,
                            local_single,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(u),
                                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                                    tt_arg_i32(accumulate), tt_arg_i32((int)ci),
                                    tt_arg_i32((int)co), tt_arg_i32((int)h),
                                    tt_arg_i32((int)w)));
}

static tt_status wf_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                            const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    TT_TRY(tt_wino4_weight_transform(be, ws, weight, s->cout, s->cin, 0));
    return run_fused(be, out, inp, ws, bias, s->batch, s->cin, s->cout, s->h, s->w, accumulate);
}

static tt_status wf_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    TT_TRY(tt_wino4_weight_transform(be, ws, weight, s->cin, s->cout, 1));
    return run_fused(be, dinp, dout, ws, (tt_mem){0}, s->batch, s->cout, s->cin, s->oh, s->ow,
                     accumulate);
}

static tt_status wf_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                    const tt_conv_shape *s, tt_mem ws)
{
    wf_split p = split_of(s);
    size_t global[3] = {p.groups, p.slices, 1};
    TT_TRY(tt_launch_kernel(be, "conv_winograd4", "wino4_fused_weight", tt_wino4_options, 3,
                            global, local_single,
                            TT_ARGS(tt_arg_mem(ws), tt_arg_mem(inp), tt_arg_mem(dout),
                                    tt_arg_i32((int)s->cin), tt_arg_i32((int)s->cout),
                                    tt_arg_i32((int)s->h), tt_arg_i32((int)s->w),
                                    tt_arg_i32((int)p.total_rows), tt_arg_i32((int)p.rows))));
    return tt_wino4_weight_finish(be, dweight, ws, s->cin, s->cout, p.parts);
}

const tt_conv_algo_impl tt_conv_winograd4_fused_impl = {
    .program = "conv_winograd4",
    .tuned_on = TT_TUNED_CL_CPU, /* as winograd4x4: code for PoCL */
    .supports = wf_supports,
    .workspace_bytes = wf_workspace_bytes,
    .forward = wf_forward,
    .backward_data = wf_backward_data,
    .backward_weight = wf_backward_weight,
};
