/*
 * The banded UNet step: 16-bit storage with checkpointing and a norm
 * (tt_unet_banded), the one UNet step still written out by hand.
 *
 * With checkpointing a step keeps only the blocks' outputs and makes each
 * block again for its backward, so its memory is that of the largest
 * block's work.  Stored in 16 bits but computed by fp32 kernels, that work
 * would still need its full-size fp32 rooms: a convolution's input and
 * output, the gradient running down the block.  Here no full-size tensor
 * is fp32: every one is stored in 16 bits (tt_unet_band_store: fp32 only
 * at an odd width), the gradients too, and every fp32 kernel runs on row
 * bands of them (ops/band.h): a band of the input (with a row of halo for
 * a 3x3 convolution, zeros past the edges) is widened into a small fp32
 * room, the kernel runs on it as on a tile of its own, and the output
 * rows that read only the band are rounded back into place.  The norms
 * read their 16-bit input and gradients where they are stored and apply
 * their statistics into a band as the next convolution reads it (norm +
 * ReLU fused into its input).  Three band rooms (band_floats each) serve
 * every pass.
 *
 * Forward, per block: conv1 and conv2 stored, each norm's statistics taken
 * over the whole stored tensor, the output (norm2 applied, rounded) kept
 * and an encoder's pool made from the same band.  Backward, per block:
 * conv1 and conv2 made again (".again", the same bits), then the gradient
 * runs in place in the block's `grad` (norm2, conv2's input gradient, norm1)
 * and leaves through conv1's input gradient; a decoder's conv1 reads
 * [up, skip] as two halves (unet_internal.h), up made again from the block
 * below for its recomputation and once more for its weight gradient.
 * The input gradient of a 3x3 convolution is a band's rows complete from
 * the output gradient's band with a halo: in place, each band is written
 * back only after the next band's gradient has been read.  Every
 * convolution is a forward, input-gradient or weight-gradient call of the
 * convolution op on a band's shape; its algorithm as the model's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/knobs.h"
#include "core/status.h"
#include "model/unet_internal.h"
#include "ops/band.h"
#include "ops/batch_norm.h"
#include "ops/cast.h"
#include "ops/max_pool2d.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})
#define FP32 TT_PRECISION_FP32

/* A full-size tensor: where, stored how, (channels, height, width) of an
 * image. */
typedef struct plane {
    tt_mem mem;
    tt_precision p;
    int channels, height, width;
} plane;

static plane plane_of(const tt_unet *u, tt_mem mem, int channels, int height, int width)
{
    return (plane){mem, tt_unet_band_store(u, width), channels, height, width};
}

static plane block_plane(const tt_unet *u, tt_mem mem, const tt_unet_block *b)
{
    return plane_of(u, mem, b->channels, b->height, b->width);
}

/* The gradient at the block's output (stored as values of its width are). */
static plane block_grad(const tt_unet *u, const tt_unet_block *b)
{
    return block_plane(u, b->band.grad, b);
}

