/*
 * The default device and the selector's rules (src/backend/device_match.c)
 * on made-up device lists: a discrete GPU before an integrated one (a
 * laptop's iGPU listed first, an APU beside a Radeon), then the most
 * memory, GPUs before CPUs; across the two APIs the better default wins,
 * a tie (the same card on both, CPUs only) going to OpenCL; a selector
 * still names any device by index or part of a name.
 */
#include <string.h>

#include "backend/device_match.h"
#include "harness.h"

static tt_device_info dev(const char *name, const char *type, int integrated, double gib)
{
    tt_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.type, sizeof d.type, "%s", type);
    d.integrated = integrated;
    d.global_mem_bytes = (uint64_t)(gib * 1073741824.0);
    return d;
}

static void test_ranks(void)
{
    tt_device_info d = dev("Radeon RX 6600", "GPU", 0, 8), i = dev("Intel UHD 620", "GPU", 1, 12);
    tt_device_info c = dev("pthread-AMD EPYC", "CPU", 0, 24);
    CU_ASSERT_EQUAL(tt_device_rank(&d), 3);
    CU_ASSERT_EQUAL(tt_device_rank(&i), 2);
    CU_ASSERT_EQUAL(tt_device_rank(&c), 1);
}

static void test_default_in_a_list(void)
{
    /* a laptop: the iGPU enumerated first, with more (shared) memory */
    tt_device_info laptop[] = {dev("Intel Iris Xe", "GPU", 1, 16), dev("GeForce GTX 1650", "GPU", 0, 4)};
    CU_ASSERT_EQUAL(tt_device_default(laptop, 2), 1);
    CU_ASSERT_EQUAL(tt_device_match(laptop, 2, NULL, 0), 1);
    CU_ASSERT_EQUAL(tt_device_match(laptop, 2, "", 0), 1);
    /* two discrete cards: the bigger; the same size: the first */
    tt_device_info two[] = {dev("RX 580", "GPU", 0, 4), dev("RX 6800", "GPU", 0, 16),
                            dev("RX 6800 again", "GPU", 0, 16)};
    CU_ASSERT_EQUAL(tt_device_default(two, 3), 1);
    /* a CPU before a GPU; CPUs alone: the first */
    tt_device_info mixed[] = {dev("PoCL", "CPU", 0, 64), dev("Radeon Vega 8", "GPU", 1, 2)};
    CU_ASSERT_EQUAL(tt_device_default(mixed, 2), 1);
    tt_device_info cpus[] = {dev("PoCL", "CPU", 0, 24), dev("other", "OTHER", 0, 32)};
    CU_ASSERT_EQUAL(tt_device_default(cpus, 2), 1); /* same rank: the most memory */
    CU_ASSERT_EQUAL(tt_device_default(cpus, 0), -1);
    /* a selector names any of them */
    CU_ASSERT_EQUAL(tt_device_match(laptop, 2, "0", 0), 0);
    CU_ASSERT_EQUAL(tt_device_match(laptop, 2, "iris", 0), 0);
    CU_ASSERT_EQUAL(tt_device_match(laptop, 2, "nothing", 0), -1);
}

static void test_default_across_apis(void)
{
    /* OpenCL sees the iGPU alone (Intel's runtime), Vulkan the discrete card too */
    tt_device_info cl[] = {dev("Intel UHD 630", "GPU", 1, 12)};
    tt_device_info vk[] = {dev("Intel UHD 630", "GPU", 1, 12), dev("GeForce GTX 1060", "GPU", 0, 6)};
    CU_ASSERT(tt_device_default_better(vk, 2, cl, 1));
    CU_ASSERT(!tt_device_default_better(cl, 1, vk, 2));
    /* the same card on both: OpenCL (the tie goes to the list given second) */
    tt_device_info same_cl[] = {dev("RX 6600", "GPU", 0, 8)}, same_vk[] = {dev("RX 6600", "GPU", 0, 8)};
    CU_ASSERT(!tt_device_default_better(same_vk, 1, same_cl, 1));
    /* CPUs on both (PoCL, lavapipe): OpenCL whatever their memory */
    tt_device_info pocl[] = {dev("PoCL", "CPU", 0, 2)}, lvp[] = {dev("llvmpipe", "CPU", 0, 24)};
    CU_ASSERT(!tt_device_default_better(lvp, 1, pocl, 1));
    /* a GPU on one side only: that side; nothing on one side: the other */
    CU_ASSERT(tt_device_default_better(same_vk, 1, pocl, 1));
    CU_ASSERT(tt_device_default_better(lvp, 1, NULL, 0));
    CU_ASSERT(!tt_device_default_better(NULL, 0, pocl, 1));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"ranks: discrete GPU, integrated GPU, the rest", test_ranks},
        {"the default in one list; selectors", test_default_in_a_list},
        {"the default across OpenCL and Vulkan", test_default_across_apis},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("device_match", tests, TH_HOST);
}
