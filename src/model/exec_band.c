/*
 * The executor's banded storage (exec.h: x->banded): 16-bit storage with
 * checkpointing taken to its end.  A checkpointed step's peak is one
 * block's work, and there fp32 kernels would need full-size fp32 rooms
 * whatever is stored.  Here no full-size tensor is fp32: every one is
 * stored in 16 bits (tt_exec_band_store: fp32 only for the image, the
 * logits and an odd width), the gradients too, and every fp32 kernel runs
 * on row bands of them (ops/band.h): a band of the input (with a halo of
 * kernel / 2 rows, zeros past the edges) is widened into a small fp32
 * room, the kernel runs on it as on a tile of its own, and the output
 * rows that read only the band are rounded back into place.
 *
 * A norm takes its statistics over its whole stored input and applies
 * them as its output is read: a fused output (graph.h) is never stored,
 * each band its reader gathers is the norm applied to that band of the
 * norm's input; another is stored band by band, rounded.  A norm's
 * backward runs on the whole stored tensors, its gradient in place.  A
 * convolution's input gradient written over its output's (the gradient
 * running down a block in one place) is written one band late, after the
 * next band of the output's gradient has been read.
 *
 * What the backward keeps or makes again is the tensors' keep, as for the
 * plain executor; with the same bands the step is the hand-written banded
 * UNet step's it replaced, bit for bit.  Layer kinds: convolutions of
 * stride 1 and odd kernel (one or two inputs), norms, 2x2 max pooling, the
 * 2x2 stride-2 up-convolution.
 */
#include <stdlib.h>

#include "core/knobs.h"
#include "core/status.h"
#include "model/exec_internal.h"
#include "ops/band.h"
#include "ops/batch_norm.h"
#include "ops/cast.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ops/group_norm.h"
#include "ops/max_pool2d.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})
#define FP32 TT_PRECISION_FP32
#define BAND_LEAST 12

static tt_tensor_def *tensor(tt_exec *x, int t) { return tt_exec_tensor(x, t); }

static int min_int(int a, int b) { return a < b ? a : b; }

/* ---- bands ---------------------------------------------------------------------- */

/* $TT_UNET_BAND_ROWS (a test knob): rows of every band, even and at least
 * 2; 0 when unset or not so. */
static int knob_rows(void)
{
    const char *v = tt_knob_str(TT_KNOB_UNET_BAND_ROWS);
    int rows = v ? atoi(v) : 0;
    return rows >= 2 && rows % 2 == 0 ? rows : 0;
}

/* The most channels of a tensor of this width. */
static int width_channels(tt_exec *x, int width)
{
    int most = 0;
    for (int t = 0; t < x->graph->tensor_count; t++)
        if (tensor(x, t)->width == width && tensor(x, t)->channels > most)
            most = tensor(x, t)->channels;
    return most;
}

size_t tt_exec_band_room_floats(tt_exec *x)
{
    /* a 32nd of the largest tensor (a few MiB at full resolution), and at
     * least BAND_LEAST rows of every width with their halo: fewer rows
     * cost more in launches than they save */
    size_t cap = (size_t)x->model->capacity, largest = 0, floats;
    for (int t = 0; t < x->graph->tensor_count; t++) {
        const tt_tensor_def *d = tensor(x, t);
        size_t n = cap * d->channels * d->height * d->width;
        if (n > largest) largest = n;
    }
    floats = largest / 32;
    size_t least = (size_t)(knob_rows() ? knob_rows() : BAND_LEAST) + 2;
    for (int t = 0; t < x->graph->tensor_count; t++) {
        size_t row = cap * width_channels(x, tensor(x, t)->width) * tensor(x, t)->width;
        if (floats < least * row) floats = least * row;
    }
    return floats;
}

/* Rows of a band of a tensor of this size: as many as a room holds for
 * the widest tensor of its width with a halo row on each side, even
 * (pools take rows in pairs), at least 2. */
static int band_rows(tt_exec *x, int height, int width)
{
    int forced = knob_rows();
    if (forced) return min_int(forced, height);
    size_t row = (size_t)x->model->capacity * width_channels(x, width) * (size_t)width;
    size_t rows = x->band_floats / row;
    rows = rows > 4 ? (rows - 2) & ~(size_t)1 : 2;
    return rows < (size_t)height ? (int)rows : height;
}