static tt_mem room(const tt_unet *u, int k)
{
    return tt_mem_f32(tt_mem_of(u->band_buffer), (size_t)k * u->band_floats);
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* The most channels a band room holds at this level (per row of the
 * level's width): the level's blocks' inputs and outputs, the head's
 * classes at level 0 (an up-convolution's input has twice the channels at
 * half the width and half the rows). */
static int level_channels(const tt_unet *u, int level)
{
    const tt_unet_config *c = &u->config;
    int ch = tt_unet_channels(c, level);
    int in = level ? tt_unet_channels(c, level - 1) : c->in_channels;
    if (level == 0 && c->classes > ch) ch = c->classes;
    return in > ch ? in : ch;
}

#define BAND_LEAST 12

/* $TT_UNET_BAND_ROWS (a test knob): rows of every band, even and at least
 * 2; 0 when unset or not so. */
static int knob_rows(void)
{
    const char *v = tt_knob_str(TT_KNOB_UNET_BAND_ROWS);
    int rows = v ? atoi(v) : 0;
    return rows >= 2 && rows % 2 == 0 ? rows : 0;
}

size_t tt_unet_band_room_floats(const tt_unet *u)
{
    /* a 32nd of a level-0 tensor (a few MiB at full resolution), and at
     * least BAND_LEAST rows of every level with their halo: fewer rows
     * cost more in launches than they save */
    size_t level0 = (size_t)u->capacity * tt_unet_channels(&u->config, 0) * u->height * u->width;
    size_t floats = level0 / 32;
    for (int i = 0; i <= u->config.depth; i++) {
        size_t row = (size_t)u->capacity * level_channels(u, i) * (u->width >> i);
        size_t least = (size_t)(knob_rows() ? knob_rows() : BAND_LEAST) + 2;
        if (floats < least * row) floats = least * row;
    }
    return floats;
}

/* Rows of a band at this level: as many as a room holds for the level's
 * widest tensor with a halo row on each side, even (pools take rows in
 * pairs), at least 2. */
static int band_rows(const tt_unet *u, int level)
{
    int h = u->height >> level, w = u->width >> level;
    int forced = knob_rows();
    if (forced) return forced < h ? forced : h;
    size_t row = (size_t)u->capacity * level_channels(u, level) * (size_t)w;
    size_t rows = u->band_floats / row;
    rows = rows > 4 ? (rows - 2) & ~(size_t)1 : 2;
    return (int)(rows < (size_t)h ? rows : (size_t)h);
}

static tt_band band_of(plane x, int n, int first, int rows, int halo)
{
    return (tt_band){n * x.channels, x.height, x.width, first, rows, halo, 0};
}

static tt_status gather(tt_unet *u, tt_mem dst, plane x, int n, int first, int rows, int halo)
{
    tt_band b = band_of(x, n, first, rows, halo);
    return tt_band_gather(u->be, dst, x.mem, x.p, &b);
}

static tt_status scatter(tt_unet *u, plane x, tt_mem src, int n, int first, int rows, int halo)
{
    tt_band b = band_of(x, n, first, rows, halo);
    return tt_band_scatter(u->be, x.mem, x.p, src, &b);
}

/* ---- norms ---------------------------------------------------------------- */

/* The block's norm k (1 or 2): its input as stored in `x` (conv1 or conv2,
 * forward's or made again), statistics in the forward's saved. */
typedef struct norm_ref {
    tt_unet_block *b;
    int k;
    plane x;
} norm_ref;

static tt_mem norm_saved(const norm_ref *r)
{
    return r->k == 1 ? r->b->saved1 : r->b->saved2;
}
static tt_batch_norm_state *norm_state(const norm_ref *r)
{
    return r->k == 1 ? &r->b->bn1 : &r->b->bn2;
}
static int norm_w(const norm_ref *r) { return r->k == 1 ? r->b->norm1_w : r->b->norm2_w; }
static int norm_b(const norm_ref *r) { return r->k == 1 ? r->b->norm1_b : r->b->norm2_b; }

/* The statistics of the whole stored tensor into saved (training: batch
 * norm's running statistics counted; eval: batch norm has its running
 * ones). */
static tt_status norm_stats(tt_unet *u, const norm_ref *r, int n)
{
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, r->b, n, r->x.p);
        return tt_group_norm_forward(u->be, NONE, norm_saved(r), r->x.mem,
                                     tt_unet_param(u, norm_w(r)), tt_unet_param(u, norm_b(r)), &d);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, r->b, n, r->x.p);
    return tt_batch_norm_forward(u->be, NONE, norm_saved(r), r->x.mem, norm_state(r), &d,
                                 u->training);
}

/* dst (a band) = relu(norm(x)) on the band's rows, zeros past the edges. */
static tt_status norm_band(tt_unet *u, const norm_ref *r, tt_mem dst, int n, int first, int rows,
                           int halo)
{
    tt_band band = band_of(r->x, n, first, rows, halo);
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, r->b, n, r->x.p);
        return tt_group_norm_apply_saved_band(u->be, dst, r->x.mem, norm_saved(r),
                                              tt_unet_param(u, norm_w(r)),
                                              tt_unet_param(u, norm_b(r)), &d, &band);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, r->b, n, r->x.p);
    return tt_batch_norm_apply_saved_band(u->be, dst, r->x.mem, u->training ? norm_saved(r) : NONE,
                                          norm_state(r), &d, &band);
}

