/* The optimizer object: AdamW and SGD behind one interface give the
 * updates of the plain-C references (tests/ref_optim.c), own their state
 * buffers under their checkpoint names and count their updates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
#include "ref_optim.h"

enum { N = 517, STEPS = 4 };

/* Runs STEPS updates of `request` from the same data; *params out. */
static void run(const tt_optimizer_request *request, float *params_out, tt_optimizer **keep)
{
    tt_backend *be = th_backend();
    uint64_t seed = 7;
    float p0[N], g[N];
    th_fill_uniform(p0, N, -1, 1, &seed);
    th_fill_uniform(g, N, -0.5f, 0.5f, &seed);
    tt_buffer *p = th_upload(p0, N, "params"), *gb = th_upload(g, N, "grads");
    tt_optimizer *o = NULL;
    TH_OK(tt_optimizer_create(be, request, N, &o));
    for (int s = 0; s < STEPS; s++) /* a decaying rate, as a schedule gives */
        TH_OK(tt_optimizer_step(o, tt_mem_of(p), tt_mem_of(gb), request->lr * (1.0 - 0.1 * s)));
    th_download(params_out, p, N);
    tt_buffer_free(p);
    tt_buffer_free(gb);
    if (keep) *keep = o;
    else tt_optimizer_destroy(o);
}

/* The reference: STEPS updates in double through ref_optim.c. */
static void reference(const tt_optimizer_request *r, double *out)
{
    uint64_t seed = 7;
    float p0[N], g[N];
    th_fill_uniform(p0, N, -1, 1, &seed);
    th_fill_uniform(g, N, -0.5f, 0.5f, &seed);
    double *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v), gd[N];
    for (size_t i = 0; i < N; i++) out[i] = p0[i], gd[i] = g[i];
    for (int s = 0; s < STEPS; s++) {
        double lr = r->lr * (1.0 - 0.1 * s);
        if (strcmp(r->name, "adamw") == 0) {
            tt_adamw_config c = tt_adamw_config_default();
            c.lr = r->lr;
            if (r->weight_decay >= 0) c.weight_decay = r->weight_decay;
            ref_adamw_step(out, gd, m, v, N, lr, c.beta1, c.beta2, c.eps, c.weight_decay, s + 1);
        } else {
            tt_sgd_config c = tt_sgd_config_default();
            c.lr = r->lr, c.momentum = r->momentum, c.nesterov = r->nesterov;
            c.weight_decay = r->weight_decay >= 0 ? r->weight_decay : 0;
            ref_sgd_step(out, gd, m, N, lr, c.momentum, c.dampening, c.weight_decay, c.nesterov,
                         s + 1);
        }
    }
    free(m), free(v);
}

static void check(const tt_optimizer_request *r, const char *label, int states,
                  const char *first_state)
{
    float got[N];
    double want[N];
    tt_optimizer *o = NULL;
    run(r, got, &o);
    reference(r, want);
    double e = th_max_rel_error(got, want, N, 1e-6);
    printf("\n  %s: %d updates, max rel error %.2e", label, STEPS, e);
    CU_ASSERT(e < 1e-5);
    CU_ASSERT_EQUAL(o->updates, STEPS);
    CU_ASSERT_EQUAL(o->state_count, states);
    if (states) CU_ASSERT_STRING_EQUAL(o->state_names[0], first_state);
    for (int i = 0; i < states; i++)
        CU_ASSERT_EQUAL(o->state[i]->record.category, TT_MEM_OPTIMIZER);
    tt_optimizer_destroy(o);
}

static void test_adamw(void)
{
    tt_optimizer_request r = {.name = "adamw", .lr = 1e-2, .weight_decay = -1};
    check(&r, "adamw (default decay)", 2, "exp_avg");
    r.weight_decay = 0.1;
    check(&r, "adamw, weight decay 0.1", 2, "exp_avg");
}

static void test_sgd(void)
{
    tt_optimizer_request r = {.name = "sgd", .lr = 0.05, .weight_decay = -1};
    check(&r, "sgd, no momentum (no state)", 0, NULL);
    r.momentum = 0.9, r.nesterov = 1, r.weight_decay = 1e-3;
    check(&r, "sgd, Nesterov 0.9", 1, "momentum_buffer");
}

static void test_errors(void)
{
    tt_optimizer *o = NULL;
    tt_optimizer_request unknown = {.name = "lamb", .lr = 1e-3, .weight_decay = -1};
    tt_status s = tt_optimizer_create(th_backend(), &unknown, 8, &o);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "lamb") && strstr(tt_status_message(s), "adamw"));
    CU_ASSERT_PTR_NULL(o);
    tt_status_free(s);
    tt_optimizer_request bad = {.name = "sgd", .lr = -1, .weight_decay = -1};
    s = tt_optimizer_create(th_backend(), &bad, 8, &o);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_optimizer_destroy(NULL);
}

