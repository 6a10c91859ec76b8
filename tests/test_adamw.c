/* AdamW: the kernel against a double reference and against torch.optim.AdamW. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "optim/adamw.h"
#include "ref_optim.h"

enum { STEPS = 6, OFFSET = 5, TAIL = 7 };

/* One run: n floats at float offset OFFSET inside arenas of n + OFFSET + TAIL,
 * STEPS updates with rates lrs[]; results (n each) come back in param, m, v.
 * Returns 1 if the floats around the region were left untouched. */
static int run_device(const tt_adamw_config *cfg, size_t n, const float *param0,
                      const float *grads, const double *lrs, float *param, float *m, float *v)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    size_t total = n + OFFSET + TAIL;
    float *arena = malloc(total * sizeof *arena);
    CU_ASSERT_PTR_NOT_NULL_FATAL(arena);
    for (size_t i = 0; i < total; i++) arena[i] = 42.0f; /* sentinels around the region */
    memcpy(arena + OFFSET, param0, n * sizeof *arena);
    tt_buffer *bp = th_upload(arena, total, "adamw.param");
    tt_buffer *bg = th_zeros(total, "adamw.grad");
    tt_buffer *bm = th_zeros(total, "adamw.exp_avg");
    tt_buffer *bv = th_zeros(total, "adamw.exp_avg_sq");
    tt_mem p = tt_mem_f32(tt_mem_of(bp), OFFSET), g = tt_mem_f32(tt_mem_of(bg), OFFSET);
    tt_mem em = tt_mem_f32(tt_mem_of(bm), OFFSET), ev = tt_mem_f32(tt_mem_of(bv), OFFSET);
    for (int s = 0; s < STEPS; s++) {
        TH_OK(tt_write(be, g, grads + (size_t)s * n, n * sizeof(float)));
        TH_OK(tt_adamw_update(be, p, g, em, ev, n, cfg, lrs[s], s + 1));
    }
    TH_OK(tt_read(be, param, p, n * sizeof(float)));
    TH_OK(tt_read(be, m, em, n * sizeof(float)));
    TH_OK(tt_read(be, v, ev, n * sizeof(float)));
    th_download(arena, bp, total);
    int intact = 1;
    for (size_t i = 0; i < OFFSET; i++) intact &= arena[i] == 42.0f;
    for (size_t i = OFFSET + n; i < total; i++) intact &= arena[i] == 42.0f;
    tt_buffer_free(bp), tt_buffer_free(bg), tt_buffer_free(bm), tt_buffer_free(bv);
    free(arena);
    return intact;
}

/* Random parameters in [-1, 1); gradients in [-1, 1) with every 7th scaled
 * down by 1e-4 (small moments, where eps starts to matter). */
static void make_data(size_t n, uint64_t seed, float *param0, float *grads)
{
    th_fill_uniform(param0, n, -1, 1, &seed);
    th_fill_uniform(grads, n * STEPS, -1, 1, &seed);
    for (size_t i = 0; i < n * STEPS; i += 7) grads[i] *= 1e-4f;
}

typedef struct adamw_case {
    const char *name;
    size_t n;
    tt_adamw_config cfg;
} adamw_case;

static adamw_case cases(int i)
{
    tt_adamw_config d = tt_adamw_config_default();
    tt_adamw_config strong = {.lr = 3e-2, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6,
                              .weight_decay = 0.1};
    tt_adamw_config no_wd = d;
    no_wd.weight_decay = 0;
    adamw_case all[] = {
        {"defaults, n=1031", 1031, d},
        {"lr 3e-2 b=(0.8,0.99) eps 1e-6 wd 0.1, n=257", 257, strong},
        {"no weight decay, n=1", 1, no_wd},
    };
    return all[i];
}
#define CASE_COUNT 3

static void lrs_for(const tt_adamw_config *cfg, double *lrs)
{
    /* a changing rate, as a schedule gives */
    for (int s = 0; s < STEPS; s++) lrs[s] = cfg->lr * (1.0 - 0.1 * s);
}