/* g (the gradient at the norm's output, stored as g.p) = the gradient at
 * its input, in place; the norm's parameter gradients added. */
static tt_status norm_backward(tt_unet *u, const norm_ref *r, plane g, int n)
{
    tt_mem dw = tt_unet_grad(u, norm_w(r)), db = tt_unet_grad(u, norm_b(r));
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, r->b, n, r->x.p);
        d.grad_precision = g.p;
        return tt_group_norm_backward(u->be, g.mem, dw, db, g.mem, r->x.mem, norm_saved(r),
                                      tt_unet_param(u, norm_w(r)), tt_unet_param(u, norm_b(r)), &d);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, r->b, n, r->x.p);
    d.grad_precision = g.p;
    return tt_batch_norm_backward(u->be, g.mem, dw, db, g.mem, r->x.mem, norm_saved(r),
                                  norm_state(r), &d, 1);
}

/* ---- convolutions on bands ------------------------------------------------ */

/* One input of a convolution: a stored tensor, or (normed) the norm of a
 * stored one; its part of the weight, where its weight gradient goes, and
 * where its input gradient goes (overwritten; in place: the output
 * gradient's own tensor). */
typedef struct source {
    plane x;
    const norm_ref *normed;
    tt_mem weight, dweight;
    plane grad;
    int in_place;
} source;

/* A 3x3 (padding 1) or 1x1 convolution over one or two sources into
 * cout channels at a level. */
typedef struct band_conv {
    int n, cout, k, level, height, width;
    tt_mem bias, dbias;
    source s[2];
    int count;
} band_conv;

static tt_status gather_source(tt_unet *u, tt_mem dst, const source *s, int n, int first, int rows,
                               int halo)
{
    if (s->normed) return norm_band(u, s->normed, dst, n, first, rows, halo);
    return gather(u, dst, s->x, n, first, rows, halo);
}

/* The convolution of source s, a band of `rows_in` input rows: padding
 * pad_h in H, the kernel's in W; no input gradient where s takes none
 * (the image). */
static tt_conv2d_desc band_desc(const tt_unet *u, const band_conv *c, const source *s, int rows_in,
                                int pad_h)
{
    return (tt_conv2d_desc){.batch = c->n, .in_channels = s->x.channels, .in_h = rows_in,
                            .in_w = c->width, .out_channels = c->cout, .kernel_h = c->k,
                            .kernel_w = c->k, .stride_h = 1, .stride_w = 1, .pad_h = pad_h,
                            .pad_w = c->k / 2, .algo = u->conv_algo,
                            .no_input_grad = !s->grad.mem.buffer};
}

/* out = conv(sources) + bias, band by band: a band with its halo, padded
 * as the whole tensor is (the shape the fast 3x3 kernels run), of which
 * the output's own rows read nothing but the band (its halo rows, which
 * read the padding, are not written back). */
static tt_status conv_forward(tt_unet *u, const band_conv *c, plane out)
{
    int halo = c->k / 2, step = band_rows(u, c->level);
    tt_mem in = room(u, 0), res = room(u, 1);
    for (int first = 0; first < c->height; first += step) {
        int rows = min_int(step, c->height - first);
        for (int j = 0; j < c->count; j++) {
            const source *s = &c->s[j];
            TT_TRY(gather_source(u, in, s, c->n, first, rows, halo));
            tt_conv2d_desc d = band_desc(u, c, s, rows + 2 * halo, halo);
            if (j == 0)
                TT_TRY(tt_conv2d_forward(u->be, res, in, s->weight, c->bias, &d,
                                         tt_unet_workspace(u)));
            else
                TT_TRY(tt_conv2d_forward_add(u->be, res, in, s->weight, &d, tt_unet_workspace(u)));
        }
        TT_TRY(scatter(u, out, res, c->n, first, rows, halo));
    }
    return NULL;
}

/* Each source's weight gradient (and the bias's) += from g, the gradient
 * at the output: a band's rows of g with zero halo rows, so the padded
 * shape of conv_forward adds what the band's own output rows give. */
