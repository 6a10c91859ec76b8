/* The Tversky region loss (src/ops/tversky.h) on every backend: the loss
 * and its count against the double reference (tests/ref_tversky.c) in both
 * mask kinds and both region kinds, the gradient against central
 * differences, soft Dice as alpha = beta = 0.5, an accumulation window
 * split in two equal to one batch, ignore and invalid items, class
 * weights, logits of +-100, backward adding, bad arguments, and PyTorch
 * (tests/torch_tversky_check.py). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "ops/tversky.h"
#include "ref_data.h"
#include "ref_loss.h"
#include "ref_tversky.h"

/* 1x1, odd, C = 1, prime sizes (several work-groups per region), and one
 * past TVERSKY_MAX_CHUNKS groups a region (per class over the batch) */
static const ref_tversky_shape shapes[] = {
    {1, 1, 1, 1, 0},   {1, 3, 5, 7, 0},    {2, 5, 5, 7, 20},   {3, 3, 1, 1, 30},
    {1, 5, 17, 33, 25}, {2, 1, 3, 4, 40},  {2, 3, 61, 67, 10}, {2, 2, 200, 200, 5},
};
#define SHAPES (sizeof shapes / sizeof shapes[0])

/* alpha, beta of the cases, in turn */
static const double alphas[] = {0.3, 0.5, 0.7, 1.0, 0.0};
static const double betas[] = {0.7, 0.5, 0.3, 1.0, 1.0};

static double ref_loss_of(const double *x, void *ctx)
{
    const ref_tversky_data *d = ctx;
    ref_tversky_case k = ref_tversky_case_of(d);
    return ref_tversky(x, d->targets, &k, NULL, NULL);
}

/* Case `k` of mode (softmax, per_image): alpha and beta in turn, weights
 * on every other case. */
static ref_tversky_data mode_case(size_t k, int softmax, int per_image, uint64_t seed, float range)
{
    ref_tversky_data d = ref_tversky_make(&shapes[k], softmax, per_image, seed, range);
    d.tv.alpha = (float)alphas[k % 5];
    d.tv.beta = (float)betas[k % 5];
    d.tv.smooth = k % 2 ? 1.0f : 0.25f;
    d.has_weights = k % 2 == 1;
    for (int c = 0; c < d.desc.c; c++) d.weights[c] = 0.5 + 0.75 * c;
    return d;
}

static void test_forward_vs_reference(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0;
    for (int mode = 0; mode < 4; mode++)
        for (size_t k = 0; k < SHAPES; k++) {
            ref_tversky_data d = mode_case(k, mode / 2, mode % 2, 100 + k, 4.0f);
            tt_loss_value v = ref_tversky_device_forward(&d);
            double *x = th_to_double(d.logits, d.total);
            long invalid;
            ref_tversky_case rc = ref_tversky_case_of(&d);
            double want = ref_tversky(x, d.targets, &rc, &invalid, NULL);
            double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
            printf("\n    %s %s N=%d C=%d %dx%d a=%g b=%g%s: loss %.7g (ref %.7g) rel err %.2e",
                   d.tv.softmax ? "softmax" : "sigmoid", d.tv.per_image ? "per image" : "batch",
                   d.desc.n, d.desc.c, d.desc.h, d.desc.w, d.tv.alpha, d.tv.beta,
                   d.has_weights ? " weighted" : "", v.sum, want, err);
            CU_ASSERT(err < 1e-5); /* float sums over each region's items */
            CU_ASSERT_EQUAL(v.count, d.tv.per_image ? (uint32_t)d.desc.n : 1u);
            CU_ASSERT_EQUAL(v.invalid, 0);
            CU_ASSERT_EQUAL(invalid, 0);
            if (err > worst) worst = err;
            free(x);
            ref_tversky_free(&d);
        }
    printf("\n    largest forward rel error %.2e\n", worst);
}