static void test_against_reference(void)
{
    for (int c = 0; c < CASE_COUNT; c++) {
        adamw_case k = cases(c);
        size_t n = k.n;
        float *param0 = malloc(n * sizeof(float)), *grads = malloc(n * STEPS * sizeof(float));
        float *p = malloc(n * sizeof(float)), *m = malloc(n * sizeof(float));
        float *v = malloc(n * sizeof(float));
        double *rp = malloc(n * sizeof(double)), *rm = calloc(n, sizeof(double));
        double *rv = calloc(n, sizeof(double)), *rg = malloc(n * sizeof(double));
        CU_ASSERT_FATAL(param0 && grads && p && m && v && rp && rm && rv && rg);
        make_data(n, 100 + (uint64_t)c, param0, grads);
        double lrs[STEPS];
        lrs_for(&k.cfg, lrs);
        CU_ASSERT(run_device(&k.cfg, n, param0, grads, lrs, p, m, v));
        for (size_t i = 0; i < n; i++) rp[i] = param0[i];
        for (int s = 0; s < STEPS; s++) {
            for (size_t i = 0; i < n; i++) rg[i] = grads[(size_t)s * n + i];
            ref_adamw_step(rp, rg, rm, rv, n, lrs[s], k.cfg.beta1, k.cfg.beta2, k.cfg.eps,
                           k.cfg.weight_decay, s + 1);
        }
        /* tolerance: relative 1e-6; floors keep near-zero entries from
         * dividing float rounding (about 1e-8 absolute: exp_avg cancels
         * terms of size 0.1) by nothing */
        double ep = th_max_rel_error(p, rp, n, 1e-2);
        double em = th_max_rel_error(m, rm, n, 1e-1);
        double ev = th_max_rel_error(v, rv, n, 1e-4);
        printf("\n    AdamW vs double reference [%s], %d steps: max rel error param %.2e, "
               "exp_avg %.2e, exp_avg_sq %.2e", k.name, STEPS, ep, em, ev);
        CU_ASSERT(ep < 1e-6);
        CU_ASSERT(em < 1e-6);
        CU_ASSERT(ev < 1e-6);
        /* the update moved the parameters (the test could fail) */
        CU_ASSERT(th_max_rel_error_f(p, param0, n, 1e-2) > 1e-4);
        free(param0), free(grads), free(p), free(m), free(v), free(rp), free(rm), free(rv),
            free(rg);
    }
}