static tt_status conv_weight_grad(tt_unet *u, const band_conv *c, plane g)
{
    int halo = c->k / 2, step = band_rows(u, c->level);
    tt_mem in = room(u, 0), dout = room(u, 1);
    for (int first = 0; first < c->height; first += step) {
        int rows = min_int(step, c->height - first);
        tt_band zeroed = band_of(g, c->n, first, rows, halo);
        zeroed.zero_halo = 1;
        TT_TRY(tt_band_gather(u->be, dout, g.mem, g.p, &zeroed));
        for (int j = 0; j < c->count; j++) {
            const source *s = &c->s[j];
            TT_TRY(gather_source(u, in, s, c->n, first, rows, halo));
            tt_conv2d_desc d = band_desc(u, c, s, rows + 2 * halo, halo);
            TT_TRY(tt_conv2d_backward(u->be, NONE, s->dweight, j == 0 ? c->dbias : NONE, dout, in,
                                      NONE, &d, tt_unet_workspace(u)));
        }
    }
    return NULL;
}

/* Each source's input gradient from g: a band's rows of it are complete
 * from g's band with the halo, as the input gradient of a band padded in
 * H too (its halo rows, incomplete, are not written back).  A source in
 * place writes over g one band late: after the next band of g is read. */
static tt_status conv_input_grad(tt_unet *u, const band_conv *c, plane g)
{
    int halo = c->k / 2, step = band_rows(u, c->level);
    tt_mem dout = room(u, 1);
    const source *late = NULL;
    int late_first = 0, late_rows = 0;
    for (int first = 0; first < c->height; first += step) {
        int rows = min_int(step, c->height - first);
        TT_TRY(gather(u, dout, g, c->n, first, rows, halo));
        if (late) TT_TRY(scatter(u, late->grad, room(u, 2), c->n, late_first, late_rows, halo));
        late = NULL;
        for (int j = 0; j < c->count; j++) {
            const source *s = &c->s[j];
            if (!s->grad.mem.buffer) continue;
            tt_mem dx = room(u, s->in_place ? 2 : 0);
            size_t count = (size_t)c->n * s->x.channels * (rows + 2 * halo) * c->width;
            TT_TRY(tt_fill(u->be, dx, 0.0f, count));
            tt_conv2d_desc d = band_desc(u, c, s, rows + 2 * halo, halo);
            TT_TRY(tt_conv2d_backward(u->be, dx, NONE, NONE, dout, NONE, s->weight, &d,
                                      tt_unet_workspace(u)));
            if (s->in_place)
                late = s, late_first = first, late_rows = rows;
            else
                TT_TRY(scatter(u, s->grad, dx, c->n, first, rows, halo));
        }
    }
    if (late) TT_TRY(scatter(u, late->grad, room(u, 2), c->n, late_first, late_rows, halo));
    return NULL;
}

/* ---- up-convolution and pool ---------------------------------------------- */

/* up.i (into `up`) from the output of the block below dec.i, band by band
 * (rows of up in pairs: no halo). */
static tt_status up_forward(tt_unet *u, int i, plane below, plane up, int n)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "up.%d", i);
    tt_mem w = tt_unet_param(u, tt_unet_param_index(u, prefix, "weight"));
    tt_mem b = tt_unet_param(u, tt_unet_param_index(u, prefix, "bias"));
    int step = band_rows(u, i);
    for (int first = 0; first < up.height; first += step) {
        int rows = min_int(step, up.height - first);
        TT_TRY(gather(u, room(u, 0), below, n, first / 2, rows / 2, 0));
        tt_conv_transpose2d_desc d =
            tt_unet_upconv(u, n, below.channels, up.channels, rows / 2, below.width);
        TT_TRY(tt_conv_transpose2d_forward(u->be, room(u, 1), room(u, 0), w, b, &d,
                                           tt_unet_workspace(u)));
        TT_TRY(scatter(u, up, room(u, 1), n, first, rows, 0));
    }
    return NULL;
}

/* up.i's parameter gradients from g (d up) and the output below, and that
 * output's gradient into dbelow (overwritten). */
