/* SGD: the kernels against a double reference and against torch.optim.SGD. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "optim/sgd.h"
#include "ref_optim.h"

enum { STEPS = 5, OFFSET = 3, TAIL = 9 };

typedef struct sgd_case {
    const char *name;
    size_t n;
    tt_sgd_config cfg;
} sgd_case;

static sgd_case cases(int i)
{
    sgd_case all[] = {
        {"plain, n=1031", 1031, {.lr = 0.1}},
        {"weight decay 0.05, n=77", 77, {.lr = 0.05, .weight_decay = 0.05}},
        {"momentum 0.9, n=1029", 1029, {.lr = 0.02, .momentum = 0.9}},
        {"momentum 0.8 dampening 0.3 wd 0.01, n=300", 300,
         {.lr = 0.03, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.01}},
        {"nesterov 0.9 wd 1e-3, n=1", 1, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3,
                                          .nesterov = 1}},
        {"nesterov 0.95, n=513", 513, {.lr = 0.01, .momentum = 0.95, .nesterov = 1}},
    };
    return all[i];
}
#define CASE_COUNT 6

static void lrs_for(const tt_sgd_config *cfg, double *lrs)
{
    for (int s = 0; s < STEPS; s++) lrs[s] = cfg->lr * (1.0 - 0.15 * s); /* as a schedule gives */
}

static void make_data(size_t n, uint64_t seed, float *param0, float *grads)
{
    th_fill_uniform(param0, n, -1, 1, &seed);
    th_fill_uniform(grads, n * STEPS, -1, 1, &seed);
}

/* STEPS updates of n floats at float offset OFFSET inside arenas with
 * sentinels around; the momentum buffer starts as garbage (step 1 must
 * overwrite it).  Returns 1 when the sentinels and the gradients survive. */
static int run_device(const tt_sgd_config *cfg, size_t n, const float *param0, const float *grads,
                      const double *lrs, float *param, float *buf)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    size_t total = n + OFFSET + TAIL;
    float *arena = malloc(total * sizeof *arena), *gback = malloc(n * sizeof *gback);
    CU_ASSERT_FATAL(arena && gback);
    for (size_t i = 0; i < total; i++) arena[i] = 42.0f;
    memcpy(arena + OFFSET, param0, n * sizeof *arena);
    tt_buffer *bp = th_upload(arena, total, "sgd.param");
    for (size_t i = 0; i < total; i++) arena[i] = 1e30f; /* garbage momentum */
    tt_buffer *bb = th_upload(arena, total, "sgd.momentum");
    tt_buffer *bg = th_zeros(total, "sgd.grad");
    tt_mem p = tt_mem_f32(tt_mem_of(bp), OFFSET), g = tt_mem_f32(tt_mem_of(bg), OFFSET);
    tt_mem mb = cfg->momentum != 0 ? tt_mem_f32(tt_mem_of(bb), OFFSET) : (tt_mem){0};
    int intact = 1;
    for (int s = 0; s < STEPS; s++) {
        const float *gs = grads + (size_t)s * n;
        TH_OK(tt_write(be, g, gs, n * sizeof(float)));
        TH_OK(tt_sgd_update(be, p, g, mb, n, cfg, lrs[s], s + 1));
        TH_OK(tt_read(be, gback, g, n * sizeof(float)));
        intact &= memcmp(gback, gs, n * sizeof(float)) == 0; /* gradients are read only */
    }
    TH_OK(tt_read(be, param, p, n * sizeof(float)));
    if (cfg->momentum != 0) TH_OK(tt_read(be, buf, mb, n * sizeof(float)));
    th_download(arena, bp, total);
    for (size_t i = 0; i < OFFSET; i++) intact &= arena[i] == 42.0f;
    for (size_t i = OFFSET + n; i < total; i++) intact &= arena[i] == 42.0f;
    tt_buffer_free(bp), tt_buffer_free(bb), tt_buffer_free(bg);
    free(arena), free(gback);
    return intact;
}

static void test_against_reference(void)
{
    for (int c = 0; c < CASE_COUNT; c++) {
        sgd_case k = cases(c);
        size_t n = k.n;
        float *param0 = malloc(n * sizeof(float)), *grads = malloc(n * STEPS * sizeof(float));
        float *p = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
        double *rp = malloc(n * sizeof(double)), *rb = malloc(n * sizeof(double));
        double *rg = malloc(n * sizeof(double));
        CU_ASSERT_FATAL(param0 && grads && p && b && rp && rb && rg);
        make_data(n, 300 + (uint64_t)c, param0, grads);
        double lrs[STEPS];
        lrs_for(&k.cfg, lrs);
        CU_ASSERT(run_device(&k.cfg, n, param0, grads, lrs, p, b));
        for (size_t i = 0; i < n; i++) rp[i] = param0[i];
        for (int s = 0; s < STEPS; s++) {
            for (size_t i = 0; i < n; i++) rg[i] = grads[(size_t)s * n + i];
            ref_sgd_step(rp, rg, rb, n, lrs[s], k.cfg.momentum, k.cfg.dampening,
                         k.cfg.weight_decay, k.cfg.nesterov, s + 1);
        }
        /* tolerance: relative 1e-6, floor 1e-2 for parameters (of size 1);
         * the buffer sums STEPS gradients of size 1 whose cancellation
         * leaves float rounding of ~1e-7 absolute: floor 1 */
        double ep = th_max_rel_error(p, rp, n, 1e-2);
        double eb = k.cfg.momentum != 0 ? th_max_rel_error(b, rb, n, 1.0) : 0;
        printf("\n    SGD vs double reference [%s], %d steps: max rel error param %.2e, "
               "momentum_buffer %.2e", k.name, STEPS, ep, eb);
        CU_ASSERT(ep < 1e-6);
        CU_ASSERT(eb < 1e-6);
        CU_ASSERT(th_max_rel_error_f(p, param0, n, 1e-2) > 1e-3); /* it moved */
        free(param0), free(grads), free(p), free(b), free(rp), free(rb), free(rg);
    }
}

