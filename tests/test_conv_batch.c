/*
 * Every convolution algorithm at every micro-batch 1..8, against the
 * double reference, in every direction: the forward, the overwriting input
 * gradient, and the adding backward (input, weight and bias gradients
 * added to what was there).  The shapes are the ones that break kernels:
 * planes that are not multiples of any tile (odd, prime, 1 wide, 1 high),
 * channel counts off the 16-channel blocks, the UNet's own layers at the
 * sizes a small data set gives them, the ResNet-34 UNet's on 32x96 crops,
 * strided and 1x1 convolutions.  Every tensor is a slice of a larger
 * buffer between guards, the workspace starts as garbage.
 *
 * Errors are the largest difference over the reference tensor's largest
 * value, bounded by what the autotuner allows (conv_verify.h:
 * 16 * 2^-24 * sqrt(K) for a reduction of length K), so that a kernel
 * these tests pass is one the autotuner would not refuse on its own
 * inputs.  The largest error of each algorithm over its bound is printed.
 * A direction runs under the one row whose code it is: a row's fallback
 * to another row, and an entry that is an earlier row's (direct_tiled's
 * backward is direct's), are that row's checks, not run twice.
 * Each shape computes its double reference once, image by image, for all
 * the batches and algorithms; finite differences live in the
 * per-algorithm suites.  The heavy shapes (the ResNet's but its 1x1
 * shortcut, and the plane that takes im2col_gemm's chunks) run at batches
 * 1, 3 and 8 only (every batch with TH_SWEEP_FULL=1) under the rows AUTO never times on the device (on an OpenCL CPU
 * direct's scalar kernels and Winograd F(2x2): GPU code, checked here for
 * the GPUs; im2col_gemm, the autotuner's reference, is not paced) and
 * under every row on a CPU's Vulkan (lavapipe, far slower than PoCL on
 * these kernels); every other shape and row runs at every batch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_algo.h"
#include "ops/conv_verify.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"

typedef struct sweep_shape {
    const char *name;
    int cin, h, w, cout, k, stride, pad;
    int heavy; /* many channels or a large plane: paced (test_sweep) */
} sweep_shape;

static const sweep_shape shapes[] = {
    {"unet enc 16->16 16x24", 16, 16, 24, 16, 3, 1, 1, 0},
    {"unet dec 32->16 16x24", 32, 16, 24, 16, 3, 1, 1, 0},
    {"unet bottom 16->32 8x12", 16, 8, 12, 32, 3, 1, 1, 0},
    {"unet bottom 32->32 8x12", 32, 8, 12, 32, 3, 1, 1, 0},
    {"unet enc 16->16 24x16", 16, 24, 16, 16, 3, 1, 1, 0},
    {"unet dec 32->16 24x16", 32, 24, 16, 16, 3, 1, 1, 0},
    {"unet bottom 16->32 12x8", 16, 12, 8, 32, 3, 1, 1, 0},
    {"unet bottom 32->32 12x8", 32, 12, 8, 32, 3, 1, 1, 0},
    {"stem 3->8 32x48", 3, 32, 48, 8, 3, 1, 1, 0},
    {"8->16 prime 13x7", 8, 13, 7, 16, 3, 1, 1, 0},
    {"16->16 odd 9x11", 16, 9, 11, 16, 3, 1, 1, 0},
    {"16->16 1-wide 7x1", 16, 7, 1, 16, 3, 1, 1, 0},
    {"16->16 1-high 1x9", 16, 1, 9, 16, 3, 1, 1, 0},
    {"48->16 pad 0 6x10", 48, 6, 10, 16, 3, 1, 0, 0},
    {"16->32 pad 2 5x6", 16, 5, 6, 32, 3, 1, 2, 0},
    {"5->7 stride 2 11x9", 5, 11, 9, 7, 3, 2, 1, 0},
    {"16->16 stride 2 10x14", 16, 10, 14, 16, 3, 2, 1, 0},
    {"3->16 7x7 stride 2 17x19", 3, 17, 19, 16, 7, 2, 3, 0},
    {"16->3 1x1 head 9x13", 16, 9, 13, 3, 1, 1, 0, 0},
    {"5->6 5x5 kernel 9x8", 5, 9, 8, 6, 5, 1, 2, 0},
    {"16->16 chunked 128x128", 16, 128, 128, 16, 3, 1, 1, 1},
    /* the ResNet-34 UNet on 32x96 crops: its channel counts, each layer
     * on the plane that crop gives it (64x96's widths, half the rows) */
    {"resnet stem 3->64 7x7 s2 32x96", 3, 32, 96, 64, 7, 2, 3, 1},
    {"resnet layer1 64->64 8x24", 64, 8, 24, 64, 3, 1, 1, 1},
    {"resnet layer2.0 64->128 s2 8x24", 64, 8, 24, 128, 3, 2, 1, 1},
    {"resnet layer2 128->128 4x12", 128, 4, 12, 128, 3, 1, 1, 1},
    {"resnet layer2 down 64->128 1x1 s2", 64, 8, 24, 128, 1, 2, 0, 0},
    {"resnet layer3 256->256 2x6", 256, 2, 6, 256, 3, 1, 1, 1},
    {"resnet layer4 512->512 1x3", 512, 1, 3, 512, 3, 1, 1, 1},
    {"resnet layer4.0 256->512 s2 2x6", 256, 2, 6, 512, 3, 2, 1, 1},
    {"resnet dec 768->256 2x6", 768, 2, 6, 256, 3, 1, 1, 1},
    {"resnet dec 384->128 4x12", 384, 4, 12, 128, 3, 1, 1, 1},
    {"resnet dec 192->64 8x24", 192, 8, 24, 64, 3, 1, 1, 1},
    {"resnet dec 128->32 16x48", 128, 16, 48, 32, 3, 1, 1, 1},
    {"resnet dec 32->16 32x96", 32, 32, 96, 16, 3, 1, 1, 1},
};
#define SHAPES (sizeof shapes / sizeof shapes[0])
#define MAX_BATCH 8

