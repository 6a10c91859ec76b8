/* The Lovász losses (hinge and softmax): the device sum against the double
 * reference (tests/ref_lovasz.c) at the shapes that break a sort (1x1, 1x2,
 * odd, prime, a 256x256 and a 1024x1024 plane), ignored pixels, empty planes,
 * absent classes, class weights, ties, logits of +-100; the gradient
 * against central differences of the reference; backward adds;
 * determinism; bad arguments; and a PyTorch check written from the paper
 * (tests/torch_lovasz_check.py). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "ops/lovasz.h"
#include "ref_data.h"
#include "ref_loss.h"
#include "ref_lovasz.h"

typedef struct lovasz_case {
    int n, c, h, w;
    int ignore_fraction; /* percent of pixels ignored (255) */
} lovasz_case;

/* 61x67 pads to 4096 slots: global sort passes and several chunks */
static const lovasz_case cases[] = {
    {1, 1, 1, 1, 0},  {1, 1, 1, 2, 0},  {1, 3, 5, 7, 0},  {2, 4, 5, 7, 20},
    {3, 2, 1, 1, 30}, {2, 1, 3, 4, 40}, {2, 3, 61, 67, 10},
};

typedef struct lovasz_data {
    tt_loss_desc desc;
    int softmax;
    size_t total, target_count;
    float *logits;
    uint8_t *targets;
    double *weights; /* NULL: all 1 */
} lovasz_data;

/* Random logits in [-range, range); targets 0/1 with a 30% foreground
 * (hinge) or labels over C - 1 classes (softmax: the last class absent in
 * every image when C > 2), ignore_fraction percent 255. */
static lovasz_data make_data(const lovasz_case *k, int softmax, uint64_t seed, float range)
{
    lovasz_data d = {tt_loss_desc_make(k->n, k->c, k->h, k->w), softmax, 0, 0, NULL, NULL, NULL};
    size_t hw = (size_t)k->h * k->w;
    d.total = (size_t)k->n * k->c * hw;
    d.target_count = softmax ? (size_t)k->n * hw : d.total;
    d.logits = malloc(d.total * sizeof(float));
    d.targets = malloc(d.target_count);
    CU_ASSERT_FATAL(d.logits && d.targets);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    int labels = k->c > 2 ? k->c - 1 : k->c;
    for (size_t i = 0; i < d.target_count; i++) {
        d.targets[i] = softmax ? (uint8_t)th_uniform(&seed, 0, labels)
                               : (uint8_t)(th_uniform(&seed, 0, 1) < 0.3);
        if (th_uniform(&seed, 0, 100) < k->ignore_fraction) d.targets[i] = 255;
    }
    return d;
}

static void free_data(lovasz_data *d)
{
    free(d->logits);
    free(d->targets);
    free(d->weights);
}

static double ref_sum(const double *x, void *ctx)
{
    const lovasz_data *d = ctx;
    return ref_lovasz(x, d->targets, d->desc.n, d->desc.c, d->desc.h * d->desc.w,
                      d->desc.ignore, d->softmax, d->weights, NULL, NULL);
}

/* The device's block after one forward; weights uploaded when set. */
static tt_loss_value device_forward(const lovasz_data *d, tt_status *read_status)
{
    tt_backend *be = th_backend();
    tt_buffer *bx = th_upload(d->logits, d->total, "logits");
    tt_buffer *bt = ref_upload_u8(d->targets, d->target_count, "targets");
    tt_buffer *res = ref_loss_block(), *bw = NULL;
    tt_loss_desc desc = d->desc;
    if (d->weights) {
        float w[64];
        for (int k = 0; k < desc.c; k++) w[k] = (float)d->weights[k];
        bw = th_upload(w, (size_t)desc.c, "weights");
        desc.weights = tt_mem_of(bw);
    }
    TH_OK(tt_lovasz_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, d->softmax));
    tt_loss_value v;
    tt_status s = tt_loss_read(be, tt_mem_of(res), "Lovasz", &v);
    if (read_status) *read_status = s;
    else TH_OK(s);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res), tt_buffer_free(bw);
    return v;
}