static void test_against_torch(void)
{
    ref_torch_case tc[CASE_COUNT];
    float *p[CASE_COUNT], *b[CASE_COUNT], *param0[CASE_COUNT], *grads[CASE_COUNT];
    double lrs[CASE_COUNT][STEPS];
    for (int c = 0; c < CASE_COUNT; c++) {
        sgd_case k = cases(c);
        size_t n = k.n, arrays = k.cfg.momentum != 0 ? 2 : 1;
        param0[c] = malloc(n * sizeof(float)), grads[c] = malloc(n * STEPS * sizeof(float));
        p[c] = malloc(n * sizeof(float)), b[c] = malloc(n * sizeof(float));
        CU_ASSERT_FATAL(param0[c] && grads[c] && p[c] && b[c]);
        make_data(n, 400 + (uint64_t)c, param0[c], grads[c]);
        lrs_for(&k.cfg, lrs[c]);
        CU_ASSERT(run_device(&k.cfg, n, param0[c], grads[c], lrs[c], p[c], b[c]));
        tc[c] = (ref_torch_case){.optimizer = "sgd", .n = n, .steps = STEPS, .lrs = lrs[c],
                                 .param0 = param0[c], .grads = grads[c],
                                 .weight_decay = k.cfg.weight_decay, .momentum = k.cfg.momentum,
                                 .dampening = k.cfg.dampening, .nesterov = k.cfg.nesterov,
                                 .out = malloc(arrays * n * sizeof(float)),
                                 .out_count = arrays * n};
        CU_ASSERT_PTR_NOT_NULL_FATAL(tc[c].out);
    }
    int r = ref_optim_torch_run(tc, CASE_COUNT);
    CU_ASSERT(r >= 0);
    for (int c = 0; c < CASE_COUNT && r == 0; c++) {
        size_t n = tc[c].n;
        /* tolerance: relative 1e-5 (the spec); float32 on both sides */
        double ep = th_max_rel_error_f(p[c], tc[c].out, n, 1e-2);
        double eb = tc[c].momentum != 0 ? th_max_rel_error_f(b[c], tc[c].out + n, n, 1e-1) : 0;
        size_t same = 0;
        for (size_t i = 0; i < n; i++) same += p[c][i] == tc[c].out[i];
        printf("\n    SGD vs torch.optim.SGD [%s], %d steps: max rel error param %.2e, "
               "momentum_buffer %.2e; %zu/%zu params bitwise equal",
               cases(c).name, STEPS, ep, eb, same, n);
        CU_ASSERT(ep < 1e-5);
        CU_ASSERT(eb < 1e-5);
    }
    for (int c = 0; c < CASE_COUNT; c++)
        free(param0[c]), free(grads[c]), free(p[c]), free(b[c]), free(tc[c].out);
}

/* Hand-computed: p = 1, g = 0.5, lr 0.1, momentum 0.9, wd 0.1, nesterov.
 * Step 1: d = 0.5 + 0.1 = 0.6, buf = 0.6, d = 0.6 + 0.54 = 1.14, p = 0.886. */
static void test_hand_computed_and_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float one = 1.0f, half = 0.5f, got, buf;
    tt_buffer *bp = th_upload(&one, 1, "sgd.p"), *bg = th_upload(&half, 1, "sgd.g");
    tt_buffer *bb = th_zeros(1, "sgd.buf");
    tt_sgd_config cfg = {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .nesterov = 1};
    TH_OK(tt_sgd_update(be, tt_mem_of(bp), tt_mem_of(bg), tt_mem_of(bb), 1, &cfg, 0.1, 1));
    th_download(&got, bp, 1);
    th_download(&buf, bb, 1);
    printf("\n    SGD hand-computed step: p %.9g (want 0.886), buf %.9g (want 0.6)", got, buf);
    CU_ASSERT_DOUBLE_EQUAL(got, 0.886, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(buf, 0.6, 1e-6);

    tt_mem x = tt_mem_of(bp);
    tt_sgd_config bad = {.lr = 0.1, .momentum = 0, .nesterov = 1};
    tt_status s = tt_sgd_update(be, x, x, x, 1, &bad, 0.1, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "Nesterov") != NULL);
    tt_status_free(s);
    bad = (tt_sgd_config){.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = 1};
    s = tt_sgd_update(be, x, x, x, 1, &bad, 0.1, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    bad = (tt_sgd_config){.lr = 0.1, .momentum = 0.9};
    s = tt_sgd_update(be, x, x, (tt_mem){0}, 1, &bad, 0.1, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "momentum buffer") != NULL);
    tt_status_free(s);
    bad = (tt_sgd_config){.lr = -1};
    s = tt_sgd_update(be, x, x, (tt_mem){0}, 1, &bad, 0.1, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    s = tt_sgd_update(be, x, x, (tt_mem){0}, 1, &(tt_sgd_config){.lr = 0.1}, 0.1, 0);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_buffer_free(bp), tt_buffer_free(bg), tt_buffer_free(bb);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"SGD vs double reference: momentum, nesterov, decay", test_against_reference},
        {"SGD vs torch.optim.SGD", test_against_torch},
        {"SGD hand-computed step and refused arguments", test_hand_computed_and_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("sgd", tests, TH_EVERY);
}
