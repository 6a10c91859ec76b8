/* Group norm and batch norm on the Vulkan backend (shaders/norm/, from
 * opencl/norm.cl) on lavapipe with validation on, against the OpenCL
 * backend: forward and backward, with and without affine parameters and the
 * fused ReLU, batch norm in training (running statistics; also through a
 * sync of one rank, its shader norm_stat_moments) and eval mode,
 * planes of one and of several shares, both share layouts
 * (forced.norm_interleave OFF and ON). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/batch_norm.h"
#include "ops/group_norm.h"
#include "test_vulkan.h"

/* The tensors of one case: inputs 0..5, outputs 6..11, on the host. */
enum { INP, WEIGHT, BIAS, DOUT, RMEAN, RVAR, OUT, DINP, DWEIGHT, DBIAS, OUT_RMEAN, OUT_RVAR, NT };
static const char *const names[NT] = {"", "", "", "", "", "", "out", "dinp", "dweight", "dbias",
                                      "running_mean", "running_var"};

typedef struct norm_case {
    int kind;     /* 0 group norm, 1 batch norm training, 2 batch norm eval,
                     3 batch norm training through a sync of one rank */
    int n, c, h, w, groups, relu, affine;
    size_t count[NT];
    float *t[NT];
} norm_case;

/* A world of one: the sums stay as they are. */
static tt_status identity_allreduce(void *ctx, double *values, size_t n)
{
    (void)ctx, (void)values, (void)n;
    return NULL;
}

/* Runs forward and backward of `k` on `be` (inputs from k, outputs to got). */
static void run_norm(tt_backend *be, const norm_case *k, float *got[NT])
{
    tt_buffer *b[NT] = {0};
    tt_mem m[NT];
    for (int i = 0; i < NT; i++) {
        size_t n = k->count[i] ? k->count[i] : 1;
        b[i] = alloc(be, n * 4 + 8, "norm tensor");
        m[i] = tt_mem_at(tt_mem_of(b[i]), 8); /* at an offset */
        if (i < OUT && k->count[i]) TH_OK(tt_write(be, m[i], k->t[i], n * 4));
    }
    /* gradients are added: start them from random values */
    for (int i = DINP; i <= DBIAS; i++) TH_OK(tt_write(be, m[i], k->t[i], k->count[i] * 4));
    tt_mem weight = k->affine ? m[WEIGHT] : (tt_mem){0}, bias = k->affine ? m[BIAS] : (tt_mem){0};
    tt_mem dweight = k->affine ? m[DWEIGHT] : (tt_mem){0};
    tt_mem dbias = k->affine ? m[DBIAS] : (tt_mem){0};
    tt_buffer *saved = NULL;
    if (k->kind == 0) {
        tt_group_norm_desc d = tt_group_norm_desc_make(k->n, k->c, k->h, k->w, k->groups);
        d.relu = k->relu;
        saved = alloc(be, tt_group_norm_saved_floats(&d) * 4, "saved");
        TH_OK(tt_group_norm_forward(be, m[OUT], tt_mem_of(saved), m[INP], weight, bias, &d));
        TH_OK(tt_group_norm_backward(be, m[DINP], dweight, dbias, m[DOUT], m[INP],
                                     tt_mem_of(saved), weight, bias, &d));
    } else {
        tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
        d.relu = k->relu;
        int training = k->kind == 1 || k->kind == 3;
        static const tt_norm_sync one_rank = {identity_allreduce, NULL};
        if (k->kind == 3) d.sync = &one_rank;
        saved = alloc(be, tt_batch_norm_saved_floats(&d) * 4, "saved");
        TH_OK(tt_write(be, m[OUT_RMEAN], k->t[RMEAN], k->count[RMEAN] * 4));
        TH_OK(tt_write(be, m[OUT_RVAR], k->t[RVAR], k->count[RVAR] * 4));
        tt_batch_norm_state st = {weight, bias, m[OUT_RMEAN], m[OUT_RVAR], 3};
        TH_OK(tt_batch_norm_forward(be, m[OUT], tt_mem_of(saved), m[INP], &st, &d, training));
        TH_OK(tt_batch_norm_backward(be, m[DINP], dweight, dbias, m[DOUT], m[INP],
                                     tt_mem_of(saved), &st, &d, training));
    }
    for (int i = OUT; i < NT; i++) {
        got[i] = malloc((k->count[i] ? k->count[i] : 1) * 4);
        CU_ASSERT_FATAL(got[i] != NULL);
        if (k->count[i]) TH_OK(tt_read(be, got[i], m[i], k->count[i] * 4));
    }
    tt_buffer_free(saved);
    for (int i = 0; i < NT; i++) tt_buffer_free(b[i]);
}

