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

int main(void)
{
    CU_TestInfo tests[] = {
        {"AdamW through the interface equals the reference", test_adamw},
        {"SGD through the interface equals the reference", test_sgd},
        {"unknown rules and bad settings are errors", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("optimizer", tests);
}