static void test_backward(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0, worst_ref = 0, worst_twice = 0;
    for (int mode = 0; mode < 4; mode++)
        for (size_t k = 0; k < SHAPES; k++) {
            ref_tversky_data d = mode_case(k, mode / 2, mode % 2, 200 + k, 3.0f);
            float *got = ref_tversky_device_backward(&d, NULL, 1, 1);
            double *x = th_to_double(d.logits, d.total);
            double *analytic = calloc(d.total, sizeof(double));
            CU_ASSERT_FATAL(analytic != NULL);
            ref_tversky_case rc = ref_tversky_case_of(&d);
            ref_tversky(x, d.targets, &rc, NULL, analytic);
            double scale = 0;
            for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(analytic[i]));
            if (scale == 0) scale = 1e-30;
            if (d.total <= 2000) { /* central differences: 2 * total evaluations */
                double *numeric = calloc(d.total, sizeof(double));
                CU_ASSERT_FATAL(numeric != NULL);
                th_numeric_grad(ref_loss_of, &d, x, d.total, 1e-6, numeric);
                double ref_err = 0;
                for (size_t i = 0; i < d.total; i++)
                    ref_err = fmax(ref_err, fabs(numeric[i] - analytic[i]) / scale);
                CU_ASSERT(ref_err < 1e-6); /* the reference's own derivative */
                if (ref_err > worst_ref) worst_ref = ref_err;
                double fd_err = th_max_rel_error(got, numeric, d.total, scale);
                CU_ASSERT(fd_err < 1e-5);
                free(numeric);
            }
            /* relative to the largest gradient: float sums */
            double err = th_max_rel_error(got, analytic, d.total, scale);
            CU_ASSERT(err < 1e-5);
            if (err > worst) worst = err;
            int zero_at_ignored = 1;
            for (size_t i = 0; i < d.total; i++) {
                size_t q = d.tv.softmax ? (i / ((size_t)d.desc.c * d.desc.h * d.desc.w)) *
                                                  d.desc.h * d.desc.w +
                                              i % ((size_t)d.desc.h * d.desc.w)
                                        : i;
                if (d.targets[q] == 255) zero_at_ignored &= got[i] == 0.0f;
            }
            CU_ASSERT(zero_at_ignored);
            /* adds: twice at scale 0.25 onto a start adds half the gradient */
            float *start = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(start != NULL);
            uint64_t seed = 7;
            th_fill_uniform(start, d.total, -(float)scale, (float)scale, &seed);
            float *twice = ref_tversky_device_backward(&d, start, 0.25f, 2);
            for (size_t i = 0; i < d.total; i++) analytic[i] = start[i] + 0.5 * got[i];
            double e2 = th_max_rel_error(twice, analytic, d.total, scale);
            CU_ASSERT(e2 < 1e-6);
            if (e2 > worst_twice) worst_twice = e2;
            free(start), free(twice), free(analytic), free(got), free(x);
            ref_tversky_free(&d);
        }
    printf("\n    largest gradient error %.2e (reference vs differences %.2e), twice-adds-twice "
           "%.2e\n", worst, worst_ref, worst_twice);
}

/* alpha = beta = 0.5 with smooth / 2, per image, sigmoid is ref_dice */
static void test_dice_equivalence(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0, worst_grad = 0;
    for (size_t k = 0; k < SHAPES; k++) {
        ref_tversky_data d = ref_tversky_make(&shapes[k], 0, 1, 300 + k, 4.0f);
        double smooth = k % 2 ? 1.0 : 1e-3;
        d.tv.smooth = (float)(smooth / 2);
        tt_loss_value v = ref_tversky_device_forward(&d);
        float *got = ref_tversky_device_backward(&d, NULL, 1, 1);
        double *x = th_to_double(d.logits, d.total);
        double *want_grad = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(want_grad != NULL);
        int hw = d.desc.h * d.desc.w;
        double want = ref_dice(x, d.targets, d.desc.n, d.desc.c, hw, 255, smooth, want_grad);
        ref_tversky_case rc = ref_tversky_case_of(&d);
        rc.smooth = smooth / 2;
        CU_ASSERT(fabs(ref_tversky(x, d.targets, &rc, NULL, NULL) - want) <= 1e-12 * fabs(want));
        double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
        double scale = 0;
        for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(want_grad[i]));
        double gerr = th_max_rel_error(got, want_grad, d.total, scale);
        CU_ASSERT(err < 1e-5);
        CU_ASSERT(gerr < 1e-5);
        CU_ASSERT_EQUAL(v.count, (uint32_t)d.desc.n);
        worst = fmax(worst, err), worst_grad = fmax(worst_grad, gerr);
        free(got), free(x), free(want_grad);
        ref_tversky_free(&d);
    }
    printf("\n    vs ref_dice: loss rel error %.2e, gradient %.2e\n", worst, worst_grad);
}

