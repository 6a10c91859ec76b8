/* Channel concatenation: forward vs the double reference, finite-difference
 * gradients of both inputs, backward adds, and the copy-free views (batch 1,
 * and batch-strided producers for batch > 1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/activation.h"
#include "ops/concat.h"
#include "ref_act.h"

/* Tolerances: concat moves floats (forward exact); backward adds floats of
 * size 1 to floats of size 1 (half an ulp each time), which near zero by
 * cancellation is an absolute error: relative with a floor of 0.1. */
#define GRAD_FLOOR 0.1
#define GRAD_TOL 1e-5
#define GRAD_H 1e-3

/* Launches so far, as the program cache counts them (one lookup each). */
static uint64_t launches(const tt_backend *be)
{
    return be->programs.built_from_source + be->programs.loaded_from_disk +
           be->programs.memory_hits;
}

typedef struct loss_ctx {
    const tt_concat_desc *desc;
    const double *a, *b, *dy; /* the one being varied is replaced by x */
    int vary_b;
    double *y;
    size_t out_count;
} loss_ctx;

/* L = sum(dy * concat(a, b)) as a function of a (or of b). */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    ref_concat_forward(c->y, c->vary_b ? c->a : x, c->vary_b ? x : c->b, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

static void check_concat(tt_concat_desc d)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 31 + (uint64_t)d.channels_a * 5 + (uint64_t)d.height;
    size_t plane = (size_t)d.height * d.width;
    size_t na = d.batch * d.channels_a * plane, nb = d.batch * d.channels_b * plane;
    size_t m = na + nb;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *dy = malloc(m * sizeof *dy);
    float *da0 = malloc(na * sizeof *da0), *db0 = malloc(nb * sizeof *db0);
    float *got = malloc(m * sizeof *got);
    double *want = malloc(m * sizeof *want), *ga = malloc(na * sizeof *ga);
    double *gb = malloc(nb * sizeof *gb), *scratch = malloc(m * sizeof *scratch);
    CU_ASSERT_FATAL(a && b && dy && da0 && db0 && got && want && ga && gb && scratch);
    th_fill_uniform(a, na, -1, 1, &seed);
    th_fill_uniform(b, nb, -1, 1, &seed);
    th_fill_uniform(dy, m, -1, 1, &seed);
    th_fill_uniform(da0, na, -1, 1, &seed);
    th_fill_uniform(db0, nb, -1, 1, &seed);
    double *ad = th_to_double(a, na), *bd = th_to_double(b, nb), *dyd = th_to_double(dy, m);
    tt_buffer *ba = th_upload(a, na, "cat.a"), *bb = th_upload(b, nb, "cat.b");
    tt_buffer *by = th_zeros(m, "cat.y"), *bdy = th_upload(dy, m, "cat.dy");
    tt_buffer *bda = th_upload(da0, na, "cat.da"), *bdb = th_upload(db0, nb, "cat.db");

    TH_OK(tt_concat_forward(be, tt_mem_of(by), tt_mem_of(ba), tt_mem_of(bb), &d));
    th_download(got, by, m);
    ref_concat_forward(want, ad, bd, &d);
    double fwd_err = th_max_rel_error(got, want, m, 1e-3);

    loss_ctx ctx = {&d, ad, bd, dyd, 0, scratch, m};
    th_numeric_grad(loss, &ctx, ad, na, GRAD_H, ga);
    ctx.vary_b = 1;
    th_numeric_grad(loss, &ctx, bd, nb, GRAD_H, gb);

    double grad_err = 0, twice_err = 0;
    for (int pass = 1; pass <= 2; pass++) {
        TH_OK(tt_concat_backward(be, tt_mem_of(bda), tt_mem_of(bdb), tt_mem_of(bdy), &d));
        th_download(got, bda, na);
        for (size_t i = 0; i < na; i++) want[i] = da0[i] + pass * ga[i];
        double ea = th_max_rel_error(got, want, na, GRAD_FLOOR);
        th_download(got, bdb, nb);
        for (size_t i = 0; i < nb; i++) want[i] = db0[i] + pass * gb[i];
        double eb = th_max_rel_error(got, want, nb, GRAD_FLOOR);
        *(pass == 1 ? &grad_err : &twice_err) = fmax(ea, eb);
    }

    /* the analytic reference agrees with the numeric gradients */
    double *ra = calloc(na, sizeof *ra), *rb = calloc(nb, sizeof *rb);
    CU_ASSERT_FATAL(ra && rb);
    ref_concat_backward(ra, rb, dyd, &d);
    double ref_err = 0;
    for (size_t i = 0; i < na; i++) ref_err = fmax(ref_err, fabs(ra[i] - ga[i]));
    for (size_t i = 0; i < nb; i++) ref_err = fmax(ref_err, fabs(rb[i] - gb[i]));

    printf("\n  concat (%d,%d+%d,%d,%d): forward %.2e, grad vs numeric %.2e, ref vs numeric "
           "%.2e, twice %.2e",
           d.batch, d.channels_a, d.channels_b, d.height, d.width, fwd_err, grad_err, ref_err,
           twice_err);
    CU_ASSERT(fwd_err == 0);
    CU_ASSERT(grad_err < GRAD_TOL);
    CU_ASSERT(ref_err < 1e-8);
    CU_ASSERT(twice_err < GRAD_TOL);

    tt_buffer_free(ba), tt_buffer_free(bb), tt_buffer_free(by), tt_buffer_free(bdy);
    tt_buffer_free(bda), tt_buffer_free(bdb);
    free(a), free(b), free(dy), free(da0), free(db0), free(got), free(want), free(ga), free(gb);
    free(scratch), free(ad), free(bd), free(dyd), free(ra), free(rb);
}