static tt_mem room(tt_exec *x, int k)
{
    return tt_mem_f32(tt_mem_of(x->bands), (size_t)k * x->band_floats);
}

static tt_band band_of(tt_exec *x, int t, int n, int first, int rows, int halo)
{
    const tt_tensor_def *d = tensor(x, t);
    return (tt_band){n * d->channels, d->height, d->width, first, rows, halo, 0};
}

/* dst (a band of tensor t's shape) = rows of `src`, t stored as p. */
static tt_status gather(tt_exec *x, tt_mem dst, tt_mem src, tt_precision p, int t, int n,
                        int first, int rows, int halo)
{
    tt_band b = band_of(x, t, n, first, rows, halo);
    return tt_band_gather(x->model->be, dst, src, p, &b);
}

static tt_status scatter(tt_exec *x, tt_mem dst, tt_precision p, int t, tt_mem src, int n,
                         int first, int rows, int halo)
{
    tt_band b = band_of(x, t, n, first, rows, halo);
    return tt_band_scatter(x->model->be, dst, p, src, &b);
}

static size_t band_count(tt_exec *x, int t, int n, int rows)
{
    return (size_t)n * tensor(x, t)->channels * rows * tensor(x, t)->width;
}

/* ---- what a band reads ------------------------------------------------------------ */

/* Tensor t as a band reader finds it: stored at mem as p, or (fused) the
 * stored input of its norm, which each band applies. */
typedef struct source {
    int t;                   /* what is stored */
    const tt_layer *norm;    /* NULL, or the norm applied as gathered */
    tt_mem mem;
    tt_precision p;
} source;

static tt_status source_of(tt_exec *x, int t, int again, source *s)
{
    const tt_tensor_def *d = tensor(x, t);
    *s = (source){t, NULL, NONE, FP32};
    if (d->fused) s->norm = &x->graph->layers[d->producer], s->t = s->norm->in[0];
    s->p = tt_exec_band_store(x, s->t);
    if (!again) {
        s->mem = tt_exec_fwd_of(x, s->t);
        return NULL;
    }
    return tt_exec_value(x, s->t, &s->mem);
}

static int norm_trains(tt_exec *x, const tt_layer *l) { return x->training && !l->frozen; }

/* dst (a band) = relu(norm(in)) on the band's rows, zeros past the edges;
 * in is the norm's input stored as p. */
static tt_status norm_band(tt_exec *x, const tt_layer *l, tt_mem dst, tt_mem in, tt_precision p,
                           int n, int first, int rows, int halo)
{
    tt_model *m = x->model;
    tt_band band = band_of(x, l->in[0], n, first, rows, halo);
    if (l->norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_exec_group_desc(x, l, n);
        d.input_precision = p;
        return tt_group_norm_apply_saved_band(m->be, dst, in, l->saved, tt_model_param(m, l->bn_w),
                                              tt_model_param(m, l->bn_b), &d, &band);
    }
    tt_batch_norm_desc d = tt_exec_norm_desc(x, l, n);
    d.input_precision = p;
    return tt_batch_norm_apply_saved_band(m->be, dst, in, norm_trains(x, l) ? l->saved : NONE,
                                          &l->bn, &d, &band);
}

static tt_status gather_source(tt_exec *x, tt_mem dst, const source *s, int n, int first,
                               int rows, int halo)
{
    if (s->norm) return norm_band(x, s->norm, dst, s->mem, s->p, n, first, rows, halo);
    return gather(x, dst, s->mem, s->p, s->t, n, first, rows, halo);
}

/* ---- convolutions ----------------------------------------------------------------- */

/* A convolution of one or two sources (a two-input one's weight in halves). */
typedef struct band_conv {
    const tt_layer *l;
    int count, n, cout, height, width;   /* sources; the output's shape */
    source s[2];
    tt_mem w[2], dw[2];
    tt_exec_split split;
} band_conv;

