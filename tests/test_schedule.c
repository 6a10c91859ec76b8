/* Learning-rate schedules at hand-computed points; parser errors. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "optim/schedule.h"

static double worst; /* largest |got - want| / want over every checked point */

static void check_lr(const tt_schedule *s, double base, int64_t step, double want)
{
    double got = tt_schedule_lr(s, base, step);
    double err = fabs(got - want) / fabs(want);
    if (err > worst) worst = err;
    if (!(err < 1e-12)) printf("\n    step %lld: lr %.17g, want %.17g", (long long)step, got, want);
    CU_ASSERT(err < 1e-12); /* tolerance: double rounding of cos and pow only */
}

static tt_schedule parsed(const char *text)
{
    tt_schedule s = {0};
    TH_OK(tt_schedule_parse(text, &s));
    return s;
}

static void test_constant_and_warmup(void)
{
    worst = 0;
    tt_schedule s = parsed("constant");
    check_lr(&s, 0.1, 1, 0.1);
    check_lr(&s, 0.1, 100000, 0.1);
    check_lr(&s, 0.1, 0, 0.1); /* below 1 counts as 1 */
    s = parsed("constant:warmup=4");
    check_lr(&s, 0.1, 1, 0.025);
    check_lr(&s, 0.1, 2, 0.05);
    check_lr(&s, 0.1, 4, 0.1);
    check_lr(&s, 0.1, 5, 0.1);
    printf("\n    constant/warmup: max rel error %.2e", worst);
}

static void test_cosine(void)
{
    worst = 0;
    tt_schedule s = parsed("cosine:warmup=10,total=110,min_lr=0.001");
    check_lr(&s, 0.1, 1, 0.01);
    check_lr(&s, 0.1, 5, 0.05);
    check_lr(&s, 0.1, 10, 0.1);
    /* k = 25 of 100: 0.001 + 0.099 (1 + cos(pi/4)) / 2 */
    check_lr(&s, 0.1, 35, 0.001 + 0.099 * 0.85355339059327376);
    check_lr(&s, 0.1, 60, 0.001 + 0.099 * 0.5); /* half way */
    check_lr(&s, 0.1, 85, 0.001 + 0.099 * 0.14644660940672624);
    check_lr(&s, 0.1, 110, 0.001); /* the last step reaches the floor */
    check_lr(&s, 0.1, 1000, 0.001);
    /* min_lr 0: transformers' get_cosine_schedule_with_warmup lambda at index t */
    s = parsed("cosine:total=200,warmup=20");
    for (int64_t t = 21; t <= 200; t += 17) {
        double progress = (double)(t - 20) / 180.0;
        check_lr(&s, 3e-4, t, 3e-4 * 0.5 * (1.0 + cos(3.14159265358979323846 * 2 * 0.5 * progress)));
    }
    /* no warmup: the first step is at (almost) full rate */
    s = parsed("cosine:total=4");
    check_lr(&s, 1.0, 1, 0.5 * (1 + cos(3.14159265358979323846 / 4)));
    check_lr(&s, 1.0, 2, 0.5);
    printf("\n    cosine with warmup: max rel error %.2e", worst);
}

static void test_step_decay(void)
{
    worst = 0;
    tt_schedule s = parsed("step:every=3,gamma=0.5");
    int64_t steps[] = {1, 2, 3, 4, 6, 7, 9, 10};
    double want[] = {1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125}; /* StepLR: 0.5^((t-1) // 3) */
    for (int i = 0; i < 8; i++) check_lr(&s, 1.0, steps[i], want[i]);
    s = parsed("step:every=3,warmup=2"); /* gamma defaults to 0.1 */
    check_lr(&s, 1.0, 1, 0.5);
    check_lr(&s, 1.0, 2, 1.0);
    check_lr(&s, 1.0, 5, 1.0);
    check_lr(&s, 1.0, 6, 0.1);  /* k = t - 2 = 4: 0.1^((4 - 1) // 3) */
    check_lr(&s, 1.0, 8, 0.1);
    check_lr(&s, 1.0, 9, 0.01);
    check_lr(&s, 1.0, 12, 0.001);
    printf("\n    step decay: max rel error %.2e", worst);
}

