/* Sigmoid focal loss, both mask kinds: device sum, count and gradient vs the
 * double reference (tests/ref_focal.c) over gamma 0, 1, 2, 0.5, alpha none
 * and 0.25, class weights; gradients vs central differences; gamma 0
 * without alpha is BCE; logits of +-100; invalid and ignored items;
 * several passes of the grid; bad arguments; PyTorch (if present). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "ops/bce.h"
#include "ops/focal.h"
#include "ref_focal.h"
#include "ref_data.h"
#include "ref_loss.h"

typedef struct focal_case {
    int n, c, h, w;
    int ignore_fraction; /* percent of items with target 255 */
} focal_case;

/* 1x1, odd and prime sizes, N = 1..3, C = 1 and C > 1, several groups */
static const focal_case cases[] = {
    {1, 1, 1, 1, 0}, {1, 3, 5, 7, 0}, {2, 5, 5, 7, 20}, {3, 3, 1, 1, 30},
    {2, 1, 61, 67, 10}, {3, 4, 61, 67, 25},
};
/* small enough for finite differences (two reference sums per logit) */
static const focal_case small_cases[] = {
    {1, 1, 1, 1, 0}, {1, 3, 5, 7, 0}, {2, 2, 3, 5, 20}, {3, 3, 1, 1, 30}, {2, 4, 3, 3, 10},
};

static const float gammas[] = {0, 1, 2, 0.5f};
static const float alphas[] = {-1, 0.25f};

typedef struct focal_data {
    tt_loss_desc desc;
    tt_focal focal;
    size_t total, items; /* logits; targets (elements, or pixels for labels) */
    float *logits;
    uint8_t *targets;
    float *weights;     /* c, or NULL */
    double *weights_d;  /* the same in double, or NULL */
} focal_data;

static focal_data make_data(const focal_case *k, int class_index, float gamma, float alpha,
                            int weighted, uint64_t seed, float range)
{
    focal_data d = {.desc = tt_loss_desc_make(k->n, k->c, k->h, k->w),
                    .focal = {gamma, alpha, class_index}};
    d.total = (size_t)k->n * k->c * k->h * k->w;
    d.items = class_index ? d.total / k->c : d.total;
    d.logits = malloc(d.total * sizeof(float));
    d.targets = malloc(d.items);
    CU_ASSERT_FATAL(d.logits && d.targets);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    for (size_t i = 0; i < d.items; i++) {
        int t = class_index ? (int)th_uniform(&seed, 0, k->c) : th_uniform(&seed, 0, 1) < 0.4;
        d.targets[i] = (uint8_t)(t < k->c || !class_index ? t : k->c - 1);
        if (th_uniform(&seed, 0, 100) < k->ignore_fraction) d.targets[i] = 255;
    }
    if (weighted) {
        d.weights = malloc(k->c * sizeof(float));
        d.weights_d = malloc(k->c * sizeof(double));
        CU_ASSERT_FATAL(d.weights && d.weights_d);
        for (int c = 0; c < k->c; c++) {
            d.weights[c] = 0.3f + 0.55f * (float)((c * 7 + 3) % 5);
            d.weights_d[c] = d.weights[c];
        }
    }
    return d;
}

static void free_data(focal_data *d)
{
    free(d->logits), free(d->targets), free(d->weights), free(d->weights_d);
}

static double ref_of(const focal_data *d, const double *x, long *count, long *invalid,
                     double *grad)
{
    return ref_focal(x, d->targets, d->desc.n, d->desc.c, d->desc.h * d->desc.w, d->desc.ignore,
                     d->focal.class_index, d->focal.gamma, d->focal.alpha, d->weights_d, count,
                     invalid, grad);
}

static double ref_sum(const double *x, void *ctx)
{
    return ref_of(ctx, x, NULL, NULL, NULL);
}

/* Forward into a fresh block (*v; TT_ERR_FORMAT accepted when items are
 * invalid) and, when grad is set, backward times scale into zeros. */
