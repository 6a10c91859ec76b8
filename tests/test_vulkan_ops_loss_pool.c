/* The losses (softmax cross-entropy, BCE, Dice) and the pooling ops on the
 * OpenCL backend and on the Vulkan backend (lavapipe, validation on, no
 * message allowed), from the same inputs at odd offsets between poison
 * (tests/vk_compare.h): pooling bit for bit, the losses within stated
 * bounds (exp and log differ by an ulp or so); both against the plain-C
 * references. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/avg_pool2d.h"
#include "ops/bce.h"
#include "ops/max_pool2d.h"
#include "ops/softmax_ce.h"
#include "ops/tversky.h"
#include "ref_act.h"
#include "ref_loss.h"
#include "vk_compare.h"

/* ---- losses: softmax cross-entropy, BCE, Dice ------------------------------ */

typedef struct loss_case {
    int which; /* 0 softmax CE, 1 BCE, 2 Dice */
    tt_loss_desc d;
    float scale, smooth;
} loss_case;

/* arrays: 0 the loss block (4 words), 1 logits, 2 labels (bytes from byte 1
 * of the array: an odd offset), 3 dlogits; forward, then backward */
static void loss_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const loss_case *c = ctx;
    tt_mem labels = tt_mem_at(m[2], 1);
    if (c->which == 0) {
        TH_OK(tt_softmax_ce_forward(be, m[0], m[1], labels, &c->d));
        TH_OK(tt_softmax_ce_backward(be, m[3], m[1], labels, &c->d, c->scale));
    } else if (c->which == 1) {
        TH_OK(tt_bce_forward(be, m[0], m[1], labels, &c->d));
        TH_OK(tt_bce_backward(be, m[3], m[1], labels, &c->d, c->scale));
    } else { /* soft Dice: the Tversky op at alpha = beta = 0.5, smooth halved */
        tt_tversky dice = {0.5f, 0.5f, c->smooth / 2, 0, 1};
        TH_OK(tt_tversky_forward(be, m[0], m[1], labels, &c->d, &dice));
        TH_OK(tt_tversky_backward(be, m[3], m[1], labels, &c->d, &dice, c->scale));
    }
}