/* dlogits after `times` backwards of `scale` onto `start` (NULL: zeros). */
static float *device_backward(const lovasz_data *d, const float *start, int times, float scale)
{
    tt_backend *be = th_backend();
    tt_buffer *bx = th_upload(d->logits, d->total, "logits");
    tt_buffer *bt = ref_upload_u8(d->targets, d->target_count, "targets");
    tt_buffer *bg = start ? th_upload(start, d->total, "dlogits") : th_zeros(d->total, "dlogits");
    tt_buffer *bw = NULL;
    tt_loss_desc desc = d->desc;
    if (d->weights) {
        float w[64];
        for (int k = 0; k < desc.c; k++) w[k] = (float)d->weights[k];
        bw = th_upload(w, (size_t)desc.c, "weights");
        desc.weights = tt_mem_of(bw);
    }
    for (int r = 0; r < times; r++)
        TH_OK(tt_lovasz_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &desc,
                                 d->softmax, scale));
    float *got = malloc(d->total * sizeof(float));
    CU_ASSERT_FATAL(got != NULL);
    th_download(got, bg, d->total);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bg), tt_buffer_free(bw);
    return got;
}

/* The gradient's tolerance against the analytic reference, relative to
 * its largest entry: float errors that differ by less than a rounding
 * (no tie in double) may rank the other way round on the device, which
 * moves a step between two ranks: about 1 / plane size. */
static double analytic_tolerance(const lovasz_data *d)
{
    return 1e-5 + 4.0 / (d->desc.h * d->desc.w);
}

/* Forward vs reference; returns the relative error and prints it. */
static double check_forward(const lovasz_data *d, const char *what, double tolerance)
{
    tt_status read_status;
    tt_loss_value v = device_forward(d, &read_status);
    double *x = th_to_double(d->logits, d->total);
    long invalid;
    double want = ref_lovasz(x, d->targets, d->desc.n, d->desc.c, d->desc.h * d->desc.w,
                             d->desc.ignore, d->softmax, d->weights, &invalid, NULL);
    /* invalid labels are reported by tt_loss_read */
    CU_ASSERT_EQUAL(tt_status_code(read_status), invalid ? TT_ERR_FORMAT : TT_OK);
    tt_status_free(read_status);
    double err = fabs(v.sum - want) / (fabs(want) + 1e-6);
    printf("\n    %s %s N=%d C=%d %dx%d: sum %.7g (ref %.7g) rel err %.2e", what,
           d->softmax ? "softmax" : "hinge", d->desc.n, d->desc.c, d->desc.h, d->desc.w, v.sum,
           want, err);
    CU_ASSERT(isfinite(v.sum));
    CU_ASSERT(err < tolerance);
    CU_ASSERT_EQUAL(v.count, (uint32_t)d->desc.n);
    CU_ASSERT_EQUAL(v.invalid, (uint32_t)invalid);
    free(x);
    return err;
}

static void test_forward_vs_reference(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0;
    for (int softmax = 0; softmax < 2; softmax++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            lovasz_data d = make_data(&cases[k], softmax, 100 + k, 4.0f);
            worst = fmax(worst, check_forward(&d, "random", 1e-5));
            free_data(&d);
        }
    printf("\n    largest forward rel error %.2e\n", worst);
}

/* Big planes for the sort: 256x256 (one K per work-item, 256 chunks) and
 * 1024x1024 (16 slots per work-item), forward and backward. */
static void test_large_planes(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    const lovasz_case big[] = {{1, 1, 256, 256, 10}, {1, 2, 256, 256, 5}, {1, 1, 1024, 1024, 0}};
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        int softmax = k == 1;
        lovasz_data d = make_data(&big[k], softmax, 300 + k, 3.0f);
        check_forward(&d, "large", 1e-4); /* float sums over 2^16..2^20 terms */
        { /* the gradient against the analytic reference */
            float *got = device_backward(&d, NULL, 1, 1.0f);
            double *x = th_to_double(d.logits, d.total), *want = calloc(d.total, sizeof(double));
            CU_ASSERT_FATAL(want != NULL);
            ref_lovasz(x, d.targets, d.desc.n, d.desc.c, d.desc.h * d.desc.w, d.desc.ignore,
                       softmax, NULL, NULL, want);
            double scale = 0;
            for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(want[i]));
            double err = th_max_rel_error(got, want, d.total, scale);
            printf(", grad err %.2e", err);
            CU_ASSERT(err < analytic_tolerance(&d));
            free(got), free(x), free(want);
        }
        free_data(&d);
    }
    printf("\n");
}

/* Ignored pixels, empty planes, absent classes, invalid targets, weights,
 * ties (all logits equal), logits of +-100. */