static void device_run(tt_backend *be, const focal_data *d, float scale, tt_loss_value *v,
                       float *grad)
{
    tt_buffer *bx = th_upload(d->logits, d->total, "logits");
    tt_buffer *bt = ref_upload_u8(d->targets, d->items, "targets");
    tt_buffer *bw = d->weights ? th_upload(d->weights, (size_t)d->desc.c, "weights") : NULL;
    tt_buffer *res = ref_loss_block();
    tt_loss_desc desc = d->desc;
    if (bw) desc.weights = tt_mem_of(bw);
    TH_OK(tt_focal_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, &d->focal));
    tt_status s = tt_loss_read(be, tt_mem_of(res), "focal", v);
    if (s) {
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
        CU_ASSERT(v->invalid > 0);
        tt_status_free(s);
    }
    if (grad) {
        tt_buffer *bg = th_zeros(d->total, "dlogits");
        TH_OK(tt_focal_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &desc,
                                &d->focal, scale));
        th_download(grad, bg, d->total);
        tt_buffer_free(bg);
    }
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw), tt_buffer_free(res);
}

/* Sum, count and gradient of d against the reference; returns the larger of
 * the sum's and the gradient's relative errors. */
static double check_vs_reference(tt_backend *be, const focal_data *d)
{
    tt_loss_value v;
    float *got = malloc(d->total * sizeof(float));
    double *want_grad = calloc(d->total, sizeof(double));
    CU_ASSERT_FATAL(got && want_grad);
    device_run(be, d, 1, &v, got);
    double *x = th_to_double(d->logits, d->total);
    long count = 0, invalid = 0;
    double want = ref_of(d, x, &count, &invalid, want_grad);
    double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
    double gerr = th_max_rel_error(got, want_grad, d->total, 1e-2);
    CU_ASSERT(err < 1e-5); /* float terms summed per work-item, then trees */
    CU_ASSERT(gerr < 1e-5);
    CU_ASSERT_EQUAL(v.count, (uint32_t)count);
    CU_ASSERT_EQUAL(v.invalid, (uint32_t)invalid);
    if (err >= 1e-5 || gerr >= 1e-5)
        printf("\n    FAILED N=%d C=%d %dx%d kind %d gamma %g alpha %g weights %d: sum %.7g "
               "(ref %.7g) err %.2e, grad err %.2e", d->desc.n, d->desc.c, d->desc.h, d->desc.w,
               d->focal.class_index, d->focal.gamma, d->focal.alpha, d->weights != NULL, v.sum,
               want, err, gerr);
    int zero_at_ignored = 1, hw = d->desc.h * d->desc.w, c = d->desc.c;
    for (size_t i = 0; i < d->items; i++)
        if (d->targets[i] == 255) {
            if (d->focal.class_index)
                for (int k = 0; k < c; k++)
                    zero_at_ignored &= got[(i / hw) * c * hw + (size_t)k * hw + i % hw] == 0.0f;
            else
                zero_at_ignored &= got[i] == 0.0f;
        }
    CU_ASSERT(zero_at_ignored);
    free(x), free(got), free(want_grad);
    return fmax(err, gerr);
}

static void test_forward_backward_vs_reference(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int kind = 0; kind < 2; kind++) {
        double worst = 0;
        int runs = 0;
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            for (int g = 0; g < 4; g++)
                for (int a = 0; a < 2; a++)
                    for (int weighted = 0; weighted < 2; weighted++) {
                        focal_data d = make_data(&cases[k], kind, gammas[g], alphas[a], weighted,
                                                 100 + k * 16 + g * 4 + a * 2 + weighted, 6.0f);
                        worst = fmax(worst, check_vs_reference(be, &d));
                        runs++;
                        free_data(&d);
                    }
        printf("\n    %s: %d runs (gamma 0, 1, 2, 0.5; alpha none, 0.25; weights or not), "
               "largest sum or gradient rel error %.2e", kind ? "labels" : "per-class targets",
               runs, worst);
    }
    printf("\n");
}