/* A window of two micro-batches (1 and 2 images): their sums added, one
 * finish, backward_with on each half == the batch of 3 (per_image 0). */
static void test_window(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int softmax = 0; softmax < 2; softmax++) {
        ref_tversky_shape shape = {3, 3, 19, 23, 10};
        ref_tversky_data d = ref_tversky_make(&shape, softmax, 0, 400 + softmax, 4.0f);
        d.tv.alpha = 0.3f, d.tv.beta = 0.7f;
        d.has_weights = softmax;
        d.weights[0] = 2, d.weights[1] = 0.5, d.weights[2] = 1;
        d.targets[5] = softmax ? 7 : 3; /* invalid, counted in the window */
        tt_loss_value whole = ref_tversky_device_forward(&d);
        float *whole_grad = ref_tversky_device_backward(&d, NULL, 1, 1);
        CU_ASSERT_EQUAL(whole.invalid, 1);

        ref_tversky_device b = ref_tversky_upload(&d);
        size_t regions = tt_tversky_regions(&d.desc, &d.tv);
        tt_buffer *sums = th_zeros(regions * 3, "sums"), *stats = th_zeros(regions * 2, "stats");
        tt_buffer *invalid = th_zeros(1, "invalid"), *res = ref_loss_block();
        tt_buffer *bg = th_zeros(d.total, "dlogits");
        size_t plane = (size_t)d.desc.h * d.desc.w, image_targets = softmax ? plane
                                                                           : plane * d.desc.c;
        for (int half = 0; half < 2; half++) { /* images [0, 1) and [1, 3) */
            tt_loss_desc part = d.desc;
            part.n = half ? 2 : 1;
            tt_mem x = tt_mem_at(tt_mem_of(b.logits), half * plane * d.desc.c * sizeof(float));
            tt_mem t = tt_mem_at(tt_mem_of(b.targets), half * image_targets);
            TH_OK(tt_tversky_sums(be, tt_mem_of(sums), tt_mem_of(invalid), x, t, &part, &d.tv));
        }
        TH_OK(tt_tversky_finish(be, tt_mem_of(res), tt_mem_of(stats), tt_mem_of(sums),
                                tt_mem_of(invalid), &d.desc, &d.tv));
        for (int half = 0; half < 2; half++) {
            tt_loss_desc part = d.desc;
            part.n = half ? 2 : 1;
            size_t at = half * plane * d.desc.c * sizeof(float);
            tt_mem t = tt_mem_at(tt_mem_of(b.targets), half * image_targets);
            TH_OK(tt_tversky_backward_with(be, tt_mem_at(tt_mem_of(bg), at), tt_mem_of(stats),
                                           tt_mem_at(tt_mem_of(b.logits), at), t, &part, &d.tv,
                                           1));
        }
        tt_loss_value v;
        tt_status s = tt_loss_read(be, tt_mem_of(res), "Tversky", &v);
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT); /* the invalid target */
        tt_status_free(s);
        float *got = malloc(d.total * sizeof(float));
        CU_ASSERT_FATAL(got != NULL);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        ref_tversky_case rc = ref_tversky_case_of(&d);
        double want = ref_tversky(x, d.targets, &rc, NULL, NULL);
        double scale = 0;
        for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(whole_grad[i]));
        double err = fabs(v.sum - whole.sum) / fabs(whole.sum);
        double gerr = th_max_rel_error_f(got, whole_grad, d.total, scale);
        printf("\n    %s window of 1 + 2 images: loss %.7g, batch %.7g (ref %.7g), rel err "
               "%.2e, gradient %.2e", softmax ? "softmax" : "sigmoid", v.sum, whole.sum, want,
               err, gerr);
        CU_ASSERT(err < 1e-6);
        CU_ASSERT(gerr < 1e-6);
        CU_ASSERT(fabs(v.sum - want) < 1e-5 * fabs(want));
        CU_ASSERT_EQUAL(v.count, 1);
        CU_ASSERT_EQUAL(v.invalid, 1);
        free(got), free(x), free(whole_grad);
        tt_buffer_free(sums), tt_buffer_free(stats), tt_buffer_free(invalid);
        tt_buffer_free(res), tt_buffer_free(bg);
        ref_tversky_device_free(&b);
        ref_tversky_free(&d);
    }
    printf("\n");
}

