/*
 * The DIRECT convolution algorithms: forward, backward-data and
 * backward-weight as plain loops, groups = 1, any kernel, stride, padding
 * and dilation.  Meant for the small channel counts of the UNet (3..128),
 * where im2col's columns cost more than they save.  Three rows of
 * TT_CONV_ALGO_ROWS, which the autotuner times where they can win:
 *   direct        opencl/conv_direct.cl with TT_DIRECT_VW 1: one column per
 *                 work-item (GPUs, Vulkan's CPU device)
 *   direct_tiled  the forward stages input tiles and the block's weights in
 *                 local memory (global reads are what costs on GPUs); its
 *                 backward is direct's, which it does not time
 *   direct_w8     the same source with TT_DIRECT_VW 8 (the program
 *                 conv_direct_w8, OpenCL's alone), stride 1 along W: 8
 *                 columns per work-item as float8, so the SIMD units are used whatever
 *                 the runtime vectorises (OpenCL CPUs); a stride along W
 *                 runs direct's kernels, so that the row, like direct,
 *                 takes every shape without a workspace
 * The 3x3 and 7x7 kernels of 16 columns a work-item are another row,
 * direct_w16 (conv_direct_w16.c).  Work-group sizes come from the device
 * (CL_DEVICE_MAX_WORK_GROUP_SIZE and the local memory size), never from an
 * assumed warp width.
 */
#include <math.h>
#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/device_traits.h"

/* Compile-time sizes of the kernels, which have no defaults of their own:
 * every launch passes these and the per-device ones below as -D defines
 * (direct_params.options). */
#define DIRECT_TAPS 9     /* kernel taps per work-group (backward weight) */
#define DIRECT_WCOB 4     /* output channels per work-group (backward weight) */
#define DIRECT_WG_MAX 256 /* cap of the backward-weight work-group */
#define DIRECT_COB 16     /* channels per work-item (scalar and tiled) */
#define DIRECT_COB_W8 8   /* channels per work-item (w8) */

typedef enum direct_kind { DIRECT_SCALAR, DIRECT_TILED, DIRECT_W8 } direct_kind;

/* Per-device launch parameters, derived from the device's limits. */
typedef struct direct_params {
    const char *program; /* conv_direct, or conv_direct_w8 */
    size_t cob, cib;     /* channels per work-item: forward (out), backward data (in) */
    size_t wg;           /* backward weight: a power of two */
    size_t tw, th;       /* tiled forward work-group */
    size_t row;          /* untiled kernels: work-items along W per group */
    size_t kxb;          /* backward weight (w8): kernel columns per work-item */
    char options[256];   /* the -D defines for the program: all of them */
} direct_params;

static direct_params params_within(const tt_backend *be, const tt_conv_shape *s,
                                   direct_kind kind, size_t group_cap)
{
    direct_params p;
    /* channels per work-item, both directions: one block a program, not
     * one a shape, so that a device builds the program once for every
     * layer (a layer with fewer channels computes the block's rest on
     * zeros, unstored); w8 keeps 8 float8 accumulators, which fill the
     * registers */
    p.cob = p.cib = kind == DIRECT_W8 ? DIRECT_COB_W8 : DIRECT_COB;
    size_t max_wg = tt_device_group_max(be);
    if (group_cap && group_cap < max_wg) max_wg = group_cap;
    size_t local_floats = (size_t)(be->device.local_mem_bytes / sizeof(float));
    p.wg = tt_pow2_floor(max_wg < DIRECT_WG_MAX ? max_wg : DIRECT_WG_MAX);
    while (p.wg > 1 && DIRECT_WCOB * DIRECT_TAPS * p.wg > local_floats / 2) p.wg /= 2;
    p.tw = max_wg < 16 ? max_wg : 16;
    p.th = max_wg / p.tw < 8 ? max_wg / p.tw : 8;
    if (p.th < 1) p.th = 1;
    p.row = tt_pow2_floor(max_wg < 64 ? max_wg : 64);
    p.kxb = s->kw < 3 ? s->kw : 3;
    if (kind == DIRECT_W8) {
        p.program = "conv_direct_w8";
        snprintf(p.options, sizeof p.options,
                 "-DTT_DIRECT_VW=8 -DTT_DIRECT_COB=%zu -DTT_DIRECT_CIB=%zu -DTT_DIRECT_KXB=%zu "
                 "-DTT_DIRECT_WCOB=%d",
                 p.cob, p.cib, p.kxb, DIRECT_WCOB);
    } else {
        p.program = "conv_direct";
        snprintf(p.options, sizeof p.options,
                 "-DTT_DIRECT_VW=1 -DTT_DIRECT_COB=%zu -DTT_DIRECT_CIB=%zu -DTT_DIRECT_WG=%zu "
                 "-DTT_DIRECT_TW=%zu -DTT_DIRECT_TH=%zu -DTT_DIRECT_TAPS=%d -DTT_DIRECT_WCOB=%d",
                 p.cob, p.cib, p.wg, p.tw, p.th, DIRECT_TAPS, DIRECT_WCOB);
    }
    return p;
}