/* Device gradient vs central differences of the reference sum; twice adds
 * twice. */
static void test_backward_finite_differences(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0, worst_twice = 0;
    for (int kind = 0; kind < 2; kind++)
        for (size_t k = 0; k < sizeof small_cases / sizeof small_cases[0]; k++)
            for (int g = 0; g < 4; g++)
                for (int a = 0; a < 2; a++) {
                    int weighted = (int)(k + g + a) % 2;
                    focal_data d = make_data(&small_cases[k], kind, gammas[g], alphas[a],
                                             weighted, 200 + k * 8 + g * 2 + a, 4.0f);
                    float *got = malloc(d.total * sizeof(float));
                    double *numeric = malloc(d.total * sizeof(double));
                    CU_ASSERT_FATAL(got && numeric);
                    tt_loss_value v;
                    device_run(be, &d, 1, &v, got);
                    double *x = th_to_double(d.logits, d.total);
                    th_numeric_grad(ref_sum, &d, x, d.total, 1e-5, numeric);
                    double err = th_max_rel_error(got, numeric, d.total, 1e-2);
                    CU_ASSERT(err < 1e-4); /* |grad| of order 1; 1e-2 floor near zero */
                    worst = fmax(worst, err);
                    free(got), free(numeric), free(x);
                    free_data(&d);
                }
    /* backward adds: start + 2 backwards of scale 0.25 = start + grad / 2 */
    focal_data d = make_data(&small_cases[4], 1, 2, 0.25f, 1, 300, 4.0f);
    float *once = malloc(d.total * sizeof(float)), *start = malloc(d.total * sizeof(float));
    float *twice = malloc(d.total * sizeof(float));
    double *want = malloc(d.total * sizeof(double));
    CU_ASSERT_FATAL(once && start && twice && want);
    tt_loss_value v;
    device_run(be, &d, 1, &v, once);
    uint64_t seed = 7;
    th_fill_uniform(start, d.total, -1, 1, &seed);
    tt_buffer *bx = th_upload(d.logits, d.total, "logits");
    tt_buffer *bt = ref_upload_u8(d.targets, d.items, "labels");
    tt_buffer *bw = th_upload(d.weights, (size_t)d.desc.c, "weights");
    tt_buffer *bg = th_upload(start, d.total, "dlogits");
    d.desc.weights = tt_mem_of(bw);
    for (int r = 0; r < 2; r++)
        TH_OK(tt_focal_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc,
                                &d.focal, 0.25f));
    th_download(twice, bg, d.total);
    for (size_t i = 0; i < d.total; i++) want[i] = start[i] + 0.5 * once[i];
    worst_twice = th_max_rel_error(twice, want, d.total, 1e-2);
    CU_ASSERT(worst_twice < 1e-5);
    printf("\n    gradient vs finite differences: largest error %.2e; twice adds twice: %.2e\n",
           worst, worst_twice);
    free(once), free(start), free(twice), free(want);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw), tt_buffer_free(bg);
    free_data(&d);
}

/* gamma 0 without alpha is BCE: the forward's sum to float rounding, the
 * backward bit for bit (weighted and not). */