/* Softmax labels: 255 ignored, labels >= C invalid once a pixel (not once
 * a class); neither gets a gradient in any class.  Then ignore = 0 (a
 * class) and no ignore (255 invalid). */
static void test_softmax_ignore_invalid(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    for (int variant = 0; variant < 3; variant++) {
        ref_tversky_shape shape = {2, 4, 9, 11, 15};
        ref_tversky_data d = ref_tversky_make(&shape, 1, variant % 2, 500 + variant, 3.0f);
        d.desc.ignore = variant == 0 ? 255 : variant == 1 ? 0 : TT_LOSS_NO_IGNORE;
        d.tv.alpha = 0.4f, d.tv.beta = 0.6f;
        d.targets[3] = 4, d.targets[100] = 200, d.targets[d.target_bytes - 1] = 9;
        long bad;
        double *x = th_to_double(d.logits, d.total);
        ref_tversky_case rc = ref_tversky_case_of(&d);
        double want = ref_tversky(x, d.targets, &rc, &bad, NULL);
        long ignored = 0;
        for (size_t q = 0; q < d.target_bytes; q++) ignored += d.targets[q] == d.desc.ignore;
        tt_loss_value v = ref_tversky_device_forward(&d);
        float *got = ref_tversky_device_backward(&d, NULL, 1, 1);
        int hw = d.desc.h * d.desc.w, quiet = 1;
        for (size_t q = 0; q < d.target_bytes; q++) {
            int label = d.targets[q];
            if (label != d.desc.ignore && label < d.desc.c) continue;
            size_t base = (q / hw) * d.desc.c * hw + q % hw;
            for (int k = 0; k < d.desc.c; k++) quiet &= got[base + (size_t)k * hw] == 0.0f;
        }
        double err = fabs(v.sum - want) / fabs(want);
        printf("\n    ignore %d: %ld ignored, %u invalid (ref %ld), loss rel err %.2e",
               d.desc.ignore, ignored, v.invalid, bad, err);
        CU_ASSERT(ignored > 0 || variant == 2);
        CU_ASSERT_EQUAL(v.invalid, (uint32_t)bad);
        CU_ASSERT(bad >= 3);
        CU_ASSERT(err < 1e-5);
        CU_ASSERT(quiet);
        free(got), free(x);
        ref_tversky_free(&d);
    }
    printf("\n");
}

/* Known values, softmax, C = 2, 8 pixels: labels 0 0 0 0 1 1 1 1, logits
 * saying class 0 everywhere at +-100.  Class 0: I = 4, P = 8, T = 4, score
 * (4 + s) / (4 + 4 alpha + s); class 1: I = P = 0, T = 4, score s / (4 beta
 * + s).  Weights (1, 0) keep class 0's term alone, (0, 2) class 1's. */
static void test_weights_known(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float x[16];
    uint8_t labels[8];
    for (int i = 0; i < 8; i++) x[i] = 100, x[8 + i] = -100, labels[i] = i >= 4;
    const double a = 0.3, b = 0.7, s = 1;
    const double term0 = 1 - (4 + s) / (4 + 4 * a + s), term1 = 1 - s / (4 * b + s);
    const double weights[3][2] = {{1, 0}, {0, 2}, {3, 1}};
    const double want[3] = {term0, term1, (3 * term0 + term1) / 4};
    for (int w = 0; w < 3; w++) {
        ref_tversky_data d = {.desc = tt_loss_desc_make(1, 2, 2, 4), .total = 16,
                              .target_bytes = 8};
        d.tv = (tt_tversky){(float)a, (float)b, (float)s, 1, w % 2};
        d.logits = x, d.targets = labels, d.has_weights = 1;
        d.weights[0] = weights[w][0], d.weights[1] = weights[w][1];
        tt_loss_value v = ref_tversky_device_forward(&d);
        float *g = ref_tversky_device_backward(&d, NULL, 1, 1);
        int finite = 1;
        for (int i = 0; i < 16; i++) finite &= isfinite(g[i]);
        printf("\n    weights (%g, %g): loss %.9g (exact %.9g)", weights[w][0], weights[w][1],
               v.sum, want[w]);
        CU_ASSERT(fabs(v.sum - want[w]) < 1e-6);
        CU_ASSERT(finite);
        free(g);
    }
    printf("\n");
}

