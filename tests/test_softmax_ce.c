/* Softmax cross-entropy: device sum and count vs the double reference, the
 * gradient vs central differences, ignore regions, accumulation, large
 * logits, invalid labels, argument checks, class weights, and PyTorch (if
 * present). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "ops/softmax_ce.h"
#include "ref_data.h"
#include "ref_loss.h"

typedef struct ce_case {
    int n, c, h, w;
    int ignore_fraction; /* percent of pixels labelled 255 */
} ce_case;

/* Odd sizes, batch 1, C = 1, 3, 5, 1x1 images; the later ones have ignore regions. */
static const ce_case cases[] = {
    {1, 1, 1, 1, 0}, {1, 3, 5, 7, 0}, {2, 5, 5, 7, 20}, {3, 3, 1, 1, 30},
    {1, 5, 17, 33, 25}, {2, 1, 3, 4, 40}, {2, 3, 31, 29, 10},
};

typedef struct ce_data {
    tt_loss_desc desc;
    size_t pixels, total;
    float *logits;
    uint8_t *labels;
} ce_data;

static ce_data make_data(const ce_case *k, uint64_t seed, float range)
{
    ce_data d = {tt_loss_desc_make(k->n, k->c, k->h, k->w), 0, 0, NULL, NULL};
    d.pixels = (size_t)k->n * k->h * k->w;
    d.total = d.pixels * k->c;
    d.logits = malloc(d.total * sizeof(float));
    d.labels = malloc(d.pixels);
    CU_ASSERT_FATAL(d.logits && d.labels);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    for (size_t p = 0; p < d.pixels; p++) {
        int label = (int)th_uniform(&seed, 0, k->c);
        d.labels[p] = (uint8_t)(label < k->c ? label : k->c - 1);
        if (th_uniform(&seed, 0, 100) < k->ignore_fraction) d.labels[p] = 255;
    }
    /* a rectangular ignore region in the last image, as a mask border would be */
    if (k->ignore_fraction && k->h > 2 && k->w > 2)
        for (int y = 0; y < k->h / 2; y++)
            for (int x = 0; x < k->w / 3; x++)
                d.labels[(size_t)(k->n - 1) * k->h * k->w + (size_t)y * k->w + x] = 255;
    return d;
}

static void free_data(ce_data *d)
{
    free(d->logits);
    free(d->labels);
}

typedef struct ref_ctx {
    const ce_data *d;
} ref_ctx;

static double ref_sum(const double *x, void *ctx)
{
    const ce_data *d = ((ref_ctx *)ctx)->d;
    return ref_softmax_ce(x, d->labels, d->desc.n, d->desc.c, d->desc.h * d->desc.w,
                          d->desc.ignore, NULL, NULL);
}

static void test_forward_vs_reference(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ce_data d = make_data(&cases[k], 100 + k, 4.0f);
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bl = ref_upload_u8(d.labels, d.pixels, "labels");
        tt_buffer *res = ref_loss_block();
        TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &d.desc));
        tt_loss_value v;
        TH_OK(tt_loss_read(be, tt_mem_of(res), "softmax CE", &v));
        double *x = th_to_double(d.logits, d.total);
        long count = 0;
        double want = ref_softmax_ce(x, d.labels, d.desc.n, d.desc.c, d.desc.h * d.desc.w, 255,
                                     &count, NULL);
        double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
        printf("\n    N=%d C=%d %dx%d: sum %.6g (ref %.6g) rel err %.2e, count %u (ref %ld)",
               d.desc.n, d.desc.c, d.desc.h, d.desc.w, v.sum, want, err, v.count, count);
        CU_ASSERT(err < 1e-5); /* float accumulation over at most a few thousand pixels */
        CU_ASSERT_EQUAL(v.count, (uint32_t)count);
        CU_ASSERT_EQUAL(v.invalid, 0);
        if (err > worst) worst = err;
        free(x);
        tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(res);
        free_data(&d);
    }
    printf("\n    largest forward rel error %.2e\n", worst);
}

/* Device backward vs central differences of the double reference sum; zero
 * exactly at ignored pixels; twice adds twice. */