static void test_shapes(void)
{
    const tt_concat_desc cases[] = {
        {1, 3, 5, 7, 9}, {2, 5, 3, 5, 3}, {2, 3, 5, 1, 1}, {1, 1, 2, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_concat(cases[i]);
}

/* Only one gradient wanted: the other is (tt_mem){0} and skipped. */
static void test_one_gradient(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_concat_desc d = {2, 3, 5, 2, 3};
    size_t na = 2 * 3 * 6, m = 2 * 8 * 6;
    float dy[96], da[36];
    uint64_t seed = 5;
    th_fill_uniform(dy, m, -1, 1, &seed);
    tt_buffer *bdy = th_upload(dy, m, "one.dy"), *bda = th_zeros(na, "one.da");
    TH_OK(tt_concat_backward(be, tt_mem_of(bda), (tt_mem){0}, tt_mem_of(bdy), &d));
    th_download(da, bda, na);
    int exact = 1;
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 18; i++) exact &= da[n * 18 + i] == dy[n * 48 + i];
    CU_ASSERT(exact);
    tt_buffer_free(bdy), tt_buffer_free(bda);
}

/* Batch 1: producers write straight into the views; concat then costs no
 * launch and the whole is right.  The whole sits 3 floats into its buffer. */
static void test_view_batch1(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_concat_desc d = {1, 3, 5, 7, 9};
    size_t plane = 63, na = 3 * plane, nb = 5 * plane, m = na + nb;
    float xa[3 * 63], b[5 * 63], got[8 * 63];
    double wa[3 * 63], wb[5 * 63], want[8 * 63];
    uint64_t seed = 9;
    th_fill_uniform(xa, na, -1, 1, &seed);
    th_fill_uniform(b, nb, -1, 1, &seed);
    tt_buffer *bxa = th_upload(xa, na, "view.xa"), *bwhole = th_zeros(m + 3, "view.whole");
    tt_mem whole = tt_mem_f32(tt_mem_of(bwhole), 3);
    tt_mem a_view, b_view;
    size_t stride = 0;
    CU_ASSERT_EQUAL(tt_concat_views(&d, whole, &a_view, &b_view, &stride), 1);
    CU_ASSERT_EQUAL(a_view.offset, 3 * sizeof(float));
    CU_ASSERT_EQUAL(b_view.offset, (3 + na) * sizeof(float));
    CU_ASSERT_EQUAL(stride, m);
    /* producers: a ReLU writes a, an upload writes b */
    TH_OK(tt_relu_forward(be, a_view, tt_mem_of(bxa), na));
    TH_OK(tt_write(be, b_view, b, sizeof b));
    uint64_t before = launches(be);
    TH_OK(tt_concat_forward(be, whole, a_view, b_view, &d));
    CU_ASSERT_EQUAL(launches(be), before); /* nothing to copy */
    TH_OK(tt_read(be, got, whole, sizeof got));
    for (size_t i = 0; i < na; i++) wa[i] = xa[i] > 0 ? xa[i] : 0;
    for (size_t i = 0; i < nb; i++) wb[i] = b[i];
    ref_concat_forward(want, wa, wb, &d);
    double err = th_max_rel_error(got, want, m, 1e-3);

    /* backward: da is the view of dout (it already holds its slice), db is
     * its own buffer and gets dout[:, Ca:] added; dout is left alone */
    float dy[8 * 63], db0[5 * 63], dback[8 * 63], dbgot[5 * 63];
    th_fill_uniform(dy, m, -1, 1, &seed);
    th_fill_uniform(db0, nb, -1, 1, &seed);
    tt_buffer *bdy = th_upload(dy, m, "view.dy"), *bdb = th_upload(db0, nb, "view.db");
    tt_mem da_view;
    tt_concat_views(&d, tt_mem_of(bdy), &da_view, NULL, NULL);
    TH_OK(tt_concat_backward(be, da_view, tt_mem_of(bdb), tt_mem_of(bdy), &d));
    th_download(dback, bdy, m);
    th_download(dbgot, bdb, nb);
    CU_ASSERT(memcmp(dback, dy, sizeof dy) == 0);
    double gerr = 0;
    for (size_t i = 0; i < nb; i++)
        gerr = fmax(gerr, fabs((double)dbgot[i] - ((double)db0[i] + dy[na + i])));
    printf("\n  view N=1: forward %.2e, db %.2e (absolute)", err, gerr);
    CU_ASSERT(err == 0);
    CU_ASSERT(gerr < 1e-6);
    tt_buffer_free(bxa), tt_buffer_free(bwhole), tt_buffer_free(bdy), tt_buffer_free(bdb);
}

/* Batch 2: a producer that writes image n at view + n * batch_stride fills
 * its part in place; the other part (own buffer) is copied. */
static void test_view_batch_stride(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_concat_desc d = {2, 3, 5, 5, 3};
    size_t plane = 15, ia = 3 * plane, ib = 5 * plane, na = 2 * ia, nb = 2 * ib, m = na + nb;
    float xa[2 * 45], b[2 * 75], got[2 * 120];
    double wa[2 * 45], wb[2 * 75], want[2 * 120];
    uint64_t seed = 13;
    th_fill_uniform(xa, na, -1, 1, &seed);
    th_fill_uniform(b, nb, -1, 1, &seed);
    tt_buffer *bxa = th_upload(xa, na, "stride.xa"), *bb = th_upload(b, nb, "stride.b");
    tt_buffer *bwhole = th_zeros(m, "stride.whole");
    tt_mem a_view;
    size_t stride = 0;
    CU_ASSERT_EQUAL(tt_concat_views(&d, tt_mem_of(bwhole), &a_view, NULL, &stride), 0);
    CU_ASSERT_EQUAL(stride, 8 * plane);
    for (int n = 0; n < 2; n++) /* a batch-strided producer: one image at a time */
        TH_OK(tt_relu_forward(be, tt_mem_f32(a_view, n * stride),
                              tt_mem_f32(tt_mem_of(bxa), n * ia), ia));
    uint64_t before = launches(be);
    TH_OK(tt_concat_forward(be, tt_mem_of(bwhole), a_view, tt_mem_of(bb), &d));
    CU_ASSERT_EQUAL(launches(be), before + 1); /* only b is copied */
    th_download(got, bwhole, m);
    for (size_t i = 0; i < na; i++) wa[i] = xa[i] > 0 ? xa[i] : 0;
    for (size_t i = 0; i < nb; i++) wb[i] = b[i];
    ref_concat_forward(want, wa, wb, &d);
    double err = th_max_rel_error(got, want, m, 1e-3);
    printf("\n  view N=2 with batch stride: forward %.2e", err);
    CU_ASSERT(err == 0);
    tt_buffer_free(bxa), tt_buffer_free(bb), tt_buffer_free(bwhole);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_concat_desc d = {1, 2, 2, 2, 2}; /* whole: 16 floats, parts 8 */
    tt_buffer *w = th_zeros(16, "cerr.whole"), *p = th_zeros(8, "cerr.part");
    /* a part inside the whole but not at its view */
    tt_status s = tt_concat_forward(be, tt_mem_of(w), tt_mem_f32(tt_mem_of(w), 4), tt_mem_of(p), &d);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "tt_concat_views") != NULL);
    tt_status_free(s);
    /* a whole too small for its shape */
    tt_concat_desc big = {2, 2, 2, 2, 2};
    s = tt_concat_forward(be, tt_mem_of(w), tt_mem_of(p), tt_mem_of(p), &big);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "cerr.whole") != NULL);
    tt_status_free(s);
    tt_concat_desc none = {1, 0, 2, 2, 2};
    s = tt_concat_backward(be, tt_mem_of(p), tt_mem_of(p), tt_mem_of(w), &none);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_buffer_free(w), tt_buffer_free(p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward, gradients, twice", test_shapes},
        {"one gradient wanted", test_one_gradient},
        {"view at batch 1: no copy", test_view_batch1},
        {"view at batch 2 with batch stride", test_view_batch_stride},
        {"errors name the problem", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("concat", tests, TH_EVERY);
}
