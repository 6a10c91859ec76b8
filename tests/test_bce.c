/* Sigmoid binary cross-entropy: device sum and count vs the double
 * reference, the gradient vs central differences, ignore, accumulation,
 * logits of +-100, invalid targets, class weights, and PyTorch (if
 * present). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "ops/bce.h"
#include "ref_data.h"
#include "ref_loss.h"

typedef struct bce_case {
    int n, c, h, w;
    int ignore_fraction; /* percent of elements with target 255 */
} bce_case;

static const bce_case cases[] = {
    {1, 1, 1, 1, 0}, {1, 3, 5, 7, 0}, {2, 5, 5, 7, 20}, {3, 3, 1, 1, 30},
    {1, 5, 17, 33, 25}, {2, 1, 3, 4, 40}, {2, 3, 31, 29, 10},
};

typedef struct bce_data {
    tt_loss_desc desc;
    size_t total;
    float *logits;
    uint8_t *targets;
} bce_data;

static bce_data make_data(const bce_case *k, uint64_t seed, float range)
{
    bce_data d = {tt_loss_desc_make(k->n, k->c, k->h, k->w), 0, NULL, NULL};
    d.total = (size_t)k->n * k->c * k->h * k->w;
    d.logits = malloc(d.total * sizeof(float));
    d.targets = malloc(d.total);
    CU_ASSERT_FATAL(d.logits && d.targets);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    for (size_t i = 0; i < d.total; i++) {
        d.targets[i] = th_uniform(&seed, 0, 1) < 0.4;
        if (th_uniform(&seed, 0, 100) < k->ignore_fraction) d.targets[i] = 255;
    }
    return d;
}

static void free_data(bce_data *d)
{
    free(d->logits);
    free(d->targets);
}

static double ref_sum(const double *x, void *ctx)
{
    const bce_data *d = ctx;
    return ref_bce(x, d->targets, d->total, d->desc.ignore, NULL, NULL);
}

/* The forward of d's logits and targets against ref_bce: sum (relative
 * error returned, asserted < 1e-5), count, no invalid. */
static double check_forward(tt_backend *be, const bce_data *d)
{
    tt_buffer *bx = th_upload(d->logits, d->total, "logits");
    tt_buffer *bt = ref_upload_u8(d->targets, d->total, "targets");
    tt_buffer *res = ref_loss_block();
    TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &d->desc));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "BCE", &v));
    double *x = th_to_double(d->logits, d->total);
    long count = 0;
    double want = ref_bce(x, d->targets, d->total, 255, &count, NULL);
    double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
    printf("\n    N=%d C=%d %dx%d: sum %.7g (ref %.7g) rel err %.2e, count %u (ref %ld)",
           d->desc.n, d->desc.c, d->desc.h, d->desc.w, v.sum, want, err, v.count, count);
    CU_ASSERT(err < 1e-5); /* per-work-item vector sums, then trees */
    CU_ASSERT_EQUAL(v.count, (uint32_t)count);
    CU_ASSERT_EQUAL(v.invalid, 0);
    free(x);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res);
    return err;
}

static void test_forward_vs_reference(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bce_data d = make_data(&cases[k], 100 + k, 6.0f);
        double err = check_forward(be, &d);
        if (err > worst) worst = err;
        free_data(&d);
    }
    printf("\n    largest forward rel error %.2e\n", worst);
}

/* More elements than one pass of the kernel's grid covers (512 groups x
 * 256 work-items x 8), with a tail that is not a whole vector. */
static void test_forward_several_passes(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    bce_data d = make_data(&(bce_case){3, 3, 401, 331, 10}, 300, 6.0f);
    CU_ASSERT(d.total > (size_t)512 * 256 * 8 && d.total % 8 != 0);
    check_forward(be, &d);
    printf("\n");
    free_data(&d);
}