static void test_gamma0_is_bce(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int weighted = 0; weighted < 2; weighted++) {
        focal_data d = make_data(&cases[5], 0, 0, -1, weighted, 400, 8.0f);
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bt = ref_upload_u8(d.targets, d.items, "targets");
        tt_buffer *bw = weighted ? th_upload(d.weights, (size_t)d.desc.c, "weights") : NULL;
        if (bw) d.desc.weights = tt_mem_of(bw);
        tt_buffer *r1 = ref_loss_block(), *r2 = ref_loss_block();
        tt_buffer *g1 = th_zeros(d.total, "focal grad"), *g2 = th_zeros(d.total, "BCE grad");
        TH_OK(tt_focal_forward(be, tt_mem_of(r1), tt_mem_of(bx), tt_mem_of(bt), &d.desc,
                               &d.focal));
        TH_OK(tt_bce_forward(be, tt_mem_of(r2), tt_mem_of(bx), tt_mem_of(bt), &d.desc));
        TH_OK(tt_focal_backward(be, tt_mem_of(g1), tt_mem_of(bx), tt_mem_of(bt), &d.desc,
                                &d.focal, 0.3f));
        TH_OK(tt_bce_backward(be, tt_mem_of(g2), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 0.3f));
        tt_loss_value focal, bce;
        TH_OK(tt_loss_read(be, tt_mem_of(r1), "focal", &focal));
        TH_OK(tt_loss_read(be, tt_mem_of(r2), "BCE", &bce));
        double err = fabs(focal.sum - bce.sum) / fabs(bce.sum);
        int same = th_same_bits(tt_mem_of(g1), tt_mem_of(g2), d.total);
        printf("\n    %s: focal sum %.8g, BCE sum %.8g, rel diff %.2e; gradients the same "
               "bits: %s", weighted ? "weighted" : "unweighted", focal.sum, bce.sum, err,
               same ? "yes" : "NO");
        CU_ASSERT(err < 1e-6); /* the same terms summed in another order */
        CU_ASSERT_EQUAL(focal.count, bce.count);
        CU_ASSERT(same);
        tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw);
        tt_buffer_free(r1), tt_buffer_free(r2), tt_buffer_free(g1), tt_buffer_free(g2);
        free_data(&d);
    }
    printf("\n");
}

/* Logits of +-120, +-100, +-88.5, +-30 and 0 with both targets, every
 * gamma: finite, and equal to the reference (q = 1 - pt a denormal, or 0 in
 * float at 120, where q^(gamma-1) would be infinite for gamma < 1). */
static void test_large_logits(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const float x[] = {100, -100, 120, 88.5f, -88.5f, 30, -30, 0, 1e-3f};
    enum { X = sizeof x / sizeof x[0] };
    double worst = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int g = 0; g < 4; g++) {
            /* per-class targets: each logit with t = 0 and 1; labels: C = 2 planes */
            focal_data d = make_data(&(focal_case){1, 2, 1, X, 0}, kind, gammas[g], 0.25f, 0,
                                     g, 1.0f);
            for (int i = 0; i < X; i++) {
                d.logits[i] = x[i], d.logits[X + i] = -x[i];
                if (kind) d.targets[i] = (uint8_t)(i % 2);
                else d.targets[i] = (uint8_t)(i % 2), d.targets[X + i] = (uint8_t)(1 - i % 2);
            }
            tt_loss_value v;
            float got[2 * X];
            device_run(be, &d, 1, &v, got);
            double xd[2 * X], want_grad[2 * X] = {0};
            for (int i = 0; i < 2 * X; i++) xd[i] = d.logits[i];
            double want = ref_of(&d, xd, NULL, NULL, want_grad);
            int finite = isfinite(v.sum);
            double gerr = 0;
            for (int i = 0; i < 2 * X; i++) {
                finite &= isfinite(got[i]);
                gerr = fmax(gerr, fabs(got[i] - want_grad[i]));
            }
            double err = fabs(v.sum - want) / want;
            CU_ASSERT(finite);
            CU_ASSERT(err < 1e-6);
            CU_ASSERT(gerr < 1e-6);
            worst = fmax(worst, fmax(err, gerr));
            free_data(&d);
        }
    printf("\n    logits to +-100, both kinds, every gamma: finite, largest error %.2e\n", worst);
}

/* Targets > 1 and labels >= C are counted as invalid and get no gradient;
 * without an ignore value 255 is invalid too. */