static void test_special_planes(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    for (int softmax = 0; softmax < 2; softmax++) {
        /* empty planes: hinge targets all 0 in image 1; softmax image 1
         * all class 0 (classes 1, 2 absent) */
        lovasz_data d = make_data(&(lovasz_case){2, 3, 6, 5, 10}, softmax, 500, 3.0f);
        size_t per_image = d.target_count / 2;
        for (size_t i = per_image; i < d.target_count; i++)
            if (d.targets[i] != 255) d.targets[i] = 0;
        check_forward(&d, "empty planes", 1e-5);
        /* class weights */
        d.weights = malloc(3 * sizeof(double));
        CU_ASSERT_FATAL(d.weights != NULL);
        d.weights[0] = 0.5, d.weights[1] = 2.0, d.weights[2] = 1.25;
        check_forward(&d, "weights", 1e-5);
        /* invalid targets: counted, left out */
        d.targets[3] = softmax ? 3 : 2;
        d.targets[per_image + 1] = 7;
        check_forward(&d, "invalid", 1e-5);
        /* a fully ignored image adds 0 (softmax) or its empty planes' 0 */
        memset(d.targets, 255, per_image);
        check_forward(&d, "ignored image", 1e-5);
        free_data(&d);

        /* ties: all logits equal, and tied gradients match the reference's
         * index-ordered subgradient */
        d = make_data(&(lovasz_case){2, 3, 7, 9, 10}, softmax, 600, 1.0f);
        for (size_t i = 0; i < d.total; i++) d.logits[i] = 0.5f;
        check_forward(&d, "ties", 1e-5);
        float *got = device_backward(&d, NULL, 1, 1.0f);
        double *x = th_to_double(d.logits, d.total), *want = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(want != NULL);
        ref_lovasz(x, d.targets, 2, 3, 63, 255, softmax, NULL, NULL, want);
        double err = th_max_rel_error(got, want, d.total, 1e-2);
        printf(", tied grad err %.2e", err);
        CU_ASSERT(err < 1e-5);
        free(got), free(x), free(want);

        /* logits of +-100: finite loss and gradient */
        uint64_t seed = 9;
        for (size_t i = 0; i < d.total; i++)
            d.logits[i] = th_uniform(&seed, 0, 1) < 0.5 ? -100.0f : 100.0f;
        d.logits[1] = 37.0f;
        check_forward(&d, "+-100", 1e-5);
        got = device_backward(&d, NULL, 1, 1.0f);
        int finite = 1;
        for (size_t i = 0; i < d.total; i++) finite &= isfinite(got[i]);
        CU_ASSERT(finite);
        free(got);
        free_data(&d);
    }
    printf("\n");
}

static void test_backward(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0, worst_twice = 0;
    for (int softmax = 0; softmax < 2; softmax++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            lovasz_data d = make_data(&cases[k], softmax, 200 + k, 3.0f);
            if (k == 3) { /* with weights */
                d.weights = malloc((size_t)d.desc.c * sizeof(double));
                CU_ASSERT_FATAL(d.weights != NULL);
                for (int c = 0; c < d.desc.c; c++) d.weights[c] = 0.5 + c;
            }
            float *got = device_backward(&d, NULL, 1, 1.0f);
            double *x = th_to_double(d.logits, d.total);
            double *want = calloc(d.total, sizeof(double));
            CU_ASSERT_FATAL(want != NULL);
            const char *against;
            double tolerance = 1e-5;
            if (d.total <= 400) {
                /* piecewise linear in the errors: exact away from ties and kinks */
                th_numeric_grad(ref_sum, &d, x, d.total, 1e-7, want);
                against = "finite differences";
            } else {
                ref_lovasz(x, d.targets, d.desc.n, d.desc.c, d.desc.h * d.desc.w, d.desc.ignore,
                           softmax, d.weights, NULL, want);
                against = "analytic reference";
                tolerance = analytic_tolerance(&d);
            }
            double scale = 0;
            for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(want[i]));
            double err = th_max_rel_error(got, want, d.total, scale + 1e-12);
            printf("\n    %s N=%d C=%d %dx%d: grad vs %s %.2e (largest |grad| %.2e)",
                   softmax ? "softmax" : "hinge", d.desc.n, d.desc.c, d.desc.h, d.desc.w,
                   against, err, scale);
            CU_ASSERT(err < tolerance);
            worst = fmax(worst, err);

            /* adds: twice at 0.25 onto a random start */
            float *start = malloc(d.total * sizeof(float));
            CU_ASSERT_FATAL(start != NULL);
            uint64_t seed = 7;
            th_fill_uniform(start, d.total, -1, 1, &seed);
            float *twice = device_backward(&d, start, 2, 0.25f);
            for (size_t i = 0; i < d.total; i++) want[i] = start[i] + 0.5 * got[i];
            double e2 = th_max_rel_error(twice, want, d.total, 1.0);
            CU_ASSERT(e2 < 1e-6);
            worst_twice = fmax(worst_twice, e2);
            /* deterministic: the same bits again */
            float *again = device_backward(&d, NULL, 1, 1.0f);
            CU_ASSERT(memcmp(again, got, d.total * sizeof(float)) == 0);
            free(again), free(start), free(twice), free(want), free(got), free(x);
            free_data(&d);
        }
    printf("\n    largest gradient error %.2e, twice-adds-twice error %.2e\n", worst, worst_twice);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block();
    uint8_t t[12] = {0};
    tt_buffer *bt = ref_upload_u8(t, 4, "labels");
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    tt_status s = tt_lovasz_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, 2);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "softmax") != NULL);
    tt_status_free(s);
    /* hinge wants (N, C, H, W) targets: 12 bytes, the buffer has 4 */
    s = tt_lovasz_backward(be, tt_mem_of(bx), tt_mem_of(bx), tt_mem_of(bt), &desc, 0, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "targets") != NULL);
    tt_status_free(s);
    /* class weights of the wrong size */
    tt_buffer *bw = th_zeros(2, "weights");
    desc.weights = tt_mem_of(bw);
    s = tt_lovasz_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "weights") != NULL);
    tt_status_free(s);
    desc = tt_loss_desc_make(0, 3, 2, 2);
    s = tt_lovasz_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    /* the workspace grows with the planes; softmax adds its dloss/dp */
    desc = tt_loss_desc_make(2, 3, 61, 67);
    size_t hinge = tt_lovasz_workspace_bytes(&desc, 0);
    CU_ASSERT(hinge >= 2 * 6 * 4096 * sizeof(float));
    CU_ASSERT_EQUAL(tt_lovasz_workspace_bytes(&desc, 1), hinge + 6 * 61 * 67 * sizeof(float));
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res), tt_buffer_free(bw);
}