static void test_backward(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0, worst_twice = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bce_data d = make_data(&cases[k], 200 + k, 6.0f);
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bt = ref_upload_u8(d.targets, d.total, "targets");
        tt_buffer *bg = th_zeros(d.total, "dlogits");
        TH_OK(tt_bce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 1));
        float *got = malloc(d.total * sizeof(float));
        double *numeric = malloc(d.total * sizeof(double));
        CU_ASSERT_FATAL(got && numeric);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        th_numeric_grad(ref_sum, &d, x, d.total, 1e-5, numeric);
        double err = th_max_rel_error(got, numeric, d.total, 1e-2);
        printf("\n    N=%d C=%d %dx%d: grad vs finite differences %.2e", d.desc.n, d.desc.c,
               d.desc.h, d.desc.w, err);
        CU_ASSERT(err < 1e-4); /* |grad| <= 1; float sigmoid, 1e-2 floor near zero */
        if (err > worst) worst = err;
        int zero_at_ignored = 1;
        for (size_t i = 0; i < d.total; i++)
            if (d.targets[i] == 255) zero_at_ignored &= got[i] == 0.0f;
        CU_ASSERT(zero_at_ignored);

        float *start = malloc(d.total * sizeof(float)), *twice = malloc(d.total * sizeof(float));
        double *want = malloc(d.total * sizeof(double));
        CU_ASSERT_FATAL(start && twice && want);
        uint64_t seed = 7;
        th_fill_uniform(start, d.total, -1, 1, &seed);
        TH_OK(tt_write(be, tt_mem_of(bg), start, d.total * sizeof(float)));
        for (int r = 0; r < 2; r++)
            TH_OK(tt_bce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 0.25f));
        th_download(twice, bg, d.total);
        for (size_t i = 0; i < d.total; i++) want[i] = start[i] + 0.5 * got[i];
        double e2 = th_max_rel_error(twice, want, d.total, 1e-2);
        CU_ASSERT(e2 < 1e-5); /* two float roundings of start + g/4 + g/4 */
        if (e2 > worst_twice) worst_twice = e2;
        free(start), free(twice), free(want), free(got), free(numeric), free(x);
        tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bg);
        free_data(&d);
    }
    printf("\n    largest gradient error %.2e, twice-adds-twice error %.2e\n", worst, worst_twice);
}

/* Logits of +-100 with both targets: loss 0 or 100 (+3.7e-44), gradient
 * 0 or +-1; no overflow anywhere. */
static void test_large_logits(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { T = 8 };
    float x[T] = {100, 100, -100, -100, 88.5f, -88.5f, 0, 30};
    uint8_t t[T] = {1, 0, 1, 0, 0, 1, 1, 0};
    tt_loss_desc desc = tt_loss_desc_make(1, 1, 1, T);
    tt_buffer *bx = th_upload(x, T, "logits"), *bt = ref_upload_u8(t, T, "targets");
    tt_buffer *res = ref_loss_block(), *bg = th_zeros(T, "dlogits");
    TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc));
    TH_OK(tt_bce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &desc, 1));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "BCE", &v));
    double xd[T], gd[T] = {0};
    for (int i = 0; i < T; i++) xd[i] = x[i];
    double want = ref_bce(xd, t, T, 255, NULL, gd);
    float g[T];
    th_download(g, bg, T);
    int finite = isfinite(v.sum);
    double gerr = 0;
    for (int i = 0; i < T; i++) {
        finite &= isfinite(g[i]);
        gerr = fmax(gerr, fabs(g[i] - gd[i]));
    }
    printf("\n    logits +-100: sum %.9g (ref %.9g), largest grad error %.2e\n", v.sum, want, gerr);
    CU_ASSERT(finite);
    CU_ASSERT(fabs(v.sum - want) <= 1e-6 * want); /* 100 + 100 + 88.5 + 88.5 + log 2 + 30 */
    CU_ASSERT_EQUAL(v.count, T);
    CU_ASSERT(gerr < 1e-6);
    CU_ASSERT(fabs(g[0]) < 1e-30); /* -sigmoid(-100): 0 or a denormal */
    CU_ASSERT_EQUAL(g[1], 1.0f);
    CU_ASSERT_EQUAL(g[2], -1.0f);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res), tt_buffer_free(bg);
}

/* No ignore value: count = N*C*H*W; a target of 2 is invalid. */
static void test_counts_and_invalid(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    bce_data d = make_data(&(bce_case){2, 3, 5, 7, 0}, 500, 2.0f);
    d.desc.ignore = TT_LOSS_NO_IGNORE;
    tt_buffer *bx = th_upload(d.logits, d.total, "logits");
    tt_buffer *bt = ref_upload_u8(d.targets, d.total, "targets");
    tt_buffer *res = ref_loss_block();
    for (int r = 0; r < 2; r++) /* accumulates */
        TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &d.desc));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "BCE", &v));
    CU_ASSERT_EQUAL(v.count, 2 * d.total);
    d.targets[0] = 3;           /* in the kernel's vectors */
    d.targets[d.total - 1] = 2; /* in its tail (210 % 8 = 2) */
    TH_OK(tt_write(be, tt_mem_of(bt), d.targets, d.total));
    TH_OK(tt_loss_clear(be, tt_mem_of(res)));
    TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &d.desc));
    tt_status s = tt_loss_read(be, tt_mem_of(res), "BCE", &v);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    tt_status_free(s);
    CU_ASSERT_EQUAL(v.invalid, 2);
    CU_ASSERT_EQUAL(v.count, d.total - 2);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res);
    free_data(&d);
}