static direct_params params_of(const tt_backend *be, const tt_conv_shape *s, direct_kind kind)
{
    return params_within(be, s, kind, 0);
}

/* The parameters of `kernel`, whose work-group is a define (the tiled
 * forward's tile, the weight gradient's group): the device's, or where
 * the kernel built with them allows fewer work-items (its registers),
 * built again with groups of at most that many. */
static direct_params params_for(tt_backend *be, const tt_conv_shape *s, direct_kind kind,
                                const char *kernel)
{
    direct_params p = params_of(be, s, kind);
    for (;;) {
        size_t group = kind == DIRECT_TILED ? p.tw * p.th : p.wg;
        size_t most = tt_kernel_work_group_limit(be, p.program, kernel, p.options);
        if (kind == DIRECT_W8 || group <= most || group <= 1) return p;
        p = params_within(be, s, kind, tt_pow2_floor(most));
    }
}

/* The tiled forward's input tile and weight block, in floats. */
static size_t tile_floats(const direct_params *p, const tt_conv_shape *s, size_t *tile_w,
                          size_t *tile_h)
{
    *tile_w = (p->tw - 1) * s->sw + (s->kw - 1) * s->dw + 1;
    *tile_h = (p->th - 1) * s->sh + (s->kh - 1) * s->dh + 1;
    return *tile_w * *tile_h + p->cob * s->kh * s->kw;
}

/* Whether the tiled forward runs: a real tile, a plane that fills at
 * least half its width and half its height (on a smaller one most of the
 * group would compute outputs past the edge, and the scalar kernel runs
 * instead), and room for it. */
static int tiles_fit(const tt_backend *be, const tt_conv_shape *s)
{
    direct_params p = params_of(be, s, DIRECT_TILED);
    size_t w, h;
    return p.tw * p.th > 1 && 2 * (size_t)s->ow >= p.tw && 2 * (size_t)s->oh >= p.th &&
           tile_floats(&p, s, &w, &h) * sizeof(float) <= be->device.local_mem_bytes / 2;
}

static int direct_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return s->groups == 1;
}

/* The share of the scalar weight gradient's work that is products kept,
 * by its cost model: a work-group of wg work-items sums the N OH OW pixels
 * of one input channel in ceil(pixels / wg) steps of TAPS x WCOB products
 * each, then reduces them in local memory in log2(wg) more steps of that
 * size; its work-items past the pixels and its taps past the kernel's
 * compute nothing kept. */
double tt_conv_direct_weight_share(const tt_conv_shape *s, size_t wg)
{
    double pixels = (double)s->batch * (double)s->oh * (double)s->ow;
    double steps = ceil(pixels / (double)wg), levels = 0;
    for (size_t w = wg; w > 1; w /= 2) levels++;
    size_t taps = s->kh * s->kw, chunks = (taps + DIRECT_TAPS - 1) / DIRECT_TAPS;
    return pixels / (steps * (double)wg) * steps / (steps + levels) * (double)taps /
           (double)(chunks * DIRECT_TAPS);
}