/* Parameter groups (PyTorch's param_groups): [0, 200) at a tenth of the
 * rate and frozen for the first 2 steps, [200, N) at the full rate; each
 * group counts its own updates, so the first moves with bias correction
 * 1 at step 3 as torch's per-parameter state["step"] does.  Against the
 * plain-C reference and torch.optim.AdamW with two groups. */
static void test_groups(void)
{
    enum { SPLIT = 200, FROZEN = 2 };
    tt_backend *be = th_backend();
    tt_optimizer_request r = {.name = "adamw", .lr = 1e-2, .weight_decay = 0.05};
    uint64_t seed = 11;
    float p0[N], g[N * STEPS];
    th_fill_uniform(p0, N, -1, 1, &seed);
    th_fill_uniform(g, N * STEPS, -0.5f, 0.5f, &seed);
    tt_buffer *p = th_upload(p0, N, "params");
    tt_optimizer *o = NULL;
    TH_OK(tt_optimizer_create(be, &r, N, &o));
    tt_optimizer_group groups[2] = {{0, SPLIT, 0.1, 0, 0}, {SPLIT, N, 1.0, 0, 0}};
    TH_OK(tt_optimizer_set_groups(o, groups, 2));
    double lrs[STEPS];
    for (int s = 0; s < STEPS; s++) {
        lrs[s] = r.lr * (1.0 - 0.1 * s);
        o->groups[0].frozen = s < FROZEN;
        tt_buffer *gb = th_upload(g + (size_t)s * N, N, "grads");
        TH_OK(tt_optimizer_step(o, tt_mem_of(p), tt_mem_of(gb), lrs[s]));
        tt_buffer_free(gb);
    }
    CU_ASSERT_EQUAL(o->updates, STEPS);
    CU_ASSERT_EQUAL(o->groups[0].updates, STEPS - FROZEN);
    CU_ASSERT_EQUAL(o->groups[1].updates, STEPS);
    float got[3 * N];
    th_download(got, p, N);
    th_download(got + N, o->state[0], N);
    th_download(got + 2 * N, o->state[1], N);
    /* the reference: each range its own AdamW with its own step count */
    double want[3 * N] = {0};
    tt_adamw_config c = tt_adamw_config_default();
    for (size_t i = 0; i < N; i++) want[i] = p0[i];
    for (int grp = 0; grp < 2; grp++) {
        size_t b = grp ? SPLIT : 0, e = grp ? N : SPLIT, step = 0;
        for (int s = grp ? 0 : FROZEN; s < STEPS; s++) {
            double gd[N];
            for (size_t i = b; i < e; i++) gd[i] = g[(size_t)s * N + i];
            ref_adamw_step(want + b, gd + b, want + N + b, want + 2 * N + b, e - b,
                           lrs[s] * groups[grp].lr_scale, c.beta1, c.beta2, c.eps, 0.05, (int)++step);
        }
    }
    double e = th_max_rel_error(got, want, 3 * N, 1e-6);
    printf("\n  2 groups, one frozen for %d steps: max rel error %.2e (reference)", FROZEN, e);
    CU_ASSERT(e < 1e-5);
    /* torch.optim.AdamW with the same two groups */
    double spec[8] = {0, SPLIT, 0.1, FROZEN, SPLIT, N, 1.0, 0};
    float torch_out[3 * N];
    ref_torch_case tc = {.optimizer = "adamw", .n = N, .steps = STEPS, .lrs = lrs, .param0 = p0,
                         .grads = g, .beta1 = c.beta1, .beta2 = c.beta2, .eps = c.eps,
                         .weight_decay = 0.05, .out = torch_out, .out_count = 3 * N,
                         .group_count = 2, .groups = spec};
    if (ref_optim_torch_run(&tc, 1) == 0) {
        double worst = 0;
        for (size_t i = 0; i < 3 * N; i++)
            worst = fmax(worst, fabs((double)got[i] - torch_out[i]) / (fabs((double)torch_out[i]) + 1e-6));
        printf("\n  against torch.optim.AdamW with two param groups: max rel error %.2e", worst);
        CU_ASSERT(worst < 1e-5);
    }
    /* groups that do not tile the arena are refused, naming the group */
    groups[1].begin = SPLIT + 1;
    tt_status st = tt_optimizer_set_groups(o, groups, 2);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(st && strstr(tt_status_message(st), "group 1"));
    tt_status_free(st);
    tt_buffer_free(p);
    tt_optimizer_destroy(o);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"AdamW through the interface equals the reference", test_adamw},
        {"SGD through the interface equals the reference", test_sgd},
        {"unknown rules and bad settings are errors", test_errors},
        {"parameter groups: own rates, own counts, one frozen", test_groups},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("optimizer", tests, TH_EVERY);
}