/* Class weights 0.3 .. 2.5, distinct between neighbouring planes */
static float *class_weights(int c)
{
    float *w = malloc((size_t)c * sizeof(float));
    CU_ASSERT_FATAL(w != NULL);
    for (int k = 0; k < c; k++) w[k] = 0.3f + 0.55f * (float)((k * 7 + 3) % 5);
    return w;
}

typedef struct weighted_ctx {
    const bce_data *d;
    double *weights;
} weighted_ctx;

static double ref_weighted_sum(const double *x, void *ctx)
{
    const weighted_ctx *k = ctx;
    const tt_loss_desc *s = &k->d->desc;
    return ref_bce_weighted(x, k->d->targets, s->n, s->c, s->h * s->w, s->ignore, k->weights,
                            NULL, NULL);
}

/* Class weights: sum vs the weighted reference (planes change inside the
 * forward's 8-element vectors and in its tail), counts unweighted, the
 * gradient vs the reference's and (small cases) central differences;
 * weights of 1 give the unweighted bits. */
static void test_weighted(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    bce_case all[sizeof cases / sizeof cases[0] + 1];
    memcpy(all, cases, sizeof cases);
    all[sizeof cases / sizeof cases[0]] = (bce_case){3, 3, 401, 331, 10}; /* several passes */
    double worst = 0, worst_fd = 0;
    int same_bits = 1;
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        bce_data d = make_data(&all[k], 800 + k, 6.0f);
        int c = d.desc.c, hw = d.desc.h * d.desc.w;
        float *w = class_weights(c), *ones = malloc((size_t)c * sizeof(float));
        double *wd = malloc((size_t)c * sizeof(double));
        CU_ASSERT_FATAL(ones && wd);
        for (int i = 0; i < c; i++) ones[i] = 1, wd[i] = w[i];
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bt = ref_upload_u8(d.targets, d.total, "targets");
        tt_buffer *bw = th_upload(w, (size_t)c, "weights"), *b1 = th_upload(ones, (size_t)c, "1");
        tt_buffer *res = ref_loss_block(), *bg = th_zeros(d.total, "dlogits");
        tt_loss_desc desc = d.desc;
        desc.weights = tt_mem_of(bw);
        TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc));
        TH_OK(tt_bce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &desc, 1));
        tt_loss_value v;
        TH_OK(tt_loss_read(be, tt_mem_of(res), "BCE", &v));
        float *got = malloc(d.total * sizeof(float));
        double *want_grad = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(got && want_grad);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        long count = 0;
        double want = ref_bce_weighted(x, d.targets, d.desc.n, c, hw, 255, wd, &count, want_grad);
        double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
        double gerr = th_max_rel_error(got, want_grad, d.total, 1e-2);
        CU_ASSERT(err < 1e-5);
        CU_ASSERT(gerr < 1e-5);
        CU_ASSERT_EQUAL(v.count, (uint32_t)count);
        worst = fmax(worst, fmax(err, gerr));
        if (d.total < 2000) {
            double *numeric = malloc(d.total * sizeof(double));
            CU_ASSERT_FATAL(numeric != NULL);
            weighted_ctx ctx = {&d, wd};
            th_numeric_grad(ref_weighted_sum, &ctx, x, d.total, 1e-5, numeric);
            double fd = th_max_rel_error(got, numeric, d.total, 1e-2);
            CU_ASSERT(fd < 1e-4);
            worst_fd = fmax(worst_fd, fd);
            free(numeric);
        }
        /* weights of 1 against no weights: the same bits */
        tt_buffer *r1 = ref_loss_block(), *r0 = ref_loss_block();
        tt_buffer *g1 = th_zeros(d.total, "g1"), *g0 = th_zeros(d.total, "g0");
        desc.weights = tt_mem_of(b1);
        TH_OK(tt_bce_forward(be, tt_mem_of(r1), tt_mem_of(bx), tt_mem_of(bt), &desc));
        TH_OK(tt_bce_backward(be, tt_mem_of(g1), tt_mem_of(bx), tt_mem_of(bt), &desc, 0.3f));
        TH_OK(tt_bce_forward(be, tt_mem_of(r0), tt_mem_of(bx), tt_mem_of(bt), &d.desc));
        TH_OK(tt_bce_backward(be, tt_mem_of(g0), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 0.3f));
        same_bits &= th_same_bits(tt_mem_of(r1), tt_mem_of(r0), 4) &&
                     th_same_bits(tt_mem_of(g1), tt_mem_of(g0), d.total);
        tt_buffer_free(r1), tt_buffer_free(r0), tt_buffer_free(g1), tt_buffer_free(g0);
        free(w), free(ones), free(wd), free(got), free(want_grad), free(x);
        tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw), tt_buffer_free(b1);
        tt_buffer_free(res), tt_buffer_free(bg);
        free_data(&d);
    }
    CU_ASSERT(same_bits);
    printf("\n    weighted: largest sum or gradient error %.2e, vs finite differences %.2e; "
           "weights of 1 give the unweighted bits: %s\n", worst, worst_fd,
           same_bits ? "yes" : "NO");
}