static void test_torch(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    char script_path[512];
    snprintf(script_path, sizeof script_path, "%s/tests/torch_lovasz_check.py", TT_SOURCE_DIR);
    FILE *f = fopen(script_path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char script[16384];
    size_t length = fread(script, 1, sizeof script - 1, f);
    fclose(f);
    CU_ASSERT_FATAL(length > 0 && length < sizeof script - 1);
    script[length] = '\0';
    for (int softmax = 0; softmax < 2; softmax++) {
        lovasz_data d = make_data(&(lovasz_case){2, 3, 9, 11, 10}, softmax, 700 + softmax, 3.0f);
        char dir[PATH_MAX];
        CU_ASSERT_FATAL(rd_tempdir_in(dir, sizeof dir, "lovasz-torch"));
        int shape[6] = {d.desc.n, d.desc.c, d.desc.h, d.desc.w, softmax, d.desc.ignore};
        ref_write_file(dir, "shape", shape, sizeof shape);
        ref_write_file(dir, "logits", d.logits, d.total * sizeof(float));
        ref_write_file(dir, "targets", d.targets, d.target_count);
        if (ref_python(script, dir)) {
            double want;
            double *grad = malloc(d.total * sizeof(double));
            CU_ASSERT_FATAL(grad != NULL);
            ref_read_file(dir, "loss", &want, sizeof want);
            ref_read_file(dir, "grad", grad, d.total * sizeof(double));
            tt_loss_value v = device_forward(&d, NULL);
            float *got = device_backward(&d, NULL, 1, 1.0f);
            double scale = 0;
            for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(grad[i]));
            double err = fabs(v.sum - want) / fabs(want);
            double gerr = th_max_rel_error(got, grad, d.total, scale);
            printf("\n    %s vs torch (paper's lovasz_grad, per image): sum %.7g vs %.7g, rel "
                   "err %.2e, grad err %.2e", softmax ? "softmax" : "hinge", v.sum, want, err,
                   gerr);
            CU_ASSERT(err < 1e-5);
            CU_ASSERT(gerr < 1e-5);
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
        {"forward sum, count and invalid vs reference", test_forward_vs_reference},
        {"ignore, empty planes, absent classes, weights, ties, +-100", test_special_planes},
        {"backward vs finite differences, adds, deterministic", test_backward},
        {"large planes: 256x256 and 1024x1024", test_large_planes},
        {"bad arguments", test_bad_arguments},
        {"cross-check with PyTorch", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("lovasz", tests, TH_EVERY);
}