/* Logits of +-100 in every mode: finite, and the reference's values. */
static void test_large_logits(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    for (int mode = 0; mode < 4; mode++) {
        ref_tversky_shape shape = {2, 3, 7, 9, 10};
        ref_tversky_data d = ref_tversky_make(&shape, mode / 2, mode % 2, 600 + mode, 1);
        for (size_t i = 0; i < d.total; i++) d.logits[i] = d.logits[i] > 0 ? 100.0f : -100.0f;
        d.tv.alpha = 0.7f, d.tv.beta = 0.3f;
        tt_loss_value v = ref_tversky_device_forward(&d);
        float *got = ref_tversky_device_backward(&d, NULL, 1, 1);
        double *x = th_to_double(d.logits, d.total);
        double *want = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(want != NULL);
        ref_tversky_case rc = ref_tversky_case_of(&d);
        double loss = ref_tversky(x, d.targets, &rc, NULL, want);
        int finite = isfinite(v.sum);
        for (size_t i = 0; i < d.total; i++) finite &= isfinite(got[i]);
        double scale = 0;
        for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(want[i]));
        /* saturated: gradients ~e^-100 or 0 in every mode */
        double gerr = th_max_rel_error(got, want, d.total, fmax(scale, 1e-30));
        CU_ASSERT(finite);
        CU_ASSERT(fabs(v.sum - loss) < 1e-5 * fabs(loss));
        CU_ASSERT(gerr < 1e-4);
        free(got), free(x), free(want);
        ref_tversky_free(&d);
    }
}

static void expect_invalid(tt_status s, const char *word)
{
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    if (s) CU_ASSERT(strstr(tt_status_message(s), word) != NULL);
    if (s && !strstr(tt_status_message(s), word))
        printf("\n    message without '%s': %s", word, tt_status_message(s));
    tt_status_free(s);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block(), *small = th_zeros(2, "w");
    uint8_t t[12] = {0};
    tt_buffer *bt = ref_upload_u8(t, 12, "targets");
    tt_mem x = tt_mem_of(bx), tm = tt_mem_of(bt), r = tt_mem_of(res);
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    tt_tversky tv = {0.5f, 0.5f, 1.0f, 0, 1};
    tv.alpha = -1;
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "alpha");
    tv.alpha = 0, tv.beta = 0;
    expect_invalid(tt_tversky_backward(be, x, x, tm, &desc, &tv, 1), "beta");
    tv = (tt_tversky){0.5f, 0.5f, 0.0f, 0, 1};
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "smooth");
    tv = (tt_tversky){0.5f, 0.5f, 1.0f, 2, 1};
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "softmax");
    tv = (tt_tversky){0.5f, 0.5f, 1.0f, 0, 1};
    desc = tt_loss_desc_make(1, 3, 2, 3); /* 18 elements, buffers have 12 */
    expect_invalid(tt_tversky_backward(be, x, x, tm, &desc, &tv, 1), "'logits'");
    desc = tt_loss_desc_make(1, 3, 2, 2);
    desc.weights = tt_mem_of(small); /* 2 floats for 3 classes */
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "class weights");
    desc.weights = (tt_mem){NULL, 0};
    /* per image: 3 regions, sums of 9 floats and stats of 6 */
    expect_invalid(tt_tversky_sums(be, tt_mem_of(small), r, x, tm, &desc, &tv), "sums");
    expect_invalid(tt_tversky_finish(be, r, tt_mem_of(small), x, r, &desc, &tv), "stats");
    expect_invalid(tt_tversky_backward_with(be, x, tt_mem_of(small), x, tm, &desc, &tv, 1),
                   "stats");
    tv.softmax = 1;
    tt_buffer *two = ref_upload_u8(t, 2, "labels"); /* 4 pixels need 4 labels */
    expect_invalid(tt_tversky_forward(be, r, x, tt_mem_of(two), &desc, &tv), "'labels'");
    tt_buffer_free(two);
    desc = tt_loss_desc_make(4, 1, 2, 2); /* 16 logits, 16 labels */
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "logits");
    desc = tt_loss_desc_make(1, 3, 2, 2);
    desc.ignore = 300;
    expect_invalid(tt_tversky_forward(be, r, x, tm, &desc, &tv), "ignore");
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res), tt_buffer_free(small);
}