static const char torch_script[] =
    "import sys, numpy as np\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    sys.exit(77)\n"
    "d = sys.argv[1]\n"
    "x = torch.from_numpy(np.fromfile(d + '/logits', dtype=np.float32)).double()\n"
    "t = torch.from_numpy(np.fromfile(d + '/targets', dtype=np.uint8)).double()\n"
    "x.requires_grad_()\n"
    "n, c, h, w = np.fromfile(d + '/shape', dtype=np.int32)\n"
    "cw = torch.from_numpy(np.fromfile(d + '/weights', dtype=np.float32)).double()\n"
    "if cw.numel():\n"
    "    x4, t4 = x.view(n, c, h, w), t.view(n, c, h, w)\n"
    "    loss = torch.nn.BCEWithLogitsLoss(weight=cw.view(1, c, 1, 1), reduction='sum')(x4, t4)\n"
    "else:\n"
    "    loss = torch.nn.functional.binary_cross_entropy_with_logits(x, t, reduction='sum')\n"
    "loss.backward()\n"
    "np.array([loss.item()], dtype=np.float64).tofile(d + '/loss')\n"
    "x.grad.numpy().astype(np.float64).tofile(d + '/grad')\n";

/* Without weights, and with BCEWithLogitsLoss(weight=w.view(1, C, 1, 1)). */
static void test_torch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int weighted = 0; weighted < 2; weighted++) {
        bce_data d = make_data(&(bce_case){2, 3, 31, 29, 0}, 400 + weighted, 8.0f);
        d.logits[0] = 100, d.logits[1] = -100; /* torch's own stable form as well */
        float *w = class_weights(d.desc.c);
        char dir[PATH_MAX];
        CU_ASSERT_FATAL(rd_tempdir_in(dir, sizeof dir, "bce-torch"));
        int32_t shape[4] = {d.desc.n, d.desc.c, d.desc.h, d.desc.w};
        ref_write_file(dir, "shape", shape, sizeof shape);
        ref_write_file(dir, "logits", d.logits, d.total * sizeof(float));
        ref_write_file(dir, "targets", d.targets, d.total);
        ref_write_file(dir, "weights", w, weighted ? (size_t)d.desc.c * sizeof(float) : 0);
        if (ref_python(torch_script, dir)) {
            double want;
            double *grad = malloc(d.total * sizeof(double));
            float *got = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(grad && got);
            ref_read_file(dir, "loss", &want, sizeof want);
            ref_read_file(dir, "grad", grad, d.total * sizeof(double));
            tt_buffer *bx = th_upload(d.logits, d.total, "logits");
            tt_buffer *bt = ref_upload_u8(d.targets, d.total, "targets");
            tt_buffer *bw = th_upload(w, (size_t)d.desc.c, "weights");
            tt_buffer *res = ref_loss_block(), *bg = th_zeros(d.total, "dlogits");
            if (weighted) d.desc.weights = tt_mem_of(bw);
            TH_OK(tt_bce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &d.desc));
            TH_OK(tt_bce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 1));
            tt_loss_value v;
            TH_OK(tt_loss_read(be, tt_mem_of(res), "BCE", &v));
            th_download(got, bg, d.total);
            double err = fabs(v.sum - want) / fabs(want);
            double gerr = th_max_rel_error(got, grad, d.total, 1e-2);
            printf("\n    vs torch %sreduction='sum'): sum %.7g vs %.7g, rel err %.2e, grad "
                   "err %.2e", weighted ? "BCEWithLogitsLoss(weight=w.view(1, C, 1, 1), " :
                   "binary_cross_entropy_with_logits(", v.sum, want, err, gerr);
            CU_ASSERT(err < 1e-5);
            CU_ASSERT(gerr < 1e-4);
            free(grad), free(got);
            tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bw);
            tt_buffer_free(res), tt_buffer_free(bg);
        }
        rd_rmtree(dir);
        CU_ASSERT(access(dir, F_OK) != 0); /* removed */
        free(w);
        free_data(&d);
    }
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward sum and count vs reference", test_forward_vs_reference},
        {"backward vs finite differences, ignore, twice", test_backward},
        {"logits of +-100 stay finite and exact", test_large_logits},
        {"counts without ignore; invalid targets", test_counts_and_invalid},
        {"more elements than one pass of the grid", test_forward_several_passes},
        {"class weights", test_weighted},
        {"cross-check with PyTorch", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("bce", tests, TH_EVERY);
}