static void test_backward(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0, worst_twice = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ce_data d = make_data(&cases[k], 200 + k, 3.0f);
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bl = ref_upload_u8(d.labels, d.pixels, "labels");
        tt_buffer *bg = th_zeros(d.total, "dlogits");
        TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl), &d.desc, 1));
        float *got = malloc(d.total * sizeof(float));
        double *numeric = malloc(d.total * sizeof(double));
        CU_ASSERT_FATAL(got && numeric);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        ref_ctx ctx = {&d};
        th_numeric_grad(ref_sum, &ctx, x, d.total, 1e-5, numeric);
        double err = th_max_rel_error(got, numeric, d.total, 1e-2);
        printf("\n    N=%d C=%d %dx%d: grad vs finite differences %.2e", d.desc.n, d.desc.c,
               d.desc.h, d.desc.w, err);
        /* |grad| <= 1: float exp and division leave ~1e-7 absolute, i.e. ~1e-5
         * relative to the 1e-2 floor near zero */
        CU_ASSERT(err < 1e-4);
        if (err > worst) worst = err;

        int hw = d.desc.h * d.desc.w, zero_at_ignored = 1;
        for (size_t p = 0; p < d.pixels; p++)
            if (d.labels[p] == 255)
                for (int c = 0; c < d.desc.c; c++)
                    zero_at_ignored &= got[(p / hw) * d.desc.c * hw + c * hw + p % hw] == 0.0f;
        CU_ASSERT(zero_at_ignored);

        /* start from random values; two backwards with scale 0.25 add 0.5 grad */
        float *start = malloc(d.total * sizeof(float)), *twice = malloc(d.total * sizeof(float));
        double *want = malloc(d.total * sizeof(double));
        CU_ASSERT_FATAL(start && twice && want);
        uint64_t seed = 7;
        th_fill_uniform(start, d.total, -1, 1, &seed);
        TH_OK(tt_write(be, tt_mem_of(bg), start, d.total * sizeof(float)));
        for (int r = 0; r < 2; r++)
            TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl), &d.desc,
                                         0.25f));
        th_download(twice, bg, d.total);
        for (size_t i = 0; i < d.total; i++) want[i] = start[i] + 0.5 * got[i];
        double e2 = th_max_rel_error(twice, want, d.total, 1e-2);
        CU_ASSERT(e2 < 1e-5); /* two float roundings of start + g/4 + g/4 */
        if (e2 > worst_twice) worst_twice = e2;
        free(start), free(twice), free(want), free(got), free(numeric), free(x);
        tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(bg);
        free_data(&d);
    }
    printf("\n    largest gradient error %.2e, twice-adds-twice error %.2e\n", worst, worst_twice);
}

/* The block accumulates over forwards; a window of two micro-batches. */
static void test_accumulates(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    ce_data a = make_data(&cases[2], 300, 2.0f), b = make_data(&cases[2], 301, 2.0f);
    tt_buffer *res = ref_loss_block();
    double want = 0;
    long total_count = 0;
    ce_data *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        ce_data *d = both[i];
        tt_buffer *bx = th_upload(d->logits, d->total, "logits");
        tt_buffer *bl = ref_upload_u8(d->labels, d->pixels, "labels");
        TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &d->desc));
        double *x = th_to_double(d->logits, d->total);
        long count;
        want += ref_softmax_ce(x, d->labels, d->desc.n, d->desc.c, d->desc.h * d->desc.w, 255,
                               &count, NULL);
        total_count += count;
        free(x);
        tt_buffer_free(bx), tt_buffer_free(bl);
    }
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "softmax CE", &v));
    double err = fabs(v.sum - want) / fabs(want);
    printf("\n    window of 2: sum rel err %.2e, count %u of %ld\n", err, v.count, total_count);
    CU_ASSERT(err < 1e-5);
    CU_ASSERT_EQUAL(v.count, (uint32_t)total_count);
    tt_buffer_free(res);
    free_data(&a), free_data(&b);
}

