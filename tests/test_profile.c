/*
 * The device-time table that bench and train --profile print
 * (src/backend/profile.c), on its own: kinds keep the order of their first
 * launch and sum their seconds and launches; once the table is full, the
 * kinds past it count together under its last kind, "(other kinds)", and
 * the total keeps every launch (a ResNet-34 UNet's step runs more kernels
 * than the table once held, and their time went missing).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/profile.h"
#include "harness.h"

static void test_kinds_and_sums(void)
{
    tt_profile *p = calloc(1, sizeof *p);
    CU_ASSERT_FATAL(p != NULL);
    tt_profile_add(p, "forward/conv", 0.5);
    tt_profile_add(p, "forward/norm", 0.25);
    tt_profile_add(p, "forward/conv", 1.0);
    CU_ASSERT_EQUAL(p->count, 2);
    CU_ASSERT_STRING_EQUAL(p->kind[0], "forward/conv");
    CU_ASSERT_STRING_EQUAL(p->kind[1], "forward/norm");
    CU_ASSERT_EQUAL(p->launches[0], 2);
    CU_ASSERT(fabs(p->seconds[0] - 1.5) < 1e-12);
    CU_ASSERT(fabs(tt_profile_seconds(p) - 1.75) < 1e-12);
    free(p);
}

static void test_full_table(void)
{
    tt_profile *p = calloc(1, sizeof *p);
    CU_ASSERT_FATAL(p != NULL);
    const int extra = 7, kinds = TT_PROFILE_MAX_KINDS + extra;
    char name[64];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < kinds; i++) {
            snprintf(name, sizeof name, "backward/kernel_%d", i);
            tt_profile_add(p, name, 0.001 * (i + 1));
        }
    CU_ASSERT_EQUAL(p->count, TT_PROFILE_MAX_KINDS);
    int last = TT_PROFILE_MAX_KINDS - 1;
    snprintf(name, sizeof name, "backward/kernel_%d", last - 1);
    CU_ASSERT_STRING_EQUAL(p->kind[last - 1], name);
    CU_ASSERT_EQUAL(p->launches[last - 1], 2);
    CU_ASSERT_STRING_EQUAL(p->kind[last], TT_PROFILE_OTHER_KINDS);
    CU_ASSERT_EQUAL(p->launches[last], 2 * (extra + 1));
    double want = 0, others = 0;
    for (int i = 0; i < kinds; i++) want += 2 * 0.001 * (i + 1);
    for (int i = last; i < kinds; i++) others += 2 * 0.001 * (i + 1);
    CU_ASSERT(fabs(tt_profile_seconds(p) - want) < 1e-9);
    CU_ASSERT(fabs(p->seconds[last] - others) < 1e-9);
    free(p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"kinds in order of first launch, seconds and launches summed", test_kinds_and_sums},
        {"a full table: the rest under (other kinds), nothing lost", test_full_table},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("profile", tests, TH_HOST);
}