static tt_conv2d_desc desc_of(const sweep_shape *s, int batch, tt_conv_algo algo)
{
    tt_conv2d_desc d = {batch, s->cin, s->h, s->w, s->cout, s->k, s->k, s->stride,
                        s->stride, s->pad, s->pad, 1, 1, 1, algo, 0, {0}, 0};
    return d;
}

/* max |got - want| / max |want| */
static double scaled_error(const float *got, const double *want, size_t n)
{
    double top = 0, err = 0;
    for (size_t i = 0; i < n; i++) top = fmax(top, fabs(want[i]));
    for (size_t i = 0; i < n; i++) err = fmax(err, fabs(got[i] - want[i]));
    return top > 0 ? err / top : err;
}

/* One batch's tensors and references: views into a shape_ref. */
typedef struct sweep_data {
    size_t n_in, n_w, n_out;
    const float *x, *w, *b, *dy, *base_dx, *base_dw, *base_db;
    const double *want_y, *want_dx, *want_dw, *want_db; /* dx, dw, db: base + gradient */
    const double *want_dx0;                             /* the gradient alone */
} sweep_data;

/* A shape's tensors at MAX_BATCH images and their double reference,
 * computed image by image: batch n is the first n images (NCHW keeps them
 * contiguous), and its weight and bias gradients are the base plus the
 * first n images' sums, kept for every n.  One reference of MAX_BATCH
 * images serves all eight batches. */
typedef struct shape_ref {
    size_t in1, out1, n_w, cout; /* floats of one image's input and output */
    float *x, *w, *b, *dy, *base_dx, *base_dw, *base_db;
    double *want_y, *want_dx, *want_dx0;
    double *want_dw[MAX_BATCH], *want_db[MAX_BATCH];
} shape_ref;