static void test_losses(void)
{
    static const char *const names[] = {"softmax_ce", "bce", "dice"};
    static const int shapes[][4] = {{2, 3, 5, 7}, {1, 4, 17, 19}, {3, 2, 1, 1}, {2, 1, 40, 41}};
    uint64_t seed = 29;
    for (int which = 0; which < 3; which++) {
        double sum_cl = 0, sum_ref = 0, grad_cl = 0, grad_ref = 0;
        size_t grad_differ = 0, grads = 0, sums_equal = 0, cases = 0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            loss_case c = {which,
                           tt_loss_desc_make(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]),
                           0.37f, 1.0f};
            if (s == 2) c.d.ignore = TT_LOSS_NO_IGNORE;
            size_t hw = (size_t)c.d.h * c.d.w, total = (size_t)c.d.n * c.d.c * hw;
            size_t nlab = which == 0 ? (size_t)c.d.n * hw : total, words = (nlab + 1 + 3) / 4;
            float *logits = random_floats(total, &seed), *dlogits = random_floats(total, &seed);
            uint8_t *bytes = calloc(words * 4, 1);
            CU_ASSERT_FATAL(bytes != NULL);
            uint8_t *lab = bytes + 1;
            for (size_t i = 0; i < nlab; i++) {
                int r = (int)th_uniform(&seed, 0, 100);
                lab[i] = (uint8_t)(which == 0 ? r % c.d.c : r % 2);
                if (r < 8) lab[i] = 255;                            /* ignored (or invalid) */
                if (r == 8) lab[i] = (uint8_t)(which == 0 ? c.d.c + 2 : 7); /* invalid */
            }
            float block[4] = {0.5f, 0, 0, 0};
            uint32_t three = 3;
            memcpy(&block[1], &three, 4);
            op_io cl = {.count = 4, .n = {4, total, words, total},
                        .in = {block, logits, (const float *)bytes, dlogits}}, vk;
            run_both(&cl, &vk, loss_op, &c);
            /* the reference */
            double *x = doubles(logits, total), *grad = calloc(total, sizeof(double));
            CU_ASSERT_FATAL(grad != NULL);
            long count = 0;
            size_t invalid = 0;
            for (size_t i = 0; i < nlab; i++)
                invalid += lab[i] != c.d.ignore && lab[i] >= (which == 0 ? c.d.c : 2);
            double want;
            if (which == 0) want = ref_softmax_ce(x, lab, c.d.n, c.d.c, (int)hw, c.d.ignore,
                                                  &count, grad);
            else if (which == 1) want = ref_bce(x, lab, total, c.d.ignore, &count, grad);
            else want = ref_dice(x, lab, c.d.n, c.d.c, (int)hw, c.d.ignore, c.smooth, grad),
                 count = c.d.n;
            want += 0.5;
            uint32_t w_vk[4], w_cl[4];
            memcpy(w_vk, vk.out[0], 16), memcpy(w_cl, cl.out[0], 16);
            CU_ASSERT(w_vk[1] == 3 + (uint32_t)count && w_vk[1] == w_cl[1]);
            CU_ASSERT(w_vk[2] == invalid && w_vk[2] == w_cl[2] && w_vk[3] == 0);
            double got = vk.out[0][0], got_cl = cl.out[0][0];
            sums_equal += got == got_cl;
            sum_cl = fmax(sum_cl, fabs(got - got_cl) / fabs(want));
            sum_ref = fmax(sum_ref, fabs(got - want) / fabs(want));
            for (size_t i = 0; i < total; i++) grad[i] = dlogits[i] + (double)c.scale * grad[i];
            grad_cl = fmax(grad_cl, th_max_rel_error_f(vk.out[3], cl.out[3], total, 0.1));
            grad_ref = fmax(grad_ref, rel_error(&vk, 3, grad, 0.1));
            grad_differ += differing(&cl, &vk, 3), grads += total;
            CU_ASSERT(differing(&cl, &vk, 1) == 0 && differing(&cl, &vk, 2) == 0); /* only read */
            free(x), free(grad), free(logits), free(dlogits), free(bytes);
            io_free(&cl), io_free(&vk);
            cases++;
        }
        printf("\n    %-10s loss: %zu of %zu sums bitwise equal to OpenCL, max relative "
               "difference %.2g (to double %.2g); dlogits: %zu of %zu differ from OpenCL, max "
               "%.2g (to double %.2g)", names[which], sums_equal, cases, sum_cl, sum_ref,
               grad_differ, grads, grad_cl, grad_ref);
        CU_ASSERT(sum_cl < 1e-5 && sum_ref < 1e-5);
        CU_ASSERT(grad_cl < 1e-6 && grad_ref < 1e-5);
    }
    printf("\n");
    no_messages();
}

/* ---- pooling --------------------------------------------------------------- */

/* arrays: 0 inp, 1 out, 2 argmax, 3 dout, 4 dinp (through argmax), 5 dinp
 * (from the input), 6 out without argmax; 7 avg out, 8 avg dinp */
static void pool_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_pool2d_desc *d = ctx;
    TH_OK(tt_max_pool2d_forward(be, m[1], m[2], m[0], d));
    TH_OK(tt_max_pool2d_forward(be, m[6], (tt_mem){0}, m[0], d));
    TH_OK(tt_max_pool2d_backward(be, m[4], m[3], m[2], d));
    TH_OK(tt_max_pool2d_backward_from_input(be, m[5], m[3], m[0], d));
    TH_OK(tt_avg_pool2d_forward(be, m[7], m[0], d));
    TH_OK(tt_avg_pool2d_backward(be, m[8], m[3], d));
}