/* tests/torch_tversky_check.py over a case per mode, Dice and Tversky */
static void test_torch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    FILE *f = fopen(TT_SOURCE_DIR "/tests/torch_tversky_check.py", "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char script[16384];
    size_t length = fread(script, 1, sizeof script - 1, f);
    fclose(f);
    CU_ASSERT_FATAL(length > 0 && length < sizeof script - 1);
    script[length] = '\0';
    char dir[PATH_MAX];
    CU_ASSERT_FATAL(rd_tempdir_in(dir, sizeof dir, "tversky-torch"));
    enum { CASES = 5 };
    ref_tversky_data cases[CASES];
    for (int k = 0; k < CASES; k++) {
        /* sigmoid batch, sigmoid per image, softmax batch (weights), softmax per image,
         * and Dice (alpha = beta = 0.5) per image through softmax */
        ref_tversky_shape shape = {2, 3, 13, 17, 10};
        cases[k] = ref_tversky_make(&shape, k >= 2, k % 2 == 1 || k == 4, 700 + k, 5.0f);
        ref_tversky_data *d = &cases[k];
        d->tv.alpha = k == 4 ? 0.5f : 0.3f + 0.1f * k;
        d->tv.beta = k == 4 ? 0.5f : 0.7f - 0.1f * k;
        d->tv.smooth = k == 4 ? 0.5f : 1.0f;
        d->has_weights = k == 2;
        d->weights[0] = 1, d->weights[1] = 0.25, d->weights[2] = 2;
        d->logits[0] = 100, d->logits[1] = -100;
        char sub[PATH_MAX + 16];
        snprintf(sub, sizeof sub, "%s/case%d", dir, k);
        CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
        double params[11] = {d->desc.n, d->desc.c, d->desc.h, d->desc.w, d->tv.alpha,
                             d->tv.beta, d->tv.smooth, d->tv.softmax, d->tv.per_image,
                             d->desc.ignore, d->has_weights};
        ref_write_file(sub, "params", params, sizeof params);
        ref_write_file(sub, "weights", d->weights, (size_t)d->desc.c * sizeof(double));
        ref_write_file(sub, "logits", d->logits, d->total * sizeof(float));
        ref_write_file(sub, "targets", d->targets, d->target_bytes);
    }
    if (ref_python(script, dir))
        for (int k = 0; k < CASES; k++) {
            ref_tversky_data *d = &cases[k];
            char sub[PATH_MAX + 16];
            snprintf(sub, sizeof sub, "%s/case%d", dir, k);
            double want;
            double *grad = malloc(d->total * sizeof(double));
            CU_ASSERT_FATAL(grad != NULL);
            ref_read_file(sub, "loss", &want, sizeof want);
            ref_read_file(sub, "grad", grad, d->total * sizeof(double));
            tt_loss_value v = ref_tversky_device_forward(d);
            float *got = ref_tversky_device_backward(d, NULL, 1, 1);
            double scale = 0;
            for (size_t i = 0; i < d->total; i++) scale = fmax(scale, fabs(grad[i]));
            double err = fabs(v.sum - want) / fabs(want);
            double gerr = th_max_rel_error(got, grad, d->total, scale);
            printf("\n    vs torch (smp's %s, %s, %s): loss %.7g vs %.7g, rel err %.2e, grad "
                   "err %.2e", k == 4 ? "DiceLoss" : "TverskyLoss",
                   d->tv.softmax ? "multiclass" : "multilabel",
                   d->tv.per_image ? "dims pixels" : "dims batch and pixels", v.sum, want, err,
                   gerr);
            CU_ASSERT(err < 1e-5);
            CU_ASSERT(gerr < 1e-5);
            free(grad), free(got);
        }
    for (int k = 0; k < CASES; k++) ref_tversky_free(&cases[k]);
    rd_rmtree(dir);
    CU_ASSERT(access(dir, F_OK) != 0); /* removed */
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward loss and count vs reference, every mode", test_forward_vs_reference},
        {"backward vs finite differences, ignore, twice", test_backward},
        {"alpha = beta = 0.5, smooth / 2 is soft Dice", test_dice_equivalence},
        {"a window in two micro-batches equals one batch", test_window},
        {"softmax labels: ignore, invalid once a pixel", test_softmax_ignore_invalid},
        {"class weights, known values, logits of +-100", test_weights_known},
        {"logits of +-100 in every mode", test_large_logits},
        {"bad arguments", test_bad_arguments},
        {"cross-check with PyTorch (smp's formulas)", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("tversky", tests, TH_EVERY);
}