/* Logits of +-100: loss 0 or 200 exactly, finite gradients. */
static void test_large_logits(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { C = 3, HW = 4 };
    /* pixel p: class p % C is +100, the others -100; labels: right, wrong, right, ignored */
    float x[C * HW];
    for (int c = 0; c < C; c++)
        for (int p = 0; p < HW; p++) x[c * HW + p] = (p % C == c) ? 100.0f : -100.0f;
    uint8_t labels[HW] = {0, 0, 2, 255};
    tt_loss_desc desc = tt_loss_desc_make(1, C, 1, HW);
    tt_buffer *bx = th_upload(x, C * HW, "logits"), *bl = ref_upload_u8(labels, HW, "labels");
    tt_buffer *res = ref_loss_block(), *bg = th_zeros(C * HW, "dlogits");
    TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc));
    TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl), &desc, 1));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "softmax CE", &v));
    double xd[C * HW];
    for (int i = 0; i < C * HW; i++) xd[i] = x[i];
    double want = ref_softmax_ce(xd, labels, 1, C, HW, 255, NULL, NULL);
    float g[C * HW];
    th_download(g, bg, C * HW);
    int finite = isfinite(v.sum);
    for (int i = 0; i < C * HW; i++) finite &= isfinite(g[i]);
    printf("\n    logits +-100: sum %.9g (ref %.9g), dlogits(pixel 1) = %g %g %g\n", v.sum, want,
           g[1], g[HW + 1], g[2 * HW + 1]);
    CU_ASSERT(finite);
    CU_ASSERT(fabs(v.sum - want) <= 1e-5 * want);
    CU_ASSERT_EQUAL(v.count, 3);
    CU_ASSERT(fabs(g[1] + 1.0f) < 1e-6 && fabs(g[HW + 1] - 1.0f) < 1e-6); /* wrong pixel */
    CU_ASSERT(fabs(g[0]) < 1e-6 && g[3] == 0.0f && g[HW + 3] == 0.0f);
    tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(res), tt_buffer_free(bg);
}

/* A label that is neither a class nor the ignore value is reported. */
static void test_invalid_label(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float x[3 * 4] = {0};
    uint8_t labels[4] = {0, 7, 1, 255};
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    tt_buffer *bx = th_upload(x, 12, "logits"), *bl = ref_upload_u8(labels, 4, "labels");
    tt_buffer *res = ref_loss_block(), *bg = th_zeros(12, "dlogits");
    TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc));
    TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl), &desc, 1));
    tt_loss_value v;
    tt_status s = tt_loss_read(be, tt_mem_of(res), "softmax CE", &v);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(strstr(tt_status_message(s), "softmax CE") != NULL);
    tt_status_free(s);
    CU_ASSERT_EQUAL(v.invalid, 1);
    CU_ASSERT_EQUAL(v.count, 2);
    CU_ASSERT(fabs(v.sum - 2 * log(3.0)) < 1e-5);
    float g[12];
    th_download(g, bg, 12);
    CU_ASSERT(g[1] == 0 && g[5] == 0 && g[9] == 0);
    /* ignore = none: 255 is then invalid too */
    desc.ignore = TT_LOSS_NO_IGNORE;
    TH_OK(tt_loss_clear(be, tt_mem_of(res)));
    TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc));
    s = tt_loss_read(be, tt_mem_of(res), "softmax CE", &v);
    CU_ASSERT_EQUAL(v.invalid, 2);
    tt_status_free(s);
    tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(res), tt_buffer_free(bg);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block();
    uint8_t labels[4] = {0};
    tt_buffer *bl = ref_upload_u8(labels, 4, "labels");
    tt_loss_desc desc = tt_loss_desc_make(1, 0, 2, 2);
    tt_status s = tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "C=0") != NULL);
    tt_status_free(s);
    desc = tt_loss_desc_make(1, 3, 2, 2);
    desc.ignore = 300;
    s = tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    desc = tt_loss_desc_make(1, 4, 2, 2); /* 16 logits, buffer has 12 */
    s = tt_softmax_ce_backward(be, tt_mem_of(bx), tt_mem_of(bx), tt_mem_of(bl), &desc, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "'logits'") != NULL);
    tt_status_free(s);
    tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(res);
}

/* Class weights 0.3 .. 2.5, distinct between neighbouring classes */
static float *class_weights(int c)
{
    float *w = malloc((size_t)c * sizeof(float));
    CU_ASSERT_FATAL(w != NULL);
    for (int k = 0; k < c; k++) w[k] = 0.3f + 0.55f * (float)((k * 7 + 3) % 5);
    return w;
}