static void test_pool(void)
{
    static const tt_pool2d_desc shapes[] = {
        {2, 3, 8, 19, 2, 2, 2, 2, 0, 0},  {1, 2, 16, 40, 2, 2, 2, 2, 0, 0},
        {2, 2, 9, 11, 3, 3, 2, 2, 0, 0},  {1, 3, 9, 12, 3, 3, 3, 3, 0, 0},
        {1, 1, 5, 7, 2, 3, 1, 2, 0, 0},   {2, 2, 9, 11, 3, 3, 2, 2, 1, 1},
        {1, 3, 8, 12, 3, 3, 2, 2, 1, 1},  {1, 2, 7, 6, 3, 2, 3, 2, 1, 1},
        {1, 2, 9, 40, 3, 3, 2, 2, 1, 1}}; /* wide: the stem pool's 8-wide vectors (CPUs) */
    uint64_t seed = 31;
    size_t differ = 0, cases = 0;
    double worst = 0;
    for (int variant = 0; variant < 2; variant++) { /* CPUs: the 2x2 w8 kernels, then not */
        force_both((tt_forced_variants){.w8 = variant ? TT_VARIANT_OFF : TT_VARIANT_DEVICE});
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const tt_pool2d_desc *d = &shapes[s];
            size_t planes = (size_t)d->batch * d->channels;
            size_t ni = planes * d->height * d->width;
            size_t no = planes * tt_pool2d_out_h(d) * tt_pool2d_out_w(d);
            size_t n[9] = {ni, no, no, no, ni, ni, no, no, ni};
            float *h[9];
            op_io cl = {.count = 9}, vk;
            for (int k = 0; k < 9; k++) {
                h[k] = random_floats(n[k], &seed);
                cl.n[k] = n[k], cl.in[k] = h[k];
            }
            for (size_t i = 0; i < ni; i++) h[0][i] = roundf(h[0][i] * 4) / 4; /* ties */
            run_both(&cl, &vk, pool_op, d);
            for (int k = 0; k < 9; k++) differ += differing(&cl, &vk, k);
            /* the references */
            double *x = doubles(h[0], ni), *dy = doubles(h[3], no), *y = malloc(no * 8),
                   *dx = doubles(h[4], ni), *dx2 = doubles(h[5], ni), *ya = malloc(no * 8),
                   *dxa = doubles(h[8], ni);
            int *am = malloc(no * sizeof(int));
            CU_ASSERT_FATAL(y && ya && am);
            ref_max_pool2d_forward(y, am, x, d);
            ref_max_pool2d_backward(dx, dy, am, d);
            ref_max_pool2d_backward(dx2, dy, am, d);
            ref_avg_pool2d_forward(ya, x, d);
            ref_avg_pool2d_backward(dxa, dy, d);
            CU_ASSERT(rel_error(&vk, 1, y, 1e-30) == 0 && rel_error(&vk, 6, y, 1e-30) == 0);
            CU_ASSERT(memcmp(vk.out[2], am, no * sizeof(int)) == 0);
            double e = fmax(rel_error(&vk, 4, dx, 0.1), rel_error(&vk, 5, dx2, 0.1));
            e = fmax(e, fmax(rel_error(&vk, 7, ya, 0.1), rel_error(&vk, 8, dxa, 0.1)));
            worst = fmax(worst, e);
            CU_ASSERT(e < 1e-6);
            free(x), free(dy), free(y), free(dx), free(dx2), free(ya), free(dxa), free(am);
            for (int k = 0; k < 9; k++) free(h[k]);
            io_free(&cl), io_free(&vk);
            cases++;
        }
    }
    force_both((tt_forced_variants){0});
    printf("\n    max (2x2 w8, tiles, general, padded; argmax and from input) and avg pooling: %zu "
           "cases, %zu elements differ from OpenCL; max relative error to C %.2g\n",
           cases, differ, worst);
    CU_ASSERT_EQUAL(differ, 0);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"losses: softmax CE, BCE, Dice", test_losses},
        {"max and average pooling", test_pool},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_ops_loss_pool", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