static tt_status up_backward(tt_unet *u, int i, plane below, plane g, plane dbelow, int n)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "up.%d", i);
    int wi = tt_unet_param_index(u, prefix, "weight"), bi = tt_unet_param_index(u, prefix, "bias");
    int step = band_rows(u, i);
    for (int first = 0; first < g.height; first += step) {
        int rows = min_int(step, g.height - first);
        TT_TRY(gather(u, room(u, 1), g, n, first, rows, 0));
        TT_TRY(gather(u, room(u, 0), below, n, first / 2, rows / 2, 0));
        size_t count = (size_t)n * below.channels * (rows / 2) * below.width;
        TT_TRY(tt_fill(u->be, room(u, 2), 0.0f, count));
        tt_conv_transpose2d_desc d =
            tt_unet_upconv(u, n, below.channels, g.channels, rows / 2, below.width);
        TT_TRY(tt_conv_transpose2d_backward(u->be, room(u, 2), tt_unet_grad(u, wi),
                                            tt_unet_grad(u, bi), room(u, 1), room(u, 0),
                                            tt_unet_param(u, wi), &d, tt_unet_workspace(u)));
        TT_TRY(scatter(u, dbelow, room(u, 2), n, first / 2, rows / 2, 0));
    }
    return NULL;
}

/* The block's output as stored, on a band into room 1: norm2 of its conv2
 * (forward's or made again), rounded as the output is stored. */
static tt_status output_band(tt_unet *u, const norm_ref *n2, plane out, int n, int first, int rows)
{
    TT_TRY(norm_band(u, n2, room(u, 1), n, first, rows, 0));
    if (out.p == FP32) return NULL;
    return tt_cast_round(u->be, room(u, 1), out.p, (size_t)n * out.channels * rows * out.width);
}

/* pool (N, C, H/2, W/2) = max_pool2x2(room 1 holding the band's rows
 * [first, first + rows) of a C x H x W tensor), via room 0. */
static tt_status pool_band(tt_unet *u, plane pool, int c, int w, int n, int first, int rows)
{
    tt_pool2d_desc pd = tt_pool2d_square(n, c, rows, w, 2, 2);
    TT_TRY(tt_max_pool2d_forward(u->be, room(u, 0), NONE, room(u, 1), &pd));
    return scatter(u, pool, room(u, 0), n, first / 2, rows / 2, 0);
}

/* pool.i made again from enc.i's output (`out`: kept, or made again). */
static tt_status pool_again(tt_unet *u, int i, plane out, int n)
{
    tt_unet_block *e = &u->enc[i];
    plane pool = plane_of(u, u->band_pool_again[i], e->channels, e->height / 2, e->width / 2);
    int step = band_rows(u, i);
    for (int first = 0; first < e->height; first += step) {
        int rows = min_int(step, e->height - first);
        TT_TRY(gather(u, room(u, 1), out, n, first, rows, 0));
        TT_TRY(pool_band(u, pool, e->channels, e->width, n, first, rows));
    }
    return NULL;
}

/* ---- blocks --------------------------------------------------------------- */

/* conv1 of block b over its sources (filled by the caller: input(s),
 * weights, gradients). */
static band_conv conv1_of(tt_unet *u, tt_unet_block *b, int n)
{
    return (band_conv){.n = n, .cout = b->channels, .k = 3, .level = b->level,
                       .height = b->height, .width = b->width,
                       .bias = tt_unet_param(u, b->conv1_b), .dbias = tt_unet_grad(u, b->conv1_b)};
}

/* conv2 of block b, reading relu(norm1(conv1)) from `n1`. */
static band_conv conv2_of(tt_unet *u, tt_unet_block *b, const norm_ref *n1, int n)
{
    band_conv c = {.n = n, .cout = b->channels, .k = 3, .level = b->level, .height = b->height,
                   .width = b->width, .bias = tt_unet_param(u, b->conv2_b),
                   .dbias = tt_unet_grad(u, b->conv2_b), .count = 1};
    c.s[0] = (source){.x = n1->x, .normed = n1, .weight = tt_unet_param(u, b->conv2_w),
                      .dweight = tt_unet_grad(u, b->conv2_w)};
    return c;
}

/* conv1 and conv2 into c1x and c2x, each norm's statistics (forward) or
 * the forward's (again). */