static void shape_ref_make(shape_ref *r, const sweep_shape *shape, uint64_t seed)
{
    tt_conv2d_desc d = desc_of(shape, 1, TT_CONV_ALGO_IM2COL_GEMM);
    int oh = tt_conv2d_out_h(&d), ow = tt_conv2d_out_w(&d);
    size_t plane = (size_t)oh * ow;
    r->in1 = (size_t)d.in_channels * d.in_h * d.in_w;
    r->out1 = (size_t)d.out_channels * plane;
    r->n_w = (size_t)d.out_channels * d.in_channels * d.kernel_h * d.kernel_w;
    r->cout = (size_t)d.out_channels;
    size_t n_in = MAX_BATCH * r->in1, n_out = MAX_BATCH * r->out1;
    r->x = th_random_floats(n_in, -1, 1, &seed);
    r->w = th_random_floats(r->n_w, -1, 1, &seed);
    r->b = th_random_floats(r->cout, -1, 1, &seed);
    r->dy = th_random_floats(n_out, -1, 1, &seed);
    r->base_dx = th_random_floats(n_in, -1, 1, &seed);
    r->base_dw = th_random_floats(r->n_w, -1, 1, &seed);
    r->base_db = th_random_floats(r->cout, -1, 1, &seed);
    double *xd = th_to_double(r->x, n_in), *wd = th_to_double(r->w, r->n_w);
    double *bd = th_to_double(r->b, r->cout), *dyd = th_to_double(r->dy, n_out);
    double *dw = th_to_double(r->base_dw, r->n_w), *db = th_to_double(r->base_db, r->cout);
    r->want_y = malloc(n_out * sizeof(double));
    r->want_dx0 = calloc(n_in, sizeof(double));
    r->want_dx = th_to_double(r->base_dx, n_in);
    CU_ASSERT_FATAL(r->want_y && r->want_dx0 && dw && db);
    for (int n = 0; n < MAX_BATCH; n++) {
        ref_conv2d_forward(r->want_y + n * r->out1, xd + n * r->in1, wd, bd, &d);
        ref_conv2d_backward(r->want_dx0 + n * r->in1, dw, xd + n * r->in1, wd,
                            dyd + n * r->out1, &d);
        for (size_t c = 0; c < r->cout; c++)
            for (size_t p = 0; p < plane; p++) db[c] += dyd[(n * r->cout + c) * plane + p];
        r->want_dw[n] = malloc(r->n_w * sizeof(double));
        r->want_db[n] = malloc(r->cout * sizeof(double));
        CU_ASSERT_FATAL(r->want_dw[n] && r->want_db[n]);
        memcpy(r->want_dw[n], dw, r->n_w * sizeof(double));
        memcpy(r->want_db[n], db, r->cout * sizeof(double));
    }
    for (size_t i = 0; i < n_in; i++) r->want_dx[i] += r->want_dx0[i];
    free(xd), free(wd), free(bd), free(dyd), free(dw), free(db);
}

static sweep_data shape_ref_batch(const shape_ref *r, int n)
{
    sweep_data s = {n * r->in1, r->n_w, n * r->out1, r->x, r->w, r->b, r->dy, r->base_dx,
                    r->base_dw, r->base_db, r->want_y, r->want_dx, r->want_dw[n - 1],
                    r->want_db[n - 1], r->want_dx0};
    return s;
}

static void shape_ref_free(shape_ref *r)
{
    free(r->x), free(r->w), free(r->b), free(r->dy), free(r->base_dx), free(r->base_dw);
    free(r->base_db), free(r->want_y), free(r->want_dx), free(r->want_dx0);
    for (int n = 0; n < MAX_BATCH; n++) free(r->want_dw[n]), free(r->want_db[n]);
}

/* The four errors of one algorithm on one batch: forward, overwriting
 * input gradient, adding input gradient, adding weight gradient (the bias
 * gradient's folded into the last). */
typedef struct sweep_errors {
    double e[4];
    int guards_held;
} sweep_errors;

/* Every tensor as the models pass them: a slice at an offset into a
 * larger buffer, with guard floats before and after that must come through
 * untouched (a kernel that writes past its tensor, or past the workspace
 * it asked for, corrupts its neighbours in an arena; alone in a buffer of
 * its own it would go unseen).  The workspace starts as garbage, never
 * zeros, so that no algorithm can lean on what it held. */
#define GUARD_FLOATS 256
#define GUARD_VALUE -12345.0f
typedef struct guarded {
    tt_buffer *buffer;
    size_t floats;
    tt_mem mem;
} guarded;