typedef struct weighted_ctx {
    const ce_data *d;
    double *weights;
} weighted_ctx;

static double ref_weighted_sum(const double *x, void *ctx)
{
    const weighted_ctx *k = ctx;
    const tt_loss_desc *s = &k->d->desc;
    return ref_softmax_ce_weighted(x, k->d->labels, s->n, s->c, s->h * s->w, s->ignore,
                                   k->weights, NULL, NULL);
}

/* Class weights: the sum vs the weighted reference, counts unweighted, the
 * gradient vs the reference's and (small cases) central differences;
 * weights of 1 give the unweighted bits. */
static void test_weighted(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0, worst_fd = 0;
    int same_bits = 1;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ce_data d = make_data(&cases[k], 800 + k, 4.0f);
        int c = d.desc.c, hw = d.desc.h * d.desc.w;
        float *w = class_weights(c), *ones = malloc((size_t)c * sizeof(float));
        double *wd = malloc((size_t)c * sizeof(double));
        CU_ASSERT_FATAL(ones && wd);
        for (int i = 0; i < c; i++) ones[i] = 1, wd[i] = w[i];
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bl = ref_upload_u8(d.labels, d.pixels, "labels");
        tt_buffer *bw = th_upload(w, (size_t)c, "weights"), *b1 = th_upload(ones, (size_t)c, "1");
        tt_buffer *res = ref_loss_block(), *bg = th_zeros(d.total, "dlogits");
        tt_loss_desc desc = d.desc;
        desc.weights = tt_mem_of(bw);
        TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl), &desc));
        TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl), &desc, 1));
        tt_loss_value v;
        TH_OK(tt_loss_read(be, tt_mem_of(res), "softmax CE", &v));
        float *got = malloc(d.total * sizeof(float));
        double *want_grad = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(got && want_grad);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        long count = 0;
        double want = ref_softmax_ce_weighted(x, d.labels, d.desc.n, c, hw, 255, wd, &count,
                                              want_grad);
        double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
        double gerr = th_max_rel_error(got, want_grad, d.total, 1e-2);
        CU_ASSERT(err < 1e-5);
        CU_ASSERT(gerr < 1e-4); /* float exp and division, as test_backward */
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
        TH_OK(tt_softmax_ce_forward(be, tt_mem_of(r1), tt_mem_of(bx), tt_mem_of(bl), &desc));
        TH_OK(tt_softmax_ce_backward(be, tt_mem_of(g1), tt_mem_of(bx), tt_mem_of(bl), &desc,
                                     0.3f));
        TH_OK(tt_softmax_ce_forward(be, tt_mem_of(r0), tt_mem_of(bx), tt_mem_of(bl), &d.desc));
        TH_OK(tt_softmax_ce_backward(be, tt_mem_of(g0), tt_mem_of(bx), tt_mem_of(bl), &d.desc,
                                     0.3f));
        same_bits &= th_same_bits(tt_mem_of(r1), tt_mem_of(r0), 4) &&
                     th_same_bits(tt_mem_of(g1), tt_mem_of(g0), d.total);
        tt_buffer_free(r1), tt_buffer_free(r0), tt_buffer_free(g1), tt_buffer_free(g0);
        free(w), free(ones), free(wd), free(got), free(want_grad), free(x);
        tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(bw), tt_buffer_free(b1);
        tt_buffer_free(res), tt_buffer_free(bg);
        free_data(&d);
    }
    CU_ASSERT(same_bits);
    printf("\n    weighted: largest sum or gradient error %.2e, vs finite differences %.2e; "
           "weights of 1 give the unweighted bits: %s\n", worst, worst_fd,
           same_bits ? "yes" : "NO");
}

/* Too few class weights are refused, naming them. */
static void test_bad_weights(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block(), *bw = th_zeros(2, "w");
    uint8_t labels[4] = {0};
    tt_buffer *bl = ref_upload_u8(labels, 4, "labels");
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    desc.weights = tt_mem_of(bw);
    tt_status s = tt_softmax_ce_backward(be, tt_mem_of(bx), tt_mem_of(bx), tt_mem_of(bl), &desc, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "class weights") != NULL);
    tt_status_free(s);
    tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(res), tt_buffer_free(bw);
}