static void test_invalid_items(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int kind = 0; kind < 2; kind++)
        for (int no_ignore = 0; no_ignore < 2; no_ignore++) {
            focal_data d = make_data(&(focal_case){2, 3, 5, 7, 20}, kind, 2, 0.25f, 1, 500, 3.0f);
            d.targets[0] = 3, d.targets[d.items - 1] = 7, d.targets[5] = 2;
            if (no_ignore) d.desc.ignore = TT_LOSS_NO_IGNORE;
            check_vs_reference(be, &d); /* counts, invalid and gradient */
            tt_loss_value v;
            float *got = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(got != NULL);
            device_run(be, &d, 1, &v, got);
            long ignored = 0;
            for (size_t i = 0; i < d.items; i++) ignored += d.targets[i] == 255;
            /* 3, 7 and (for per-class targets) 2 */
            long bad = (kind ? 2 : 3) + (no_ignore ? ignored : 0);
            CU_ASSERT_EQUAL(v.invalid, (uint32_t)bad);
            CU_ASSERT_EQUAL(v.count, (uint32_t)(d.items - bad - (no_ignore ? 0 : ignored)));
            CU_ASSERT(got[0] == 0.0f && got[d.total - 1] == 0.0f);
            free(got);
            free_data(&d);
        }
}

/* More items than one pass of the grid (512 groups of 256). */
static void test_several_passes(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    focal_data a = make_data(&(focal_case){3, 3, 131, 127, 10}, 0, 2, 0.25f, 1, 600, 6.0f);
    focal_data b = make_data(&(focal_case){2, 2, 257, 263, 10}, 1, 0.5f, -1, 1, 601, 6.0f);
    CU_ASSERT(a.items > 512 * 256 && b.items > 512 * 256);
    printf("\n    %zu elements: error %.2e; %zu pixels: error %.2e\n", a.items,
           check_vs_reference(be, &a), b.items, check_vs_reference(be, &b));
    free_data(&a), free_data(&b);
}

static void expect_invalid(tt_status s, const char *words)
{
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), words) != NULL);
    if (s && !strstr(tt_status_message(s), words))
        printf("\n    message without '%s': %s", words, tt_status_message(s));
    tt_status_free(s);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block(), *bw = th_zeros(2, "w");
    uint8_t targets[12] = {0};
    tt_buffer *bt = ref_upload_u8(targets, 12, "targets");
    tt_mem r = tt_mem_of(res), x = tt_mem_of(bx), t = tt_mem_of(bt);
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    tt_focal f = {2, 0.25f, 0};
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, &(tt_focal){-1, 0.25f, 0}), "gamma");
    expect_invalid(tt_focal_backward(be, x, x, t, &desc, &(tt_focal){NAN, 0.25f, 0}, 1), "gamma");
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, &(tt_focal){2, 1.5f, 0}), "alpha");
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, &(tt_focal){2, 0.25f, 2}), "class_index");
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, NULL), "focal");
    desc.weights = tt_mem_of(bw); /* 2 floats for 3 classes */
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, &f), "class weights");
    desc = tt_loss_desc_make(1, 4, 2, 2); /* 16 logits, buffer has 12 */
    expect_invalid(tt_focal_backward(be, x, x, t, &desc, &f, 1), "logits needs");
    tt_buffer *x32 = th_zeros(32, "logits");
    desc = tt_loss_desc_make(1, 1, 4, 4); /* 16 targets, buffer has 12 */
    expect_invalid(tt_focal_forward(be, r, tt_mem_of(x32), t, &desc, &f), "targets needs");
    desc = tt_loss_desc_make(1, 2, 4, 4); /* 16 labels */
    expect_invalid(tt_focal_backward(be, tt_mem_of(x32), tt_mem_of(x32), t, &desc,
                                     &(tt_focal){2, 0.25f, 1}, 1),
                   "labels needs");
    tt_buffer_free(x32);
    desc = tt_loss_desc_make(1, 0, 2, 2);
    expect_invalid(tt_focal_forward(be, r, x, t, &desc, &f), "C=0");
    desc = tt_loss_desc_make(1, 300, 1, 1);
    tt_buffer *big = th_zeros(300, "logits");
    expect_invalid(tt_focal_forward(be, r, tt_mem_of(big), t, &desc, &(tt_focal){2, 0.25f, 1}),
                   "300 classes");
    tt_buffer_free(big), tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw);
    tt_buffer_free(res);
}