/* `floats` floats of `host` (NULL: garbage) between two guards. */
static guarded guarded_put(const float *host, size_t floats, const char *name)
{
    guarded g = {NULL, floats, {0}};
    size_t total = floats + 2 * GUARD_FLOATS;
    float *fill = malloc(total * sizeof *fill);
    CU_ASSERT_FATAL(fill != NULL);
    for (size_t i = 0; i < total; i++) fill[i] = GUARD_VALUE;
    if (host) memcpy(fill + GUARD_FLOATS, host, floats * sizeof *fill);
    for (size_t i = 0; !host && i < floats; i++) fill[GUARD_FLOATS + i] = (float)(i % 7) - 3.0f;
    g.buffer = th_upload(fill, total, name);
    g.mem = tt_mem_f32(tt_mem_of(g.buffer), GUARD_FLOATS);
    free(fill);
    return g;
}

/* Frees the tensor, its contents into `host` (unless NULL); whether its
 * guards held. */
static int guarded_take(guarded *g, float *host)
{
    size_t total = g->floats + 2 * GUARD_FLOATS;
    float *back = malloc(total * sizeof *back);
    CU_ASSERT_FATAL(back != NULL);
    th_download(back, g->buffer, total);
    int ok = 1;
    for (size_t i = 0; i < GUARD_FLOATS; i++)
        ok &= back[i] == GUARD_VALUE && back[GUARD_FLOATS + g->floats + i] == GUARD_VALUE;
    if (host) memcpy(host, back + GUARD_FLOATS, g->floats * sizeof *host);
    tt_buffer_free(g->buffer);
    free(back);
    return ok;
}

/* The directions run_one checks (bit d: tt_conv_dir d); the others are
 * reported as 0. */
static sweep_errors run_one(const tt_conv2d_desc *d, const sweep_data *s, int dirs)
{
    tt_backend *be = th_backend();
    size_t cout = (size_t)d->out_channels;
    sweep_errors r;
    size_t most = s->n_out > s->n_in ? s->n_out : s->n_in;
    float *got = malloc((most > s->n_w ? most : s->n_w) * sizeof *got);
    CU_ASSERT_FATAL(got != NULL);
    guarded x = guarded_put(s->x, s->n_in, "batch.x"), w = guarded_put(s->w, s->n_w, "batch.w");
    guarded b = guarded_put(s->b, cout, "batch.b"), dy = guarded_put(s->dy, s->n_out, "batch.dy");
    guarded y = guarded_put(NULL, s->n_out, "batch.y");        /* overwritten */
    guarded dx0 = guarded_put(NULL, s->n_in, "batch.dx0");     /* overwritten */
    guarded dx = guarded_put(s->base_dx, s->n_in, "batch.dx"); /* added to */
    guarded dw = guarded_put(s->base_dw, s->n_w, "batch.dw");
    guarded db = guarded_put(s->base_db, cout, "batch.db");
    size_t ws_floats = (tt_conv2d_workspace_bytes(d) + 3) / 4;
    guarded ws = guarded_put(NULL, ws_floats, "batch.workspace");
    tt_mem wsm = ws_floats ? ws.mem : (tt_mem){0};
    int fwd = dirs & 1 << TT_CONV_DIR_FORWARD, data = dirs & 1 << TT_CONV_DIR_BACKWARD_DATA;
    int weight = dirs & 1 << TT_CONV_DIR_BACKWARD_WEIGHT;
    if (fwd) TH_OK(tt_conv2d_forward(be, y.mem, x.mem, w.mem, b.mem, d, wsm));
    if (data) TH_OK(tt_conv2d_input_gradient(be, dx0.mem, dy.mem, w.mem, d, wsm));
    if (data || weight)
        TH_OK(tt_conv2d_backward(be, dx.mem, dw.mem, db.mem, dy.mem, x.mem, w.mem, d, wsm));
    int held = guarded_take(&ws, NULL);
    held &= guarded_take(&x, NULL) & guarded_take(&w, NULL) & guarded_take(&b, NULL);
    held &= guarded_take(&dy, NULL);
    held &= guarded_take(&y, got);
    r.e[0] = fwd ? scaled_error(got, s->want_y, s->n_out) : 0;
    held &= guarded_take(&dx0, got);
    r.e[1] = data ? scaled_error(got, s->want_dx0, s->n_in) : 0;
    held &= guarded_take(&dx, got);
    r.e[2] = data ? scaled_error(got, s->want_dx, s->n_in) : 0;
    held &= guarded_take(&dw, got);
    r.e[3] = weight ? scaled_error(got, s->want_dw, s->n_w) : 0;
    held &= guarded_take(&db, got);
    r.e[3] = weight ? fmax(r.e[3], scaled_error(got, s->want_db, cout)) : 0;
    r.guards_held = held;
    free(got);
    return r;
}