static const char torch_script[] =
    "import sys, numpy as np\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    sys.exit(77)\n"
    "d = sys.argv[1]\n"
    "n, c, h, w = np.fromfile(d + '/shape', dtype=np.int32)\n"
    "x = torch.from_numpy(np.fromfile(d + '/logits', dtype=np.float32).reshape(n, c, h, w))\n"
    "y = torch.from_numpy(np.fromfile(d + '/labels', dtype=np.uint8).reshape(n, h, w)).long()\n"
    "x = x.double().requires_grad_()\n"
    "cw = torch.from_numpy(np.fromfile(d + '/weights', dtype=np.float32)).double()\n"
    "cw = cw if cw.numel() else None\n"
    "loss = torch.nn.CrossEntropyLoss(weight=cw, ignore_index=255, reduction='sum')(x, y)\n"
    "loss.backward()\n"
    "np.array([loss.item()], dtype=np.float64).tofile(d + '/loss')\n"
    "x.grad.numpy().astype(np.float64).tofile(d + '/grad')\n";

/* cross_entropy(reduction='sum'), and CrossEntropyLoss(weight=w,
 * reduction='sum'): its weighted sum before the division by the weights. */
static void test_torch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int weighted = 0; weighted < 2; weighted++) {
        ce_data d = make_data(&cases[6], 400 + weighted, 5.0f);
        float *w = class_weights(d.desc.c);
        char dir[PATH_MAX];
        CU_ASSERT_FATAL(rd_tempdir_in(dir, sizeof dir, "ce-torch"));
        int32_t shape[4] = {d.desc.n, d.desc.c, d.desc.h, d.desc.w};
        ref_write_file(dir, "shape", shape, sizeof shape);
        ref_write_file(dir, "logits", d.logits, d.total * sizeof(float));
        ref_write_file(dir, "labels", d.labels, d.pixels);
        ref_write_file(dir, "weights", w, weighted ? (size_t)d.desc.c * sizeof(float) : 0);
        if (ref_python(torch_script, dir)) {
            double want;
            double *grad = malloc(d.total * sizeof(double));
            float *got = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(grad && got);
            ref_read_file(dir, "loss", &want, sizeof want);
            ref_read_file(dir, "grad", grad, d.total * sizeof(double));
            tt_buffer *bx = th_upload(d.logits, d.total, "logits");
            tt_buffer *bl = ref_upload_u8(d.labels, d.pixels, "labels");
            tt_buffer *bw = th_upload(w, (size_t)d.desc.c, "weights");
            tt_buffer *res = ref_loss_block(), *bg = th_zeros(d.total, "dlogits");
            if (weighted) d.desc.weights = tt_mem_of(bw);
            TH_OK(tt_softmax_ce_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bl),
                                        &d.desc));
            TH_OK(tt_softmax_ce_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bl),
                                         &d.desc, 1));
            tt_loss_value v;
            TH_OK(tt_loss_read(be, tt_mem_of(res), "softmax CE", &v));
            th_download(got, bg, d.total);
            double err = fabs(v.sum - want) / fabs(want);
            double gerr = th_max_rel_error(got, grad, d.total, 1e-2);
            printf("\n    vs torch %sreduction='sum'): sum %.7g vs %.7g, rel err %.2e, grad "
                   "err %.2e", weighted ? "CrossEntropyLoss(weight=w, " : "cross_entropy(",
                   v.sum, want, err, gerr);
            CU_ASSERT(err < 1e-5);
            CU_ASSERT(gerr < 1e-4); /* as the finite-difference check */
            free(grad), free(got);
            tt_buffer_free(bx), tt_buffer_free(bl), tt_buffer_free(bw);
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
        {"result block accumulates over a window", test_accumulates},
        {"logits of +-100 stay finite", test_large_logits},
        {"invalid labels are reported", test_invalid_label},
        {"bad arguments are refused", test_bad_arguments},
        {"class weights", test_weighted},
        {"too few class weights are refused", test_bad_weights},
        {"cross-check with PyTorch", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("softmax_ce", tests, TH_EVERY);
}