/* Not on an OpenCL CPU, where direct_w8 runs stride 1 and the scalar
 * kernels that take stride 2 won none of ResNet's picks (its 1x1 stride-2
 * shortcut went to implicit_gemm, the stride-2 3x3 and the stem to the
 * 16-wide kernels) while a weight gradient took them 1.5 to 5.8 s against
 * milliseconds for the others (docs/ops.md).  Nor the weight gradient
 * where under an eighth of its work is products kept (a deep layer's small
 * planes, a 1x1 kernel): the GEMMs keep their work-items on the products,
 * so it would have to run each 8 times as fast. */
static int direct_can_win(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir)
{
    if (tt_device_traits_of(be).opencl_cpu) return 0;
    return dir != TT_CONV_DIR_BACKWARD_WEIGHT ||
           tt_conv_direct_weight_share(s, params_of(be, s, DIRECT_SCALAR).wg) >= 1.0 / 8;
}

/* The forward on a GPU, where its tile fits: its backward is direct's. */
static int tiled_can_win(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir)
{
    return dir == TT_CONV_DIR_FORWARD && tt_device_traits_of(be).gpu && tiles_fit(be, s);
}

/* On CPUs, stride 1 along W (else it is direct): OpenCL's alone (Vulkan
 * lacks the program). */
static int w8_can_win(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return tt_device_traits_of(be).w8 && s->sw == 1;
}

tt_conv_algo tt_conv_direct_row(const tt_backend *be)
{
    tt_device_traits t = tt_device_traits_of(be);
    return t.gpu                                         ? TT_CONV_ALGO_DIRECT_TILED
           : t.w8 && be->kernels_of == TT_BACKEND_OPENCL ? TT_CONV_ALGO_DIRECT_W8
                                                         : TT_CONV_ALGO_DIRECT;
}

/* The work-group of the untiled kernels, which read no local memory: the
 * device's row, no wider than `width` needs nor than the kernel's own
 * limit (registers can hold it below the device's). */
static size_t row_width(tt_backend *be, const direct_params *p, const char *kernel, size_t width)
{
    size_t row = p->row, most = tt_kernel_work_group_limit(be, p->program, kernel, p->options);
    while (row > 1 && (row / 2 >= width || row > most)) row /= 2;
    return row;
}

/* The rows of `rows` one launch runs: as many as keep its multiply-adds,
 * 2 kH kW Cin Cout per pixel of every image over `width` pixels a row,
 * within the device's cap (device_traits.h dispatch_flops); a multiple of
 * `multiple` where it cuts. */
static size_t band_rows(const tt_backend *be, const tt_conv_shape *s, size_t rows, double width,
                        size_t multiple)
{
    double per_row = 2.0 * (double)(s->kh * s->kw * s->cin * s->cout * s->batch) * width;
    size_t band = tt_dispatch_units(be, per_row, rows);
    if (band < rows && multiple > 1) band = band > multiple ? band / multiple * multiple : multiple;
    return band;
}