static tt_status block_convs(tt_unet *u, tt_unet_block *b, const band_conv *c1, norm_ref *n1,
                             norm_ref *n2, int forward, int n)
{
    TT_TRY(conv_forward(u, c1, n1->x));
    if (forward) TT_TRY(norm_stats(u, n1, n));
    band_conv c2 = conv2_of(u, b, n1, n);
    TT_TRY(conv_forward(u, &c2, n2->x));
    return forward ? norm_stats(u, n2, n) : NULL;
}

/* The block's forward into conv1, conv2 and its output (stored, rounded),
 * and for an encoder block (pool) its pool from the same bands: the
 * forward (forward: each norm's statistics taken), or the same again with
 * the forward's statistics (the same bits). */
static tt_status block_run(tt_unet *u, tt_unet_block *b, const band_conv *c1, tt_mem conv1,
                           tt_mem conv2, tt_mem output, int forward, plane *pool, int n)
{
    norm_ref n1 = {b, 1, block_plane(u, conv1, b)}, n2 = {b, 2, block_plane(u, conv2, b)};
    TT_TRY(block_convs(u, b, c1, &n1, &n2, forward, n));
    plane out = block_plane(u, output, b);
    int step = band_rows(u, b->level);
    for (int first = 0; first < b->height; first += step) {
        int rows = min_int(step, b->height - first);
        TT_TRY(output_band(u, &n2, out, n, first, rows));
        TT_TRY(scatter(u, out, room(u, 1), n, first, rows, 0));
        if (pool) TT_TRY(pool_band(u, *pool, b->channels, b->width, n, first, rows));
    }
    return NULL;
}

/* g += the pool's gradient dpool routed to the winners of the encoder
 * block's output (made again from its conv2 as stored: the forward's
 * winners). */
static tt_status pool_backward(tt_unet *u, tt_unet_block *e, const norm_ref *n2, plane dpool,
                               plane g, int n)
{
    int step = band_rows(u, e->level);
    for (int first = 0; first < e->height; first += step) {
        int rows = min_int(step, e->height - first);
        TT_TRY(output_band(u, n2, block_plane(u, e->band.out, e), n, first, rows));
        TT_TRY(gather(u, room(u, 0), dpool, n, first / 2, rows / 2, 0));
        TT_TRY(gather(u, room(u, 2), g, n, first, rows, 0));
        tt_pool2d_desc pd = tt_pool2d_square(n, e->channels, rows, e->width, 2, 2);
        TT_TRY(tt_max_pool2d_backward_from_input(u->be, room(u, 2), room(u, 0), room(u, 1), &pd));
        TT_TRY(scatter(u, g, room(u, 2), n, first, rows, 0));
    }
    return NULL;
}

/* The block's backward from its grad (the gradient at its output): conv1
 * and conv2 made again, the gradient down the block in place, conv1's
 * input gradients to the sources' grad.  An encoder block adds its pool's
 * gradient dpool first (dpool.mem NONE: none).  A decoder block's up is
 * made again (up_i, below) for its conv1's weight gradient. */
static tt_status block_backward(tt_unet *u, tt_unet_block *b, band_conv *c1, plane dpool,
                                int up_i, plane below, int n)
{
    norm_ref n1 = {b, 1, block_plane(u, b->band.conv1_again, b)};
    norm_ref n2 = {b, 2, block_plane(u, b->band.conv2_again, b)};
    plane g = block_grad(u, b);
    TT_TRY(block_convs(u, b, c1, &n1, &n2, 0, n));
    if (dpool.mem.buffer) TT_TRY(pool_backward(u, b, &n2, dpool, g, n));
    TT_TRY(norm_backward(u, &n2, g, n));                         /* d conv2 */
    band_conv c2 = conv2_of(u, b, &n1, n);
    TT_TRY(conv_weight_grad(u, &c2, g));
    c2.s[0].grad = g, c2.s[0].in_place = 1;
    TT_TRY(conv_input_grad(u, &c2, g));                          /* d act1 */
    TT_TRY(norm_backward(u, &n1, g, n));                         /* d conv1 */
    if (up_i >= 0) {
        c1->s[0].x = plane_of(u, u->band_up_wgrad[up_i], b->channels, b->height, b->width);
        TT_TRY(up_forward(u, up_i, below, c1->s[0].x, n));
    }
    TT_TRY(conv_weight_grad(u, c1, g));
    return conv_input_grad(u, c1, g);
}