/* Runs tests/torch_focal_check.py on the files in dir (ref_python's rules). */
static int run_torch_check(const char *dir)
{
    static const char script[] =
        "import runpy\n"
        "runpy.run_path('" TT_SOURCE_DIR "/tests/torch_focal_check.py', run_name='__main__')\n";
    return ref_python(script, dir);
}

/* smp's FocalLoss, mean over valid items (multi-class: summed over
 * classes), against the device's sum / count and gradient times 1 / count. */
static void test_torch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const struct { int kind; float gamma, alpha; int weighted; } runs[] = {
        {0, 2, 0.25f, 1}, {0, 0.5f, -1, 0}, {1, 2, 0.25f, 1}, {1, 0.5f, -1, 0}, {1, 0, -1, 0},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        focal_data d = make_data(&(focal_case){2, 3, 13, 11, 10}, runs[k].kind, runs[k].gamma,
                                 runs[k].alpha, runs[k].weighted, 700 + k, 6.0f);
        char dir[PATH_MAX];
        CU_ASSERT_FATAL(rd_tempdir_in(dir, sizeof dir, "focal-torch"));
        int32_t shape[4] = {d.desc.n, d.desc.c, d.desc.h, d.desc.w};
        double params[4] = {d.focal.gamma, d.focal.alpha, d.focal.class_index, d.desc.ignore};
        float ones[3] = {1, 1, 1};
        ref_write_file(dir, "shape", shape, sizeof shape);
        ref_write_file(dir, "params", params, sizeof params);
        ref_write_file(dir, "logits", d.logits, d.total * sizeof(float));
        ref_write_file(dir, "targets", d.targets, d.items);
        ref_write_file(dir, "weights", d.weights ? d.weights : ones, 3 * sizeof(float));
        if (run_torch_check(dir)) {
            double want[2];
            double *grad = malloc(d.total * sizeof(double));
            float *got = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(grad && got);
            ref_read_file(dir, "loss", want, sizeof want);
            ref_read_file(dir, "grad", grad, d.total * sizeof(double));
            tt_loss_value v;
            device_run(be, &d, 1.0f / (float)want[1], &v, got);
            double mean = v.sum / v.count, err = fabs(mean - want[0]) / fabs(want[0]);
            /* the gradient of a mean: a floor of 1e-2 of its largest size */
            double largest = 0;
            for (size_t i = 0; i < d.total; i++) largest = fmax(largest, fabs(grad[i]));
            double gerr = th_max_rel_error(got, grad, d.total, 1e-2 * largest);
            printf("\n    %s gamma %g alpha %g%s: mean %.7g vs torch %.7g, rel err %.2e, "
                   "grad err %.2e", d.focal.class_index ? "labels" : "targets", d.focal.gamma,
                   d.focal.alpha, d.weights ? " weighted" : "", mean, want[0], err, gerr);
            CU_ASSERT_EQUAL(v.count, (uint32_t)want[1]);
            CU_ASSERT(err < 1e-5);
            CU_ASSERT(gerr < 1e-4);
            free(grad), free(got);
        }
        rd_rmtree(dir);
        CU_ASSERT(access(dir, F_OK) != 0); /* removed */
        free_data(&d);
    }
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward and backward vs reference, every gamma and alpha",
         test_forward_backward_vs_reference},
        {"backward vs finite differences; twice adds twice", test_backward_finite_differences},
        {"gamma 0 without alpha is BCE", test_gamma0_is_bce},
        {"logits of +-100 stay finite and exact", test_large_logits},
        {"invalid targets and labels are counted", test_invalid_items},
        {"more items than one pass of the grid", test_several_passes},
        {"bad arguments are refused", test_bad_arguments},
        {"cross-check with PyTorch (smp FocalLoss)", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("focal", tests, TH_EVERY);
}