/* With gradient accumulation the trainer counts optimizer steps: 12
 * micro-batches with accumulation 4 see three rates, each held 4 times. */
static void test_per_optimizer_step(void)
{
    tt_schedule s = parsed("step:every=1,gamma=0.5");
    int accum_steps = 4;
    int64_t optimizer_step = 1;
    double seen[12];
    for (int micro_batch = 1; micro_batch <= 12; micro_batch++) {
        seen[micro_batch - 1] = tt_schedule_lr(&s, 1.0, optimizer_step);
        if (micro_batch % accum_steps == 0) optimizer_step++;
    }
    CU_ASSERT_EQUAL(seen[0], 1.0);
    CU_ASSERT_EQUAL(seen[3], 1.0);
    CU_ASSERT_EQUAL(seen[4], 0.5);
    CU_ASSERT_EQUAL(seen[11], 0.25);
}

static void expect_error(const char *text, const char *fragment)
{
    tt_schedule s = tt_schedule_constant();
    s.warmup_steps = 77;
    tt_status st = tt_schedule_parse(text, &s);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_FORMAT);
    const char *msg = st ? tt_status_message(st) : "";
    int ok = strstr(msg, fragment) != NULL && strstr(msg, "write e.g.") != NULL;
    if (!ok) printf("\n    '%s': message '%s' lacks '%s'", text, msg, fragment);
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(s.warmup_steps, 77); /* untouched on error */
    tt_status_free(st);
}

static void test_parse_errors(void)
{
    expect_error("", "unknown kind ''");
    expect_error("linear", "unknown kind 'linear'");
    expect_error("cosine", "cosine needs total=");
    expect_error("step:gamma=0.5", "step needs every=");
    expect_error("cosine:total=10,warmup=10", "must exceed warmup");
    expect_error("cosine:total=abc", "'abc' is not a whole number >= 0 for total");
    expect_error("cosine:total=-5", "'-5' is not a whole number");
    expect_error("cosine:total=100,min_lr=nan", "'nan' is not a finite number for min_lr");
    expect_error("step:every=3,gamma=1e999", "'1e999' is not a finite number for gamma");
    expect_error("step:every=0", "every 0 must be >= 1");
    expect_error("step:every=3,gamma=-1", "gamma -1 must be finite and > 0");
    expect_error("cosine:total=100,every=3", "cosine takes no key 'every'");
    expect_error("constant:total=5", "constant takes no key 'total'");
    expect_error("cosine:total=100,total=200", "key 'total' is given twice");
    expect_error("cosine:total", "'total' is not key=value");
    expect_error("constant:", "nothing follows ':'");
    expect_error("cosine:total=100,", "'' is not key=value");
    expect_error("cosine:warmup=,total=100", "'' is not a whole number");
}

static void test_format_round_trip(void)
{
    const char *texts[] = {"constant", "constant:warmup=3", "cosine:warmup=5,total=50,min_lr=1e-6",
                           "step:every=7,gamma=0.3"};
    for (int i = 0; i < 4; i++) {
        tt_schedule a = parsed(texts[i]), b = {0};
        char buf[128];
        CU_ASSERT(tt_schedule_format(&a, buf, sizeof buf) < (int)sizeof buf);
        TH_OK(tt_schedule_parse(buf, &b));
        CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
        for (int64_t t = 1; t < 60; t += 5)
            CU_ASSERT_EQUAL(tt_schedule_lr(&a, 0.01, t), tt_schedule_lr(&b, 0.01, t));
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"constant and linear warmup", test_constant_and_warmup},
        {"warmup + cosine to a floor", test_cosine},
        {"step decay", test_step_decay},
        {"advances per optimizer step, not micro-batch", test_per_optimizer_step},
        {"parser errors name the problem", test_parse_errors},
        {"format parses back", test_format_round_trip},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("schedule", tests, TH_HOST);
}
