/* Soft Dice: device sum (sum over images of the mean over classes of
 * 1 - dice) and count (images) vs the double reference, the gradient vs
 * central differences, ignore, empty planes, several work-groups per plane,
 * logits of +-100, accumulation, argument checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/dice.h"
#include "ref_loss.h"

typedef struct dice_case {
    int n, c, h, w;
    int ignore_fraction; /* percent of elements with target 255 */
} dice_case;

/* the last one has more than 4 * 256 pixels per plane: several chunks */
static const dice_case cases[] = {
    {1, 1, 1, 1, 0}, {1, 3, 5, 7, 0}, {2, 5, 5, 7, 20}, {3, 3, 1, 1, 30},
    {1, 5, 17, 33, 25}, {2, 1, 3, 4, 40}, {2, 3, 61, 67, 10},
};

typedef struct dice_data {
    tt_loss_desc desc;
    size_t total;
    float *logits;
    uint8_t *targets;
    double smooth;
} dice_data;

static dice_data make_data(const dice_case *k, uint64_t seed, float range)
{
    dice_data d = {tt_loss_desc_make(k->n, k->c, k->h, k->w), 0, NULL, NULL, 1.0};
    d.total = (size_t)k->n * k->c * k->h * k->w;
    d.logits = malloc(d.total * sizeof(float));
    d.targets = malloc(d.total);
    CU_ASSERT_FATAL(d.logits && d.targets);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    for (size_t i = 0; i < d.total; i++) {
        d.targets[i] = th_uniform(&seed, 0, 1) < 0.3;
        if (th_uniform(&seed, 0, 100) < k->ignore_fraction) d.targets[i] = 255;
    }
    return d;
}

static void free_data(dice_data *d)
{
    free(d->logits);
    free(d->targets);
}

static double ref_sum(const double *x, void *ctx)
{
    const dice_data *d = ctx;
    return ref_dice(x, d->targets, d->desc.n, d->desc.c, d->desc.h * d->desc.w, d->desc.ignore,
                    d->smooth, NULL);
}

static double device_sum(dice_data *d, uint32_t *count)
{
    tt_backend *be = th_backend();
    tt_buffer *bx = th_upload(d->logits, d->total, "logits");
    tt_buffer *bt = ref_upload_u8(d->targets, d->total, "targets");
    tt_buffer *res = ref_loss_block();
    TH_OK(tt_dice_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &d->desc,
                          (float)d->smooth));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, tt_mem_of(res), "Dice", &v));
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res);
    *count = v.count;
    return v.sum;
}

static void test_forward_vs_reference(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    double worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dice_data d = make_data(&cases[k], 100 + k, 4.0f);
        d.smooth = k % 2 ? 1.0 : 1e-3; /* the default and a small smoothing */
        uint32_t count;
        double got = device_sum(&d, &count);
        double *x = th_to_double(d.logits, d.total);
        double want = ref_sum(x, &d);
        double err = fabs(got - want) / (fabs(want) + 1e-6);
        printf("\n    N=%d C=%d %dx%d smooth %g: sum %.7g (ref %.7g) rel err %.2e, count %u",
               d.desc.n, d.desc.c, d.desc.h, d.desc.w, d.smooth, got, want, err, count);
        CU_ASSERT(err < 1e-5); /* float sums of p over at most 4087 pixels per plane */
        CU_ASSERT_EQUAL(count, (uint32_t)d.desc.n); /* count = images */
        if (err > worst) worst = err;
        free(x);
        free_data(&d);
    }
    printf("\n    largest forward rel error %.2e\n", worst);
}

static void test_backward(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0, worst_twice = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dice_data d = make_data(&cases[k], 200 + k, 3.0f);
        d.smooth = k % 2 ? 1.0 : 1e-3;
        tt_buffer *bx = th_upload(d.logits, d.total, "logits");
        tt_buffer *bt = ref_upload_u8(d.targets, d.total, "targets");
        tt_buffer *bg = th_zeros(d.total, "dlogits");
        TH_OK(tt_dice_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc,
                               (float)d.smooth, 1));
        float *got = malloc(d.total * sizeof(float));
        double *want = calloc(d.total, sizeof(double));
        CU_ASSERT_FATAL(got && want);
        th_download(got, bg, d.total);
        double *x = th_to_double(d.logits, d.total);
        const char *against;
        if (d.total <= 3000) { /* central differences cost 2 * total evaluations */
            th_numeric_grad(ref_sum, &d, x, d.total, 1e-6, want);
            against = "finite differences";
        } else {
            ref_dice(x, d.targets, d.desc.n, d.desc.c, d.desc.h * d.desc.w, d.desc.ignore,
                     d.smooth, want);
            against = "analytic reference";
        }
        /* the gradient is small (~1 / plane size): compare relative to the largest */
        double scale = 0;
        for (size_t i = 0; i < d.total; i++) scale = fmax(scale, fabs(want[i]));
        double err = th_max_rel_error(got, want, d.total, scale);
        printf("\n    N=%d C=%d %dx%d: grad vs %s %.2e (largest |grad| %.2e)", d.desc.n,
               d.desc.c, d.desc.h, d.desc.w, against, err, scale);
        CU_ASSERT(err < 1e-5); /* relative to the largest gradient: float sums */
        if (err > worst) worst = err;
        int zero_at_ignored = 1;
        for (size_t i = 0; i < d.total; i++)
            if (d.targets[i] == 255) zero_at_ignored &= got[i] == 0.0f;
        CU_ASSERT(zero_at_ignored);

        float *start = malloc(d.total * sizeof(float)), *twice = malloc(d.total * sizeof(float));
        CU_ASSERT_FATAL(start && twice);
        uint64_t seed = 7;
        th_fill_uniform(start, d.total, -scale, scale, &seed);
        TH_OK(tt_write(be, tt_mem_of(bg), start, d.total * sizeof(float)));
        for (int r = 0; r < 2; r++)
            TH_OK(tt_dice_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc,
                                   (float)d.smooth, 0.25f));
        th_download(twice, bg, d.total);
        for (size_t i = 0; i < d.total; i++) want[i] = start[i] + 0.5 * got[i];
        double e2 = th_max_rel_error(twice, want, d.total, scale);
        CU_ASSERT(e2 < 1e-6); /* two float roundings, relative to the largest gradient */
        if (e2 > worst_twice) worst_twice = e2;
        free(start), free(twice), free(want), free(got), free(x);
        tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bg);
        free_data(&d);
    }
    printf("\n    largest gradient error %.2e, twice-adds-twice error %.2e\n", worst, worst_twice);
}