static tt_status conv_of(tt_exec *x, const tt_layer *l, int again, band_conv *c)
{
    const tt_tensor_def *o = tensor(x, l->out);
    tt_model *m = x->model;
    *c = (band_conv){.l = l, .count = l->in[1] >= 0 ? 2 : 1, .n = x->batch, .cout = o->channels,
                     .height = o->height, .width = o->width};
    if (l->kernel % 2 == 0 || l->stride != 1)
        return tt_error_new(TT_ERR_UNSUPPORTED, "layer '%s': the banded step runs convolutions "
                            "of stride 1 and an odd kernel; use fp32 storage or no "
                            "checkpointing for this model", l->name);
    /* the second source first: made again before the first, which lives
     * the shorter */
    if (c->count == 2) TT_TRY(source_of(x, l->in[1], again, &c->s[1]));
    TT_TRY(source_of(x, l->in[0], again, &c->s[0]));
    if (x->symbolic) return NULL;
    if (c->count == 1) {
        c->w[0] = tt_model_param(m, l->weight), c->dw[0] = tt_model_grad(m, l->weight);
        return NULL;
    }
    TT_TRY(tt_exec_split_weight(x, l, &c->split));
    c->w[0] = c->split.wa, c->w[1] = c->split.wb;
    c->dw[0] = c->split.ga, c->dw[1] = c->split.gb;
    return NULL;
}

/* Source j's convolution on a band of rows_in input rows: padded in H as
 * the whole tensor is (the shape the fast 3x3 kernels run), of which the
 * output's own rows read nothing but the band. */
static tt_conv2d_desc band_desc(tt_exec *x, const band_conv *c, int j, int rows_in,
                                int no_input_grad)
{
    int k = c->l->kernel;
    return (tt_conv2d_desc){.batch = c->n, .in_channels = tensor(x, c->s[j].t)->channels,
                            .in_h = rows_in, .in_w = c->width, .out_channels = c->cout,
                            .kernel_h = k, .kernel_w = k, .stride_h = 1, .stride_w = 1,
                            .pad_h = k / 2, .pad_w = k / 2, .groups = c->l->groups,
                            .algo = *x->algo, .no_input_grad = no_input_grad,
                            .workspace_limit = x->model->memory.workspace_limit};
}

static tt_status conv_forward(tt_exec *x, const tt_layer *l, tt_mem out, int again)
{
    band_conv c;
    TT_TRY(conv_of(x, l, again, &c));
    if (x->symbolic) return NULL;
    tt_backend *be = x->model->be;
    tt_backend_layer(be, l->name);
    int halo = l->kernel / 2, step = band_rows(x, c.height, c.width);
    tt_precision p = tt_exec_band_store(x, l->out);
    tt_mem in = room(x, 0), res = room(x, 1), bias = tt_model_param(x->model, l->bias);
    for (int first = 0; first < c.height; first += step) {
        int rows = min_int(step, c.height - first);
        for (int j = 0; j < c.count; j++) {
            TT_TRY(gather_source(x, in, &c.s[j], c.n, first, rows, halo));
            tt_conv2d_desc d = band_desc(x, &c, j, rows + 2 * halo, 1);
            if (j == 0)
                TT_TRY(tt_conv2d_forward(be, res, in, c.w[0], bias, &d, tt_exec_workspace(x)));
            else
                TT_TRY(tt_conv2d_forward_add(be, res, in, c.w[j], &d, tt_exec_workspace(x)));
        }
        TT_TRY(scatter(x, out, p, l->out, res, c.n, first, rows, halo));
    }
    return NULL;
}

/* Each source's weight gradient (and the bias's) += from g, a band's rows
 * of it with zero halo rows: the padded shape of conv_forward adds what
 * the band's own output rows give. */
static tt_status conv_weight_grad(tt_exec *x, const band_conv *c, tt_mem g, tt_precision gp)
{
    tt_backend *be = x->model->be;
    const tt_layer *l = c->l;
    int halo = l->kernel / 2, step = band_rows(x, c->height, c->width);
    tt_mem in = room(x, 0), dout = room(x, 1), dbias = tt_model_grad(x->model, l->bias);
    for (int first = 0; first < c->height; first += step) {
        int rows = min_int(step, c->height - first);
        tt_band zeroed = band_of(x, l->out, c->n, first, rows, halo);
        zeroed.zero_halo = 1;
        TT_TRY(tt_band_gather(be, dout, g, gp, &zeroed));
        for (int j = 0; j < c->count; j++) {
            TT_TRY(gather_source(x, in, &c->s[j], c->n, first, rows, halo));
            tt_conv2d_desc d = band_desc(x, c, j, rows + 2 * halo, 1);
            TT_TRY(tt_conv2d_backward(be, NONE, c->dw[j], j == 0 ? dbias : NONE, dout, in, NONE,
                                      &d, tt_exec_workspace(x)));
        }
    }
    return NULL;
}