static const char *const dir_names[4] = {"forward", "input gradient", "input gradient (adding)",
                                         "weight+bias gradient"};

/* every algorithm: its rows */
#define ALGO_(id, name, impl) TT_CONV_ALGO_##id,
static const tt_conv_algo algos[] = {TT_CONV_ALGO_ROWS(ALGO_)};
#undef ALGO_
#define ALGOS (sizeof algos / sizeof algos[0])

/* What one algorithm did over the sweep. */
typedef struct algo_tally {
    double worst[4]; /* the largest error over its bound, per direction */
    size_t runs, own, shared;
    double seconds;  /* its runs' wall time, the reference not counted */
    int lacking;     /* the backend lacks it */
} algo_tally;

static int same_entry(const tt_conv_algo_impl *x, const tt_conv_algo_impl *y, tt_conv_dir dir)
{
    return dir == TT_CONV_DIR_FORWARD         ? x->forward == y->forward
           : dir == TT_CONV_DIR_BACKWARD_DATA ? x->backward_data == y->backward_data
                                              : x->backward_weight == y->backward_weight;
}

/* The directions of algos[a] on `shape` at batch n whose code no other
 * row checks here: a direction that falls back to another row is that
 * row's, and one whose entry is an earlier row's entry (direct_tiled's
 * backward is direct's) was checked under that row, at the same shape,
 * batch and data. */
static int own_code(const sweep_shape *shape, int n, size_t a)
{
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(algos[a]);
    int dirs = 0;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        tt_conv2d_desc d = desc_of(shape, n, algos[a]);
        int own = tt_conv2d_algo_for(&d, (tt_conv_dir)dir) == algos[a];
        for (size_t b = 0; own && b < a; b++) {
            tt_conv2d_desc e = desc_of(shape, n, algos[b]);
            own = !(same_entry(impl, tt_conv2d_algo_impl(algos[b]), (tt_conv_dir)dir) &&
                    tt_conv2d_algo_for(&e, (tt_conv_dir)dir) == algos[b] &&
                    tt_conv2d_runs_on(th_backend(), &e));
        }
        dirs |= own << dir;
    }
    return dirs;
}

/* Whether AUTO would time algos[a] on `shape` on this device in some
 * direction (the kinds of device its row is tuned on, and its can_win): a
 * row that cannot win here is here only for the devices where it can. */
static int can_win_here(const sweep_shape *shape, size_t a)
{
    if (algos[a] == TT_CONV_ALGO_IM2COL_GEMM) return 1; /* the verifier's reference everywhere */
    if (!tt_conv_algo_tuned_on(th_backend(), algos[a])) return 0;
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(algos[a]);
    tt_conv2d_desc d = desc_of(shape, 1, algos[a]);
    tt_conv_shape cs;
    tt_status bad = tt_conv2d_shape(&d, &cs);
    int win = bad || !impl->can_win;
    tt_status_free(bad);
    for (int dir = 0; !win && dir < TT_CONV_DIR_COUNT; dir++)
        win = impl->can_win(th_backend(), &cs, (tt_conv_dir)dir);
    return win;
}

