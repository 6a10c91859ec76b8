/* Liveness planning: reuse when lifetimes do not meet, never when they do. */
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "harness.h"

/* No two items alive at the same time share a byte of the same buffer. */
static int valid(const tt_plan_item *items, int n, const tt_plan *plan, size_t cap)
{
    for (int i = 0; i < n; i++) {
        if (items[i].buffer < 0 || items[i].buffer >= plan->buffer_count) return 0;
        if (items[i].offset + items[i].bytes > plan->buffer_bytes[items[i].buffer]) return 0;
        if (plan->buffer_bytes[items[i].buffer] > cap) return 0;
        for (int j = i + 1; j < n; j++) {
            const tt_plan_item *a = &items[i], *b = &items[j];
            int time = a->first <= b->last && b->first <= a->last;
            int space = a->buffer == b->buffer && a->offset < b->offset + b->bytes &&
                        b->offset < a->offset + a->bytes;
            if (time && space) return 0;
        }
    }
    return 1;
}

static void test_reuse(void)
{
    tt_plan_item items[] = {
        {"a", 100, 0, 1, 0, 0}, {"b", 100, 2, 3, 0, 0}, {"c", 50, 1, 2, 0, 0},
    };
    tt_plan plan;
    TH_OK(tt_plan_solve(items, 3, 4, 1 << 20, &plan));
    CU_ASSERT(valid(items, 3, &plan, 1 << 20));
    /* a and b never meet: they share; c meets both */
    CU_ASSERT_EQUAL(items[0].offset, items[1].offset);
    CU_ASSERT_EQUAL(plan.total_bytes, 150); /* a and b at 0, c at 100 */
    CU_ASSERT_EQUAL(plan.unplanned_bytes, 250);
}

/* Largest first leaves a gap here that placing in order of birth does not:
 * the plan is the better one, the bound of what is alive at once (50 at
 * steps 3 and 6). */
static void test_best_order(void)
{
    tt_plan_item items[] = {
        {"a", 20, 4, 6, 0, 0}, {"b", 10, 3, 5, 0, 0}, {"c", 30, 2, 3, 0, 0},
        {"d", 30, 6, 10, 0, 0}, {"e", 10, 1, 3, 0, 0},
    };
    tt_plan plan;
    TH_OK(tt_plan_solve(items, 5, 1, 1 << 20, &plan));
    CU_ASSERT(valid(items, 5, &plan, 1 << 20));
    CU_ASSERT_EQUAL(plan.total_bytes, 50); /* by size alone: 60 */
}

static void test_all_alive(void)
{
    tt_plan_item items[4];
    for (int i = 0; i < 4; i++) items[i] = (tt_plan_item){"x", 10 + (size_t)i, 0, 9, 0, 0};
    tt_plan plan;
    TH_OK(tt_plan_solve(items, 4, 16, 1 << 20, &plan));
    CU_ASSERT(valid(items, 4, &plan, 1 << 20));
    CU_ASSERT_EQUAL(plan.total_bytes, 16 * 3 + 10); /* aligned, nothing shared */
}

static void test_buffer_cap(void)
{
    tt_plan_item items[] = {
        {"a", 600, 0, 5, 0, 0}, {"b", 600, 0, 5, 0, 0}, {"c", 300, 0, 5, 0, 0},
    };
    tt_plan plan;
    TH_OK(tt_plan_solve(items, 3, 8, 1000, &plan));
    CU_ASSERT(valid(items, 3, &plan, 1000));
    CU_ASSERT_EQUAL(plan.buffer_count, 2); /* a + c | b */
    tt_plan_item big = {"big", 1001, 0, 0, 0, 0};
    tt_status s = tt_plan_solve(&big, 1, 8, 1000, &plan);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_TOO_LARGE);
    CU_ASSERT(s && strstr(tt_status_message(s), "'big'") != NULL);
    tt_status_free(s);
    tt_plan_item bad = {"bad", 8, 3, 2, 0, 0};
    s = tt_plan_solve(&bad, 1, 8, 1000, &plan);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
}

static void test_random_plans_are_valid(void)
{
    uint64_t seed = 3;
    for (int round = 0; round < 200; round++) {
        tt_plan_item items[40];
        int n = 1 + (int)th_uniform(&seed, 0, 40);
        for (int i = 0; i < n; i++) {
            int a = (int)th_uniform(&seed, 0, 30), b = (int)th_uniform(&seed, 0, 30);
            items[i] = (tt_plan_item){"r", 1 + (size_t)th_uniform(&seed, 0, 5000), a < b ? a : b,
                                      a < b ? b : a, 0, 0};
        }
        tt_plan plan;
        TH_OK(tt_plan_solve(items, n, 64, 20000, &plan));
        CU_ASSERT_FATAL(valid(items, n, &plan, 20000));
        /* never worse than one buffer per item */
        size_t aligned = 0;
        for (int i = 0; i < n; i++) aligned += (items[i].bytes + 63) / 64 * 64;
        CU_ASSERT(plan.total_bytes <= aligned);
    }
}

/* Lives from a record: laid out end to end, an offset names one item; its
 * life is its first to last touching step; gaps and unused items stay so. */
static void test_lives_from_touches(void)
{
    tt_plan_item items[] = {
        {"a", 100, 0, 0, 0, 0}, {"b", 1, 0, 0, 0, 0}, {"c", 64, 0, 0, 0, 0}, {"d", 8, 0, 0, 0, 0},
    };
    size_t span;
    tt_plan_lay_out(items, 4, 64, &span);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(items[i].offset % 64, 0);
        CU_ASSERT(i == 0 || items[i].offset >= items[i - 1].offset + items[i - 1].bytes + 64);
        CU_ASSERT_EQUAL(items[i].first, -1);
        CU_ASSERT_EQUAL(items[i].last, -1);
    }
    CU_ASSERT(span >= items[3].offset + items[3].bytes);
    CU_ASSERT_EQUAL(tt_plan_touch(items, 4, items[2].offset + 63, 5), 2);
    CU_ASSERT_EQUAL(tt_plan_touch(items, 4, items[2].offset, 2), 2);
    CU_ASSERT_EQUAL(tt_plan_touch(items, 4, items[0].offset + 40, 7), 0);
    CU_ASSERT_EQUAL(tt_plan_touch(items, 4, items[0].offset + 100, 8), -1); /* just past a */
    CU_ASSERT_EQUAL(tt_plan_touch(items, 4, items[1].offset, 1), 1);
    CU_ASSERT_EQUAL(items[0].first, 7);
    CU_ASSERT_EQUAL(items[0].last, 7);
    CU_ASSERT_EQUAL(items[1].first, 1);
    CU_ASSERT_EQUAL(items[2].first, 2);
    CU_ASSERT_EQUAL(items[2].last, 5);
    CU_ASSERT_EQUAL(items[3].first, -1); /* never touched */
    CU_ASSERT_EQUAL(tt_plan_touch(items, 0, 0, 1), -1);
    tt_plan plan;
    TH_OK(tt_plan_solve(items, 4, 64, 1 << 20, &plan));
    CU_ASSERT(valid(items, 4, &plan, 1 << 20));
    CU_ASSERT_EQUAL(items[0].offset, items[2].offset); /* a (7) and c (2..5) never meet */
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dead memory is reused", test_reuse},
        {"nothing shared when all live", test_all_alive},
        {"the best of several orders", test_best_order},
        {"buffer cap splits the arena", test_buffer_cap},
        {"random plans never overlap", test_random_plans_are_valid},
        {"lives from a record of touches", test_lives_from_touches},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("plan", tests, TH_HOST);
}