/* Where source j's input gradient goes: its place, stored as p, written
 * over (the first gradient it gets), or in place of the output's (one band
 * late). */
typedef struct input_grad {
    int wanted, in_place, t;
    tt_mem mem;
    tt_precision p;
} input_grad;

/* Each source's input gradient from g: a band's rows of it are complete
 * from g's band with the halo, as the input gradient of a band padded in
 * H too (its halo rows, incomplete, are not written back). */
static tt_status conv_input_grad(tt_exec *x, const band_conv *c, const input_grad *ig, tt_mem g,
                                 tt_precision gp)
{
    tt_backend *be = x->model->be;
    const tt_layer *l = c->l;
    int halo = l->kernel / 2, step = band_rows(x, c->height, c->width);
    tt_mem dout = room(x, 1);
    int late = -1, late_first = 0, late_rows = 0;
    for (int first = 0; first < c->height; first += step) {
        int rows = min_int(step, c->height - first);
        TT_TRY(gather(x, dout, g, gp, l->out, c->n, first, rows, halo));
        if (late >= 0)
            TT_TRY(scatter(x, ig[late].mem, ig[late].p, ig[late].t, room(x, 2), c->n, late_first,
                           late_rows, halo));
        late = -1;
        for (int j = 0; j < c->count; j++) {
            if (!ig[j].wanted) continue;
            tt_mem dx = room(x, ig[j].in_place ? 2 : 0);
            TT_TRY(tt_fill(be, dx, 0.0f, band_count(x, ig[j].t, c->n, rows + 2 * halo)));
            tt_conv2d_desc d = band_desc(x, c, j, rows + 2 * halo, 0);
            TT_TRY(tt_conv2d_backward(be, dx, NONE, NONE, dout, NONE, c->w[j], &d,
                                      tt_exec_workspace(x)));
            if (ig[j].in_place)
                late = j, late_first = first, late_rows = rows;
            else
                TT_TRY(scatter(x, ig[j].mem, ig[j].p, ig[j].t, dx, c->n, first, rows, halo));
        }
    }
    if (late >= 0)
        TT_TRY(scatter(x, ig[late].mem, ig[late].p, ig[late].t, room(x, 2), c->n, late_first,
                       late_rows, halo));
    return NULL;
}

/* Marks t's gradient started; NULL, or an error when it already was and
 * the layer would write over it. */
static tt_status start_grad(tt_exec *x, const tt_layer *l, int t)
{
    tt_tensor_def *r = tensor(x, tt_exec_grad_root(x, t));
    if (!r->grad_started) {
        r->grad_started = 1;
        return NULL;
    }
    return tt_error_new(TT_ERR_UNSUPPORTED, "layer '%s': its input '%s' has a gradient from "
                        "another layer already, which the banded step does not add to yet; use "
                        "fp32 storage or no checkpointing for this model", l->name,
                        tensor(x, t)->name);
}

static tt_status conv_backward(tt_exec *x, const tt_layer *l)
{
    band_conv c;
    TT_TRY(conv_of(x, l, 1, &c));
    input_grad ig[2] = {{0}, {0}};
    int out_root = tt_exec_grad_root(x, l->out);
    for (int j = 0; j < c.count; j++) {
        int t = l->in[j];
        ig[j].wanted = tensor(x, t)->needs_grad && !(j == 0 && l->no_input_grad);
        if (!ig[j].wanted) continue;
        ig[j].t = t;
        ig[j].in_place = tt_exec_grad_root(x, t) == out_root;
        ig[j].mem = tt_exec_grad_of(x, t);
        ig[j].p = tt_exec_band_store(x, tt_exec_grad_root(x, t));
        if (!ig[j].in_place) TT_TRY(start_grad(x, l, t));
    }
    if (x->symbolic) return NULL;
    tt_backend *be = x->model->be;
    tt_backend_layer(be, l->name);
    tt_mem g = tt_exec_grad_of(x, l->out);
    tt_precision gp = tt_exec_band_store(x, out_root);
    if (c.count == 2) TT_TRY(tt_fill(be, c.split.ga, 0.0f, c.split.floats));
    TT_TRY(conv_weight_grad(x, &c, g, gp));
    TT_TRY(conv_input_grad(x, &c, ig, g, gp));
    if (c.count == 1) return NULL;
    TT_TRY(tt_concat_forward(be, c.split.wa, c.split.ga, c.split.gb, &c.split.desc));
    return tt_axpy(be, tt_model_grad(x->model, l->weight), c.split.wa, 1.0f, c.split.floats);
}