static tt_status forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const tt_conv_shape *s, int accumulate, direct_kind kind)
{
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    if (kind == DIRECT_TILED && !tiles_fit(be, s)) kind = DIRECT_SCALAR;
    if (kind == DIRECT_W8 && s->sw != 1) kind = DIRECT_SCALAR;
    direct_params p = kind == DIRECT_TILED ? params_for(be, s, kind, "conv_direct_forward_tiled")
                                              : params_of(be, s, kind);
    size_t blocks = (s->cout + p.cob - 1) / p.cob;
    int tiled = kind == DIRECT_TILED;
    size_t band = band_rows(be, s, s->oh, (double)s->ow, tiled ? p.th : 1);
    size_t columns = kind == DIRECT_W8 ? (s->ow + 7) / 8 : s->ow;
    size_t row = tiled ? 0 : row_width(be, &p, "conv_direct_forward", columns);
    for (size_t row0 = 0; row0 < s->oh; row0 += band) {
        size_t rows = s->oh - row0 < band ? s->oh - row0 : band;
        if (tiled) {
            size_t tile_w, tile_h, all = tile_floats(&p, s, &tile_w, &tile_h);
            size_t global[3] = {s->ow, rows, s->batch * blocks}, local[3] = {p.tw, p.th, 1};
            TT_TRY(tt_launch_kernel(
                be, p.program, "conv_direct_forward_tiled", p.options, 3, global, local,
                TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                        tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate),
                        TT_CONV_GEOMETRY_ARGS(s), tt_arg_i32((int)row0),
                        tt_arg_local(tile_w * tile_h * sizeof(float)),
                        tt_arg_local((all - tile_w * tile_h) * sizeof(float)))));
            continue;
        }
        size_t global[3] = {columns, rows, s->batch * blocks}, local[3] = {row, 1, 1};
        TT_TRY(tt_launch_kernel(be, p.program, "conv_direct_forward", p.options, 3, global, local,
                                TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                        tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                                        tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s),
                                        tt_arg_i32((int)row0))));
    }
    return NULL;
}

static tt_status backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                               const tt_conv_shape *s, int accumulate, direct_kind kind)
{
    direct_params p = params_of(be, s, kind);
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    size_t blocks = (s->cin + p.cib - 1) / p.cib;
    size_t columns = kind == DIRECT_W8 ? (s->w + 7) / 8 : s->w;
    /* an input pixel takes kH kW / (sH sW) taps of every output channel */
    size_t band = band_rows(be, s, s->h, (double)s->w / (double)(s->sh * s->sw), 1);
    size_t local[3] = {row_width(be, &p, "conv_direct_backward_data", columns), 1, 1};
    for (size_t row0 = 0; row0 < s->h; row0 += band) {
        size_t global[3] = {columns, s->h - row0 < band ? s->h - row0 : band, s->batch * blocks};
        TT_TRY(tt_launch_kernel(be, p.program, "conv_direct_backward_data", p.options, 3, global,
                                local,
                                TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                        TT_CONV_GEOMETRY_ARGS(s), tt_arg_i32((int)row0))));
    }
    return NULL;
}

/* Output rows a launch of the weight gradient sums: an invocation loops
 * over every image and those rows, a row costing `steps` per vector of 8
 * columns (w8) or per WG columns, each image and row one or two more;
 * past TT_LOOP_BUDGET the rows run as several launches adding into
 * dweight.  Measured on lavapipe: w8 one step a vector (a 1x1 over 600 x
 * 1000 cut at 86%), counted as 2; the work-group kernel between 4 and 8
 * a row of one vector, counted as 2 + 4.  A GPU's cap on a launch's work
 * (band_rows) may cut the rows further. */
static size_t weight_rows_per_launch(const tt_conv_shape *s, size_t columns, size_t steps)
{
    size_t per_image = TT_LOOP_BUDGET / s->batch > 1 ? TT_LOOP_BUDGET / s->batch - 1 : 1;
    size_t rows = per_image / (2 + steps * ((s->ow + columns - 1) / columns));
    return rows < 1 ? 1 : rows > s->oh ? s->oh : rows;
}