static void test_against_torch(void)
{
    ref_torch_case tc[CASE_COUNT];
    float *p[CASE_COUNT], *m[CASE_COUNT], *v[CASE_COUNT], *param0[CASE_COUNT], *grads[CASE_COUNT];
    double lrs[CASE_COUNT][STEPS];
    for (int c = 0; c < CASE_COUNT; c++) {
        adamw_case k = cases(c);
        size_t n = k.n;
        param0[c] = malloc(n * sizeof(float)), grads[c] = malloc(n * STEPS * sizeof(float));
        p[c] = malloc(n * sizeof(float)), m[c] = malloc(n * sizeof(float));
        v[c] = malloc(n * sizeof(float));
        CU_ASSERT_FATAL(param0[c] && grads[c] && p[c] && m[c] && v[c]);
        make_data(n, 200 + (uint64_t)c, param0[c], grads[c]);
        lrs_for(&k.cfg, lrs[c]);
        CU_ASSERT(run_device(&k.cfg, n, param0[c], grads[c], lrs[c], p[c], m[c], v[c]));
        tc[c] = (ref_torch_case){.optimizer = "adamw", .n = n, .steps = STEPS, .lrs = lrs[c],
                                 .param0 = param0[c], .grads = grads[c], .beta1 = k.cfg.beta1,
                                 .beta2 = k.cfg.beta2, .eps = k.cfg.eps,
                                 .weight_decay = k.cfg.weight_decay,
                                 .out = malloc(3 * n * sizeof(float)), .out_count = 3 * n};
        CU_ASSERT_PTR_NOT_NULL_FATAL(tc[c].out);
    }
    int r = ref_optim_torch_run(tc, CASE_COUNT);
    CU_ASSERT(r >= 0);
    for (int c = 0; c < CASE_COUNT && r == 0; c++) {
        size_t n = tc[c].n;
        /* tolerance: relative 1e-5 (the spec); float32 on both sides */
        double ep = th_max_rel_error_f(p[c], tc[c].out, n, 1e-2);
        double em = th_max_rel_error_f(m[c], tc[c].out + n, n, 1e-2);
        double ev = th_max_rel_error_f(v[c], tc[c].out + 2 * n, n, 1e-4);
        size_t same = 0;
        for (size_t i = 0; i < n; i++) same += p[c][i] == tc[c].out[i];
        printf("\n    AdamW vs torch.optim.AdamW [%s], %d steps: max rel error param %.2e, "
               "exp_avg %.2e, exp_avg_sq %.2e; %zu/%zu params bitwise equal",
               cases(c).name, STEPS, ep, em, ev, same, n);
        CU_ASSERT(ep < 1e-5);
        CU_ASSERT(em < 1e-5);
        CU_ASSERT(ev < 1e-5);
    }
    for (int c = 0; c < CASE_COUNT; c++)
        free(param0[c]), free(grads[c]), free(p[c]), free(m[c]), free(v[c]), free(tc[c].out);
}

static void test_scalars_and_errors(void)
{
    tt_adamw_config d = tt_adamw_config_default();
    CU_ASSERT_DOUBLE_EQUAL(d.lr, 1e-3, 0);
    CU_ASSERT_DOUBLE_EQUAL(d.beta1, 0.9, 0);
    CU_ASSERT_DOUBLE_EQUAL(d.beta2, 0.999, 0);
    CU_ASSERT_DOUBLE_EQUAL(d.eps, 1e-8, 0);
    CU_ASSERT_DOUBLE_EQUAL(d.weight_decay, 0.01, 0);
    /* hand-computed: step 2 at lr 1e-3: 1 - 0.9^2 = 0.19, 1 - 0.999^2 = 0.001999 */
    tt_adamw_scalars s = tt_adamw_scalars_of(&d, 1e-3, 2);
    CU_ASSERT_EQUAL(s.neg_step_size, (float)(-1e-3 / 0.19));
    CU_ASSERT_EQUAL(s.bias_correction2_sqrt, (float)sqrt(0.001999));
    CU_ASSERT_EQUAL(s.decay, (float)(1 - 1e-5));
    CU_ASSERT_EQUAL(s.one_minus_beta1, 0.1f); /* double 1 - 0.9 rounded once */

    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *b = th_zeros(4, "adamw.err");
    tt_mem x = tt_mem_of(b);
    tt_adamw_config bad = d;
    bad.beta2 = 1.0;
    tt_status st = tt_adamw_update(be, x, x, x, x, 4, &bad, 1e-3, 1);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(st), "beta2") != NULL);
    tt_status_free(st);
    st = tt_adamw_update(be, x, x, x, x, 4, &d, 1e-3, 0);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(st), "step 0") != NULL);
    tt_status_free(st);
    st = tt_adamw_update(be, x, x, x, x, 4, &d, NAN, 1);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(st);
    TH_OK(tt_adamw_update(be, x, x, x, x, 0, &d, 1e-3, 1)); /* n = 0: nothing */
    tt_buffer_free(b);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"AdamW vs double reference, odd sizes, offsets", test_against_reference},
        {"AdamW vs torch.optim.AdamW", test_against_torch},
        {"AdamW scalars and refused arguments", test_scalars_and_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("adamw", tests, TH_EVERY);
}