/* A decoder block's conv1 over [up, skip] (weights in halves). */
static band_conv dec_conv1(tt_unet *u, tt_unet_block *d, plane up, plane skip,
                           const tt_unet_split *s, int n)
{
    band_conv c = conv1_of(u, d, n);
    c.count = 2;
    c.s[0] = (source){.x = up, .weight = s->wa, .dweight = s->ga};
    c.s[1] = (source){.x = skip, .weight = s->wb, .dweight = s->gb};
    return c;
}

/* An encoder block's (or the bottleneck's) conv1 over its input. */
static band_conv enc_conv1(tt_unet *u, tt_unet_block *e, plane input, int n)
{
    band_conv c = conv1_of(u, e, n);
    c.count = 1;
    c.s[0] = (source){.x = input, .weight = tt_unet_param(u, e->conv1_w),
                      .dweight = tt_unet_grad(u, e->conv1_w)};
    return c;
}

static tt_unet_block *below_of(tt_unet *u, int i)
{
    return i + 1 < u->config.depth ? &u->dec[i + 1] : &u->bottleneck;
}

/* The input of enc.i (the image, or pool.(i-1)) and of the bottleneck. */
static plane enc_input(tt_unet *u, int i, int again)
{
    if (i == 0)
        return (plane){u->input, FP32, u->config.in_channels, u->height, u->width};
    tt_unet_block *e = &u->enc[i - 1];
    tt_mem m = again ? u->band_pool_again[i - 1] : u->band_pool[i - 1];
    return plane_of(u, m, e->channels, e->height / 2, e->width / 2);
}

static tt_unet_block *enc_block(tt_unet *u, int i)
{
    return i < u->config.depth ? &u->enc[i] : &u->bottleneck;
}

/* dec.i's skip for its backward: enc.0's kept output, or enc.i (i > 0)
 * made again from pool.(i-1) made again, with the forward's statistics
 * (the same bits): deeper outputs are not kept through the decoder. */
static tt_status skip_for_backward(tt_unet *u, int i, int n, plane *skip)
{
    tt_unet_block *e = &u->enc[i];
    *skip = block_plane(u, e->band.out, e);
    if (i == 0) return NULL;
    *skip = block_plane(u, e->band.skip_out, e);
    band_conv c1 = enc_conv1(u, e, enc_input(u, i, 1), n);
    return block_run(u, e, &c1, e->band.skip_conv1, e->band.skip_conv2, e->band.skip_out, 0, NULL,
                     n);
}

/* ---- the step --------------------------------------------------------------- */

tt_status tt_unet_forward(tt_unet *u, int n, int training)
{
    if (n < 1 || n > u->capacity)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "UNet forward: batch %d outside 1..%d", n,
                            u->capacity);
    const tt_unet_config *c = &u->config;
    u->batch = n;
    u->training = training;
    tt_backend_phase(u->be, "forward");
    if (u->poison) /* debugging: a read before a write shows up as NaN */
        for (int i = 0; i < u->model.act_count; i++)
            TT_TRY(tt_fill(u->be, tt_mem_of(u->model.act_buffers[i]), u->poison_value,
                           u->model.act_buffers[i]->bytes / sizeof(float)));
    for (int i = 0; i <= c->depth; i++) {
        tt_unet_block *e = enc_block(u, i);
        band_conv c1 = enc_conv1(u, e, enc_input(u, i, 0), n);
        plane pool = plane_of(u, i < c->depth ? u->band_pool[i] : NONE, e->channels,
                              e->height / 2, e->width / 2);
        TT_TRY(block_run(u, e, &c1, e->band.conv1, e->band.conv2, e->band.out, 1,
                         i < c->depth ? &pool : NULL, n));
    }
    for (int i = c->depth - 1; i >= 0; i--) {
        tt_unet_block *d = &u->dec[i], *below = below_of(u, i);
        plane up = plane_of(u, u->band_up[i], d->channels, d->height, d->width);
        TT_TRY(up_forward(u, i, block_plane(u, below->band.out, below), up, n));
        tt_unet_split s;
        TT_TRY(tt_unet_split_conv1(u, d, &s));
        band_conv c1 = dec_conv1(u, d, up, block_plane(u, u->enc[i].band.out, &u->enc[i]), &s, n);
        TT_TRY(block_run(u, d, &c1, d->band.conv1, d->band.conv2, d->band.out, 1, NULL, n));
    }
    tt_unet_block *top = &u->dec[0];
    band_conv head = {.n = n, .cout = c->classes, .k = 1, .level = 0, .height = u->height,
                      .width = u->width, .count = 1,
                      .bias = tt_unet_param(u, tt_unet_param_index(u, "head", "bias"))};
    head.s[0] = (source){.x = block_plane(u, top->band.out, top),
                         .weight = tt_unet_param(u, tt_unet_param_index(u, "head", "weight"))};
    return conv_forward(u, &head, (plane){u->logits, FP32, c->classes, u->height, u->width});
}