static tt_status backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                 const tt_conv_shape *s, direct_kind kind)
{
    direct_params p = params_for(be, s, kind, "conv_direct_backward_weight");
    size_t chunks = (s->kh * s->kw + DIRECT_TAPS - 1) / DIRECT_TAPS;
    int w8 = kind == DIRECT_W8;
    size_t global[3] = {0, 0, 1}, local[3] = {1, 1, 1};
    if (w8) {
        /* (channel block, ci) x (ky, chunk of kx), in work-groups of one:
         * PoCL's vectorising across work-items gets in the way of float8
         * code */
        global[0] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB * s->cin;
        global[1] = s->kh * ((s->kw + p.kxb - 1) / p.kxb);
    } else {
        /* ci x tap chunk x channel block: no dimension past 65535 groups */
        global[0] = s->cin * p.wg;
        global[1] = chunks;
        global[2] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB;
        local[0] = p.wg;
    }
    size_t rows = weight_rows_per_launch(s, w8 ? 8 : p.wg, w8 ? 2 : 4);
    size_t band = band_rows(be, s, s->oh, (double)s->ow, 1);
    if (band < rows) rows = band;
    for (size_t row0 = 0; row0 < s->oh; row0 += rows)
        TT_TRY(tt_launch_kernel(
            be, p.program, w8 ? "conv_direct_backward_weight_w8" : "conv_direct_backward_weight",
            p.options, w8 ? 2 : 3, global, local,
            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp), TT_CONV_GEOMETRY_ARGS(s),
                    tt_arg_i32((int)row0), tt_arg_i32((int)rows))));
    return NULL;
}

/* The rows' entry points: the forward of one kind, and the backward
 * directions of the kinds that have their own (direct_tiled's are
 * direct's: the same functions in its row). */
#define DIRECT_FORWARD(name, kind)                                                             \
    static tt_status name##_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,     \
                                    tt_mem bias, const tt_conv_shape *s, tt_mem ws,            \
                                    int accumulate)                                            \
    {                                                                                          \
        (void)ws;                                                                              \
        return forward(be, out, inp, weight, bias, s, accumulate, kind);                       \
    }
#define DIRECT_ENTRIES(name, kind)                                                             \
    DIRECT_FORWARD(name, kind)                                                                 \
    static tt_status name##_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout,            \
                                          tt_mem weight, const tt_conv_shape *s, tt_mem ws,    \
                                          int accumulate)                                      \
    {                                                                                          \
        (void)ws;                                                                              \
        return backward_data(be, dinp, dout, weight, s, accumulate,                            \
                             kind == DIRECT_W8 && s->sw == 1 ? DIRECT_W8 : DIRECT_SCALAR);     \
    }                                                                                          \
    static tt_status name##_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout,       \
                                            tt_mem inp, const tt_conv_shape *s, tt_mem ws)     \
    {                                                                                          \
        (void)ws;                                                                              \
        return backward_weight(be, dweight, dout, inp, s,                                      \
                               kind == DIRECT_W8 && s->sw == 1 ? DIRECT_W8 : DIRECT_SCALAR);   \
    }
DIRECT_ENTRIES(scalar, DIRECT_SCALAR)
DIRECT_FORWARD(tiled, DIRECT_TILED)
DIRECT_ENTRIES(w8, DIRECT_W8)
#undef DIRECT_ENTRIES
#undef DIRECT_FORWARD

const tt_conv_algo_impl tt_conv_direct_impl = {
    .program = NULL, /* the op's: conv_direct, or convt_tiles */
    .tuned_on = TT_TUNED_ALL,
    .supports = direct_supports,
    .can_win = direct_can_win,
    .forward = scalar_forward,
    .backward_data = scalar_backward_data,
    .backward_weight = scalar_backward_weight,
};

const tt_conv_algo_impl tt_conv_direct_tiled_impl = {
    .program = "conv_direct",
    .tuned_on = TT_TUNED_ELSEWHERE,
    .supports = direct_supports,
    .can_win = tiled_can_win,
    .forward = tiled_forward,
    .backward_data = scalar_backward_data,
    .backward_weight = scalar_backward_weight,
};

const tt_conv_algo_impl tt_conv_direct_w8_impl = {
    .program = "conv_direct_w8", /* a transposed op's tiling shapes: convt_tiles_w8 */
    .tuned_on = TT_TUNED_ALL,
    .supports = direct_supports,
    .can_win = w8_can_win,
    .forward = w8_forward,
    .backward_data = w8_backward_data,
    .backward_weight = w8_backward_weight,
};