/* ---- norms ------------------------------------------------------------------------ */

/* The statistics over the whole stored input (the forward's), then the
 * output stored band by band, rounded (a fused one is never stored). */
static tt_status norm_forward(tt_exec *x, tt_layer *l, tt_mem out, int again)
{
    tt_model *m = x->model;
    int fused = tensor(x, l->out)->fused, n = x->batch;
    tt_precision ip = tt_exec_band_store(x, l->in[0]);
    tt_mem in = tt_exec_fwd_of(x, l->in[0]);
    if (again && fused) return NULL;
    if (again) TT_TRY(tt_exec_value(x, l->in[0], &in));
    if (x->symbolic) return NULL;
    if (!again && l->norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_exec_group_desc(x, l, n);
        d.input_precision = ip;
        TT_TRY(tt_group_norm_forward(m->be, NONE, l->saved, in, tt_model_param(m, l->bn_w),
                                     tt_model_param(m, l->bn_b), &d));
    } else if (!again) {
        tt_batch_norm_desc d = tt_exec_norm_desc(x, l, n);
        d.input_precision = ip;
        TT_TRY(tt_batch_norm_forward(m->be, NONE, l->saved, in, &l->bn, &d,
                                     norm_trains(x, l)));
    }
    if (fused) return NULL;
    const tt_tensor_def *o = tensor(x, l->out);
    int step = band_rows(x, o->height, o->width);
    tt_precision op = tt_exec_band_store(x, l->out);
    for (int first = 0; first < o->height; first += step) {
        int rows = min_int(step, o->height - first);
        TT_TRY(norm_band(x, l, room(x, 1), in, ip, n, first, rows, 0));
        if (op != FP32)
            TT_TRY(tt_cast_round(m->be, room(x, 1), op, band_count(x, l->out, n, rows)));
        TT_TRY(scatter(x, out, op, l->out, room(x, 1), n, first, rows, 0));
    }
    return NULL;
}

/* The gradient at the input, in place of the output's, on the whole
 * stored tensors. */
static tt_status norm_backward(tt_exec *x, const tt_layer *l)
{
    tt_model *m = x->model;
    tt_mem in;
    TT_TRY(tt_exec_value(x, l->in[0], &in));
    tensor(x, tt_exec_grad_root(x, l->in[0]))->grad_started = 1;
    if (x->symbolic) return NULL;
    tt_mem g = tt_exec_grad_of(x, l->out);
    tt_mem dw = tt_model_grad(m, l->bn_w), db = tt_model_grad(m, l->bn_b);
    tt_precision ip = tt_exec_band_store(x, l->in[0]);
    tt_precision gp = tt_exec_band_store(x, tt_exec_grad_root(x, l->out));
    if (l->norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_exec_group_desc(x, l, x->batch);
        d.input_precision = ip, d.grad_precision = gp;
        return tt_group_norm_backward(m->be, g, dw, db, g, in, l->saved,
                                      tt_model_param(m, l->bn_w), tt_model_param(m, l->bn_b), &d);
    }
    tt_batch_norm_desc d = tt_exec_norm_desc(x, l, x->batch);
    d.input_precision = ip, d.grad_precision = gp;
    return tt_batch_norm_backward(m->be, g, dw, db, g, in, l->saved, &l->bn, &d, 1);
}

/* ---- pooling and up-convolution ---------------------------------------------------- */

