/* conv_transpose2d with a kernel that tiles its output: host side of
 * opencl/convt_tiles.cl (see convt_tiles.h). */
#include "ops/convt_tiles.h"

#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/status.h"
#include "ops/conv_algo.h"

#define TILES_WG_MAX 256 /* cap of the backward-weight work-group */
#define TILES_WCIB 2     /* input channels per work-item, backward weight w8 */

typedef struct tiles_params {
    size_t cob, cib, wg, row;
    char options[160];
} tiles_params;

/* The 8-wide kernels where asked for and the kernel is 2 wide (the even
 * and odd output columns of a float16); scalar otherwise. */
static int use_w8(const tt_convt_tiles *g)
{
    return g->w8 && g->kw == 2;
}

const char *tt_convt_tiles_program(const tt_convt_tiles *g, int w16)
{
    return w16 ? "convt_tiles_w16" : use_w8(g) ? "convt_tiles_w8" : "convt_tiles";
}

/* Launch parameters from the device's limits; the kernel size is compiled
 * in, so each size is its own program. */
static tiles_params params_of(const tt_backend *be, const tt_convt_tiles *g)
{
    tiles_params p;
    size_t taps = g->kh * g->kw;
    p.cob = taps >= 8 ? 1 : 8 / taps; /* about 8 accumulators per work-item */
    p.cib = use_w8(g) ? 8 : 4;
    size_t max_wg = tt_device_group_max(be);
    size_t local_floats = (size_t)(be->device.local_mem_bytes / sizeof(float));
    p.wg = tt_pow2_floor(max_wg < TILES_WG_MAX ? max_wg : TILES_WG_MAX);
    while (p.wg > 1 && taps * p.wg > local_floats / 2) p.wg /= 2;
    /* work-items along a row per group: few groups (each costs a launch on
     * a CPU runtime), none mostly past the edge */
    size_t columns = use_w8(g) ? (g->w + 7) / 8 : g->w;
    p.row = tt_pow2_floor(max_wg < 64 ? max_wg : 64);
    while (p.row > 1 && p.row / 2 >= columns) p.row /= 2;
    snprintf(p.options, sizeof p.options,
             "-DTT_CONVT_KH=%zu -DTT_CONVT_KW=%zu -DTT_CONVT_COB=%zu -DTT_CONVT_CIB=%zu "
             "-DTT_CONVT_WG=%zu -DTT_CONVT_WCIB=%d",
             g->kh, g->kw, p.cob, p.cib, p.wg, TILES_WCIB);
    return p;
}

#define GEOMETRY_ARGS(g)                                                             \
    tt_arg_i32((int)(g)->batch), tt_arg_i32((int)(g)->cin), tt_arg_i32((int)(g)->h), \
        tt_arg_i32((int)(g)->w), tt_arg_i32((int)(g)->cout)

#define W16_COLUMNS 64 /* input columns per work-item (CONVT16_COLUMNS) */

tt_status tt_convt_tiles_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                 tt_mem bias, const tt_convt_tiles *g, int w16)
{
    if (w16) {
        char options[32];
        snprintf(options, sizeof options, "-DTT_CONVT_KH=%zu", g->kh);
        size_t global[3] = {g->cout, (g->w + W16_COLUMNS - 1) / W16_COLUMNS, g->batch * g->h};
        size_t local[3] = {g->cout < 8 ? g->cout : 8, 1, 1}; /* global rounded up */
        return tt_launch_kernel(be, "convt_tiles_w16", "convt_tiles_forward_w16", options, 3,
                                global, local,
                                TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                        tt_arg_mem(bias.buffer ? bias : weight),
                                        tt_arg_i32(bias.buffer != NULL), GEOMETRY_ARGS(g)));
    }
    tiles_params p = params_of(be, g);
    int w8 = use_w8(g);
    size_t blocks = (g->cout + p.cob - 1) / p.cob;
    size_t global[3] = {w8 ? (g->w + 7) / 8 : g->w, g->h, g->batch * blocks};
    size_t local[3] = {p.row, 1, 1};
    return tt_launch_kernel(be, tt_convt_tiles_program(g, 0), w8 ? "convt_tiles_forward_w8" : "convt_tiles_forward",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias.buffer ? bias : weight),
                                    tt_arg_i32(bias.buffer != NULL), GEOMETRY_ARGS(g)));
}

tt_status tt_convt_tiles_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                       const tt_convt_tiles *g)
{
    tiles_params p = params_of(be, g);
    int w8 = use_w8(g);
    size_t blocks = (g->cin + p.cib - 1) / p.cib;
    size_t global[3] = {w8 ? (g->w + 7) / 8 : g->w, g->h, g->batch * blocks};
    size_t local[3] = {p.row, 1, 1};
    return tt_launch_kernel(be, tt_convt_tiles_program(g, 0),
                            w8 ? "convt_tiles_backward_data_w8" : "convt_tiles_backward_data",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    GEOMETRY_ARGS(g)));
}

/* An invocation of the weight gradient loops over every image and its rows
 * [row0, row0 + rows): past TT_LOOP_BUDGET steps the rows run as several
 * launches, each adding into dweight, in the same order on every backend.
 * A w8 row costs 2 steps a vector of 8 columns (at most), a work-group's
 * row W / WG; each image and row one more. */
static size_t weight_rows_per_launch(const tt_convt_tiles *g, int w8, size_t wg)
{
    size_t per_image = TT_LOOP_BUDGET / g->batch > 1 ? TT_LOOP_BUDGET / g->batch - 1 : 1;
    size_t rows = w8 ? per_image / (2 + 2 * ((g->w + 7) / 8)) : per_image * wg / (g->w + wg);
    return rows < 1 ? 1 : rows > g->h ? g->h : rows;
}

tt_status tt_convt_tiles_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                         const tt_convt_tiles *g)
{
    tiles_params p = params_of(be, g);
    int w8 = use_w8(g);
    size_t rows = weight_rows_per_launch(g, w8, p.wg);
    size_t global[1] = {w8 ? (g->cin + TILES_WCIB - 1) / TILES_WCIB * g->cout
                           : g->cin * g->cout * p.wg};
    size_t local[1] = {p.wg};
    for (size_t row0 = 0; row0 < g->h; row0 += rows)
        TT_TRY(tt_launch_kernel(
            be, tt_convt_tiles_program(g, 0), w8 ? "convt_tiles_backward_weight_w8" : "convt_tiles_backward_weight",
            p.options, 1, global, w8 ? NULL : local,
            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp), GEOMETRY_ARGS(g),
                    tt_arg_i32((int)row0), tt_arg_i32((int)rows))));
    return NULL;
}