/* One algorithm on one shape and batch, against the reference in s. */
static void sweep_one(const sweep_shape *shape, int n, size_t a, const sweep_data *s,
                      algo_tally *t)
{
    tt_conv2d_desc d = desc_of(shape, n, algos[a]);
    if (t->lacking || !tt_conv2d_runs_on(th_backend(), &d)) {
        t->lacking = 1;
        return;
    }
    int dirs = own_code(shape, n, a);
    if (n == 1)
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            int runs_it = tt_conv2d_algo_for(&d, (tt_conv_dir)dir) == algos[a];
            t->own += runs_it;
            t->shared += runs_it && !(dirs & 1 << dir);
        }
    if (!dirs) return;
    double start = ref_conv_now_ms();
    sweep_errors r = run_one(&d, s, dirs);
    t->seconds += (ref_conv_now_ms() - start) / 1e3;
    t->runs++;
    if (!r.guards_held) {
        printf("\n    %s %s batch %d: wrote outside a tensor or its workspace",
               tt_conv_algo_name(algos[a]), shape->name, n);
        CU_FAIL("an algorithm wrote past a tensor or its workspace (printed above)");
    }
    int oh = tt_conv2d_out_h(&d), ow = tt_conv2d_out_w(&d);
    size_t reduction[4] = {(size_t)d.in_channels * d.kernel_h * d.kernel_w,
                           (size_t)d.out_channels * d.kernel_h * d.kernel_w,
                           (size_t)d.out_channels * d.kernel_h * d.kernel_w, (size_t)n * oh * ow};
    for (int k = 0; k < 4; k++) {
        double tol = tt_conv_verify_bound(reduction[k]);
        t->worst[k] = fmax(t->worst[k], r.e[k] / tol);
        if (!(r.e[k] <= tol)) {
            printf("\n    %s %s batch %d %s: %.2e (bound %.1e)", tt_conv_algo_name(algos[a]),
                   shape->name, n, dir_names[k], r.e[k], tol);
            CU_FAIL("an algorithm's result is off the reference (printed above)");
        }
    }
}

/* Every algorithm over every shape and batch; those the backend lacks are
 * left out (th_left_out), shapes one declines run its fallback. */
static void test_sweep(void)
{
    algo_tally tally[ALGOS];
    memset(tally, 0, sizeof tally);
    /* $TH_SHAPE=TEXT (test-only, by hand): the shapes whose names hold TEXT */
    const char *only = getenv("TH_SHAPE");
    const char *full = getenv("TH_SWEEP_FULL");
    int lavapipe_pace = th_backend()->kernels_of == TT_BACKEND_VULKAN &&
                        strcmp(th_backend()->device.type, "CPU") == 0;
    int pace_all = !(full && *full == '1');
    size_t paced = 0, paced_rows = 0;
    for (size_t i = 0; i < SHAPES; i++) {
        if (only && *only && !strstr(shapes[i].name, only)) continue;
        shape_ref ref;
        shape_ref_make(&ref, &shapes[i], 5000 + 97 * i);
        int pace[ALGOS];
        for (size_t a = 0; a < ALGOS; a++) {
            pace[a] = pace_all && shapes[i].heavy && (lavapipe_pace || !can_win_here(&shapes[i], a));
            paced_rows += pace[a];
        }
        paced += shapes[i].heavy && pace_all;
        for (int n = 1; n <= MAX_BATCH; n++) {
            tt_conv2d_desc d = desc_of(&shapes[i], n, TT_CONV_ALGO_IM2COL_GEMM);
            TH_OK(tt_conv2d_check(&d));
            sweep_data s = shape_ref_batch(&ref, n);
            for (size_t a = 0; a < ALGOS; a++)
                if (!pace[a] || n == 1 || n == 3 || n == MAX_BATCH)
                    sweep_one(&shapes[i], n, a, &s, &tally[a]);
        }
        shape_ref_free(&ref);
    }
    if (paced_rows)
        printf("\n    the heavy shapes (%zu here) run at "
               "batches 1, 3 and 8 under %zu shape-rows: %s (TH_SWEEP_FULL=1: every batch)",
               paced, paced_rows,
               lavapipe_pace ? "every row on a CPU's Vulkan (lavapipe)"
                             : "the rows AUTO never times on this device (not the reference, "
                             "im2col_gemm), here for other devices");
    for (size_t a = 0; a < ALGOS; a++) {
        const algo_tally *t = &tally[a];
        if (t->lacking) {
            char what[96];
            snprintf(what, sizeof what, "%s, every shape", tt_conv_algo_name(algos[a]));
            th_left_out(what, "the backend lacks the algorithm");
            continue;
        }
        printf("\n    %-17s %3zu runs in %5.1f s, %2zu shape-directions its own (%zu another "
               "row's code); largest error over its bound: forward %.2f, dinp %.2f / %.2f, "
               "dweight %.2f",
               tt_conv_algo_name(algos[a]), t->runs, t->seconds, t->own, t->shared, t->worst[0],
               t->worst[1], t->worst[2], t->worst[3]);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every algorithm at batches 1..8, every shape and direction", test_sweep},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_batch", tests, TH_EVERY);
}