static void test_norms(void)
{
    /* kind, N, C, H, W, groups, relu, affine; 33x33 planes have two shares */
    static const int cases[][8] = {
        {0, 2, 6, 5, 7, 3, 0, 1}, {0, 2, 6, 5, 7, 3, 1, 1}, {0, 1, 4, 33, 33, 2, 1, 1},
        {0, 3, 2, 4, 4, 1, 0, 0}, {1, 2, 3, 5, 7, 0, 0, 1}, {1, 2, 3, 33, 33, 0, 1, 1},
        {1, 3, 2, 3, 3, 0, 0, 0}, {2, 2, 3, 5, 7, 0, 0, 1}, {2, 2, 3, 6, 9, 0, 1, 1},
        {3, 2, 3, 33, 33, 0, 1, 1}, {3, 3, 2, 3, 3, 0, 0, 0},
    };
    tt_backend *vk = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(vk);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    uint64_t seed = 23;
    int failures = 0, runs = 0;
    double worst = 0;
    size_t count = sizeof cases / sizeof cases[0];
    for (size_t r = 0; r < 2 * count; r++) {
        const int *v = cases[r % count];
        force_both((tt_forced_variants){.norm_interleave = r < count ? TT_VARIANT_OFF : TT_VARIANT_ON});
        norm_case k = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], {0}, {0}};
        size_t all = (size_t)k.n * k.c * k.h * k.w, ch = (size_t)k.c;
        size_t counts[NT] = {all, ch, ch, all, ch, ch, all, all, ch, ch, ch, ch};
        if (k.kind == 0) counts[RMEAN] = counts[RVAR] = counts[OUT_RMEAN] = counts[OUT_RVAR] = 0;
        memcpy(k.count, counts, sizeof counts);
        for (int i = 0; i < NT; i++) {
            k.t[i] = th_random_floats(k.count[i] ? k.count[i] : 1, -1, 1, &seed);
            if (i == INP) /* an offset and a scale, as activations have */
                for (size_t j = 0; j < all; j++) k.t[i][j] = 3 + 2 * k.t[i][j];
            if (i == RVAR) for (size_t j = 0; j < ch; j++) k.t[i][j] = 1.5f + k.t[i][j];
        }
        float *got_vk[NT] = {0}, *got_cl[NT] = {0};
        run_norm(vk, &k, got_vk);
        run_norm(cl, &k, got_cl);
        /* out, dinp, running statistics: values of order 1; dweight and
         * dbias: sums of the N H W (batch norm) terms of order 1 */
        double sums = (double)k.n * k.h * k.w;
        int ok = 1;
        for (int i = OUT; i < NT; i++) {
            int same = 1;
            for (size_t j = 0; j < k.count[i]; j++) {
                double a = got_vk[i][j], b = got_cl[i][j];
                double bound = 1e-5 * (1 + fabs(b)) + (i >= DWEIGHT && i <= DBIAS ? 4e-7 * sums : 0);
                double err = fabs(a - b);
                same &= err <= bound;
                if (err / bound > worst) worst = err / bound;
            }
            if (!same)
                printf("\n    norm case %zu (kind %d interleave %d): %s differs from OpenCL\n",
                       r % count, k.kind, r >= count, names[i]);
            ok &= same;
        }
        failures += !ok;
        runs++;
        for (int i = 0; i < NT; i++) free(k.t[i]), free(got_vk[i]), free(got_cl[i]);
    }
    force_both((tt_forced_variants){0});
    /* the ops' own checks come before any launch, as on OpenCL */
    tt_group_norm_desc d = tt_group_norm_desc_make(1, 2, 4, 4, 1);
    tt_buffer *x = alloc(vk, 256 * 4, "x"), *saved = alloc(vk, 4096, "saved");
    tt_mem at = tt_mem_of(x), shifted = tt_mem_f32(at, 1);
    expect_error(tt_group_norm_backward(vk, shifted, (tt_mem){0}, (tt_mem){0}, at, at,
                                        tt_mem_of(saved), (tt_mem){0}, (tt_mem){0}, &d),
                 TT_ERR_INVALID_ARGUMENT, "overlaps", NULL);
    tt_buffer_free(x), tt_buffer_free(saved);
    CU_ASSERT_EQUAL(failures, 0);
    printf("\n    group and batch norm: %d runs within 1e-5 (1 + |x|) of OpenCL (plus 4e-7 per "
           "summed term for dweight, dbias); worst %.3f of it\n",
           runs, worst);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"group and batch norm against OpenCL", test_norms},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_norm", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