static tt_status pool_forward(tt_exec *x, const tt_layer *l, tt_mem out, int again)
{
    tt_mem in = tt_exec_fwd_of(x, l->in[0]);
    if (again) TT_TRY(tt_exec_value(x, l->in[0], &in));
    if (x->symbolic) return NULL;
    const tt_tensor_def *d = tensor(x, l->in[0]);
    int n = x->batch, step = band_rows(x, d->height, d->width);
    tt_precision ip = tt_exec_band_store(x, l->in[0]), op = tt_exec_band_store(x, l->out);
    for (int first = 0; first < d->height; first += step) {
        int rows = min_int(step, d->height - first);
        TT_TRY(gather(x, room(x, 1), in, ip, l->in[0], n, first, rows, 0));
        tt_pool2d_desc pd = tt_pool2d_square(n, d->channels, rows, d->width, 2, 2);
        TT_TRY(tt_max_pool2d_forward(x->model->be, room(x, 0), NONE, room(x, 1), &pd));
        TT_TRY(scatter(x, out, op, l->out, room(x, 0), n, first / 2, rows / 2, 0));
    }
    return NULL;
}

/* The input's gradient += the pool's, routed to the winners found again in
 * the input. */
static tt_status pool_backward(tt_exec *x, const tt_layer *l)
{
    tt_mem in;
    TT_TRY(tt_exec_value(x, l->in[0], &in));
    tt_tensor_def *r = tensor(x, tt_exec_grad_root(x, l->in[0]));
    int adds = r->grad_started;
    r->grad_started = 1;
    if (x->symbolic) return NULL;
    const tt_tensor_def *d = tensor(x, l->in[0]);
    int n = x->batch, step = band_rows(x, d->height, d->width);
    tt_mem g = tt_exec_grad_of(x, l->in[0]), dpool = tt_exec_grad_of(x, l->out);
    tt_precision ip = tt_exec_band_store(x, l->in[0]);
    tt_precision gp = tt_exec_band_store(x, tt_exec_grad_root(x, l->in[0]));
    tt_precision dp = tt_exec_band_store(x, tt_exec_grad_root(x, l->out));
    for (int first = 0; first < d->height; first += step) {
        int rows = min_int(step, d->height - first);
        TT_TRY(gather(x, room(x, 1), in, ip, l->in[0], n, first, rows, 0));
        TT_TRY(gather(x, room(x, 0), dpool, dp, l->out, n, first / 2, rows / 2, 0));
        if (adds)
            TT_TRY(gather(x, room(x, 2), g, gp, l->in[0], n, first, rows, 0));
        else
            TT_TRY(tt_fill(x->model->be, room(x, 2), 0.0f, band_count(x, l->in[0], n, rows)));
        tt_pool2d_desc pd = tt_pool2d_square(n, d->channels, rows, d->width, 2, 2);
        TT_TRY(tt_max_pool2d_backward_from_input(x->model->be, room(x, 2), room(x, 0), room(x, 1),
                                                 &pd));
        TT_TRY(scatter(x, g, gp, l->in[0], room(x, 2), n, first, rows, 0));
    }
    return NULL;
}

static tt_conv_transpose2d_desc up_desc(tt_exec *x, const tt_layer *l, int rows)
{
    const tt_tensor_def *in = tensor(x, l->in[0]), *out = tensor(x, l->out);
    return (tt_conv_transpose2d_desc){.batch = x->batch, .in_channels = in->channels,
                                      .in_h = rows / 2, .in_w = in->width,
                                      .out_channels = out->channels, .kernel_h = 2,
                                      .kernel_w = 2, .stride_h = 2, .stride_w = 2,
                                      .algo = *x->algo,
                                      .workspace_limit = x->model->memory.workspace_limit};
}

/* The up-convolution band by band: rows of its output in pairs, no halo. */
static tt_status up_forward(tt_exec *x, const tt_layer *l, tt_mem out, int again)
{
    tt_mem below = tt_exec_fwd_of(x, l->in[0]);
    if (again) TT_TRY(tt_exec_value(x, l->in[0], &below));
    if (x->symbolic) return NULL;
    tt_model *m = x->model;
    tt_backend_layer(m->be, l->name);
    const tt_tensor_def *o = tensor(x, l->out);
    int n = x->batch, step = band_rows(x, o->height, o->width);
    tt_precision bp = tt_exec_band_store(x, l->in[0]), op = tt_exec_band_store(x, l->out);
    for (int first = 0; first < o->height; first += step) {
        int rows = min_int(step, o->height - first);
        TT_TRY(gather(x, room(x, 0), below, bp, l->in[0], n, first / 2, rows / 2, 0));
        tt_conv_transpose2d_desc d = up_desc(x, l, rows);
        TT_TRY(tt_conv_transpose2d_forward(m->be, room(x, 1), room(x, 0),
                                           tt_model_param(m, l->weight),
                                           tt_model_param(m, l->bias), &d, tt_exec_workspace(x)));
        TT_TRY(scatter(x, out, op, l->out, room(x, 1), n, first, rows, 0));
    }
    return NULL;
}