tt_status tt_unet_backward(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    int n = u->batch;
    if (!u->training || n < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "UNet backward needs a training forward of the same batch first");
    tt_backend_phase(u->be, "backward");
    tt_unet_block *top = &u->dec[0];
    /* the head: its parameter gradients, and dec.0's gradient */
    int hw = tt_unet_param_index(u, "head", "weight"), hb = tt_unet_param_index(u, "head", "bias");
    band_conv head = {.n = n, .cout = c->classes, .k = 1, .level = 0, .height = u->height,
                      .width = u->width, .count = 1, .dbias = tt_unet_grad(u, hb)};
    head.s[0] = (source){.x = block_plane(u, top->band.out, top), .weight = tt_unet_param(u, hw),
                         .dweight = tt_unet_grad(u, hw), .grad = block_grad(u, top)};
    plane dlogits = {u->dlogits, FP32, c->classes, u->height, u->width};
    TT_TRY(conv_weight_grad(u, &head, dlogits));
    TT_TRY(conv_input_grad(u, &head, dlogits));
    /* the decoder from the top: dec.i's gradient runs down it and leaves
     * as d skip (into enc.i's grad) and d up, in place, which up.i's
     * backward turns into the gradient of the block below */
    plane none = {0};
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *d = &u->dec[i], *below = below_of(u, i), *e = &u->enc[i];
        plane below_out = block_plane(u, below->band.out, below), skip;
        TT_TRY(skip_for_backward(u, i, n, &skip));
        plane up = plane_of(u, u->band_up_again[i], d->channels, d->height, d->width);
        TT_TRY(up_forward(u, i, below_out, up, n));
        tt_unet_split s;
        TT_TRY(tt_unet_split_conv1(u, d, &s));
        TT_TRY(tt_fill(u->be, s.ga, 0.0f, 2 * s.half_floats));
        band_conv c1 = dec_conv1(u, d, up, skip, &s, n);
        plane g = block_grad(u, d);
        c1.s[0].grad = g, c1.s[0].in_place = 1;
        c1.s[1].grad = block_grad(u, e);
        TT_TRY(block_backward(u, d, &c1, none, i, below_out, n));
        TT_TRY(tt_unet_join_conv1_grads(u, d, &s));
        TT_TRY(up_backward(u, i, below_out, g, block_grad(u, below), n));
        TT_TRY(pool_again(u, i, skip, n));
    }
    /* the bottleneck, then the encoder from the bottom: each adds its
     * pool's gradient (the input gradient of the block below it) to the
     * skip's */
    for (int i = c->depth; i >= 0; i--) {
        tt_unet_block *e = enc_block(u, i);
        band_conv c1 = enc_conv1(u, e, enc_input(u, i, 1), n);
        if (i > 0) c1.s[0].grad = plane_of(u, e->band.dinput, c1.s[0].x.channels,
                                           c1.s[0].x.height, c1.s[0].x.width);
        plane dpool = none;
        if (i < c->depth) {
            tt_unet_block *b = enc_block(u, i + 1);
            dpool = plane_of(u, b->band.dinput, e->channels, e->height / 2, e->width / 2);
        }
        TT_TRY(block_backward(u, e, &c1, dpool, -1, none, n));
    }
    return NULL;
}