/* Known values: a plane with no foreground predicted empty scores ~1 (loss
 * ~0); a perfect plane of 4 foreground pixels at +100 scores
 * (8 + 1) / (8 + 1) = 1; all wrong at +-100 scores 1 / (4 + 4 + 1). */
static void test_known_values(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { HW = 8 };
    /* image 0: class 0 empty and predicted empty, class 1 perfect;
     * image 1: class 0 all wrong, class 1 half ignored and perfect elsewhere */
    float x[2 * 2 * HW];
    uint8_t t[2 * 2 * HW];
    for (int i = 0; i < HW; i++) {
        x[0 * HW + i] = -100, t[0 * HW + i] = 0;
        x[1 * HW + i] = i < 4 ? 100 : -100, t[1 * HW + i] = i < 4;
        x[2 * HW + i] = i < 4 ? -100 : 100, t[2 * HW + i] = i < 4;
        x[3 * HW + i] = i < 4 ? 100 : 3, t[3 * HW + i] = i < 4 ? 1 : 255;
    }
    dice_data d = {tt_loss_desc_make(2, 2, 2, 4), 2 * 2 * HW, x, t, 1.0};
    uint32_t count;
    double got = device_sum(&d, &count);
    double want = (1 - 1.0 / 9) / 2; /* only image 1 class 0 is wrong */
    double xd[2 * 2 * HW], gd[2 * 2 * HW] = {0};
    for (int i = 0; i < 2 * 2 * HW; i++) xd[i] = x[i];
    double ref = ref_dice(xd, t, 2, 2, HW, 255, 1.0, gd);
    printf("\n    known planes: sum %.9g (exact %.9g, ref %.9g), count %u\n", got, want, ref,
           count);
    CU_ASSERT(fabs(got - want) < 1e-6);
    CU_ASSERT(fabs(ref - want) < 1e-12);
    CU_ASSERT_EQUAL(count, 2);

    tt_buffer *bx = th_upload(x, 2 * 2 * HW, "logits"), *bt = ref_upload_u8(t, 2 * 2 * HW, "t");
    tt_buffer *bg = th_zeros(2 * 2 * HW, "dlogits");
    TH_OK(tt_dice_backward(be, tt_mem_of(bg), tt_mem_of(bx), tt_mem_of(bt), &d.desc, 1, 1));
    float g[2 * 2 * HW];
    th_download(g, bg, 2 * 2 * HW);
    int finite = 1;
    double gerr = 0;
    for (int i = 0; i < 2 * 2 * HW; i++) {
        finite &= isfinite(g[i]);
        gerr = fmax(gerr, fabs(g[i] - gd[i]));
    }
    CU_ASSERT(finite);
    CU_ASSERT(gerr < 1e-20); /* saturated sigmoids: gradients ~e^-100 */
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(bg);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *bx = th_zeros(12, "logits"), *res = ref_loss_block();
    uint8_t t[12] = {0};
    tt_buffer *bt = ref_upload_u8(t, 12, "targets");
    tt_loss_desc desc = tt_loss_desc_make(1, 3, 2, 2);
    tt_status s = tt_dice_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, 0);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "smooth") != NULL);
    tt_status_free(s);
    desc = tt_loss_desc_make(1, 3, 2, 3); /* 18 elements, buffers have 12 */
    s = tt_dice_backward(be, tt_mem_of(bx), tt_mem_of(bx), tt_mem_of(bt), &desc, 1, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    /* a target of 3 is invalid and reported */
    t[5] = 3;
    TH_OK(tt_write(be, tt_mem_of(bt), t, 12));
    desc = tt_loss_desc_make(1, 3, 2, 2);
    TH_OK(tt_dice_forward(be, tt_mem_of(res), tt_mem_of(bx), tt_mem_of(bt), &desc, 1));
    tt_loss_value v;
    s = tt_loss_read(be, tt_mem_of(res), "Dice", &v);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT_EQUAL(v.invalid, 1);
    tt_status_free(s);
    tt_buffer_free(bx), tt_buffer_free(bt), tt_buffer_free(res);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward sum and count vs reference", test_forward_vs_reference},
        {"backward vs finite differences, ignore, twice", test_backward},
        {"known planes, logits of +-100", test_known_values},
        {"bad arguments and invalid targets", test_bad_arguments},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("dice", tests, TH_EVERY);
}