static tt_status up_backward(tt_exec *x, const tt_layer *l)
{
    tt_mem below;
    TT_TRY(tt_exec_value(x, l->in[0], &below));
    int wanted = tensor(x, l->in[0])->needs_grad;
    if (wanted) TT_TRY(start_grad(x, l, l->in[0]));
    if (x->symbolic) return NULL;
    tt_model *m = x->model;
    tt_backend_layer(m->be, l->name);
    const tt_tensor_def *o = tensor(x, l->out);
    int n = x->batch, step = band_rows(x, o->height, o->width);
    tt_mem g = tt_exec_grad_of(x, l->out), dbelow = wanted ? tt_exec_grad_of(x, l->in[0]) : NONE;
    tt_precision gp = tt_exec_band_store(x, tt_exec_grad_root(x, l->out));
    tt_precision bp = tt_exec_band_store(x, l->in[0]);
    tt_precision dp = wanted ? tt_exec_band_store(x, tt_exec_grad_root(x, l->in[0])) : FP32;
    for (int first = 0; first < o->height; first += step) {
        int rows = min_int(step, o->height - first);
        TT_TRY(gather(x, room(x, 1), g, gp, l->out, n, first, rows, 0));
        TT_TRY(gather(x, room(x, 0), below, bp, l->in[0], n, first / 2, rows / 2, 0));
        if (wanted)
            TT_TRY(tt_fill(m->be, room(x, 2), 0.0f, band_count(x, l->in[0], n, rows / 2)));
        tt_conv_transpose2d_desc d = up_desc(x, l, rows);
        TT_TRY(tt_conv_transpose2d_backward(m->be, wanted ? room(x, 2) : NONE,
                                            tt_model_grad(m, l->weight), tt_model_grad(m, l->bias),
                                            room(x, 1), room(x, 0), tt_model_param(m, l->weight),
                                            &d, tt_exec_workspace(x)));
        if (wanted) TT_TRY(scatter(x, dbelow, dp, l->in[0], room(x, 2), n, first / 2, rows / 2, 0));
    }
    return NULL;
}

/* ---- the layers ------------------------------------------------------------------- */

static tt_status unsupported(const tt_layer *l)
{
    return tt_error_new(TT_ERR_UNSUPPORTED, "layer '%s': the banded step runs convolutions, "
                        "norms, 2x2 max pooling and up-convolutions, not this kind yet; use fp32 "
                        "storage or no checkpointing for this model", l->name);
}

static int pool_2x2(const tt_layer *l) { return l->kernel == 2 && l->stride == 2 && !l->pad; }

static tt_status band_forward(tt_exec *x, tt_layer *l, tt_mem out, int again)
{
    switch (l->kind) {
    case TT_LAYER_CONV:
        return conv_forward(x, l, out, again);
    case TT_LAYER_NORM:
        return norm_forward(x, l, out, again);
    case TT_LAYER_MAX_POOL:
        return pool_2x2(l) ? pool_forward(x, l, out, again) : unsupported(l);
    case TT_LAYER_CONV_T:
        return l->kernel == 2 && l->stride == 2 ? up_forward(x, l, out, again) : unsupported(l);
    default:
        return unsupported(l);
    }
}

static tt_status band_backward(tt_exec *x, const tt_layer *l)
{
    switch (l->kind) {
    case TT_LAYER_CONV:
        return conv_backward(x, l);
    case TT_LAYER_NORM:
        return norm_backward(x, l);
    case TT_LAYER_MAX_POOL:
        return pool_2x2(l) ? pool_backward(x, l) : unsupported(l);
    case TT_LAYER_CONV_T:
        return up_backward(x, l);
    default:
        return unsupported(l);
    }
}

const tt_exec_runner tt_exec_band_runner = {band_forward, band_backward};
