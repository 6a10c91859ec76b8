/*
 * The memory type each kind of Vulkan buffer takes
 * (src/backend/vulkan/vk_memory_type.c), on the memory layouts drivers
 * report (as vulkan.gpuinfo.org lists them; the order of the types changed
 * where a driver could list them so): NVIDIA's two device-local types,
 * its uncached and cached host types and its BAR window; an AMD card's
 * BAR window listed first, with and without resizable BAR; an APU with a
 * small and a large carve-out; lavapipe's one type; and a driver that
 * allows a buffer only some types.
 */
#include "backend/vulkan/vk_memory_type.h"
#include "harness.h"

#define GIB (1024.0 * 1024 * 1024)
#define L VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define H (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
#define C VK_MEMORY_PROPERTY_HOST_CACHED_BIT

typedef struct layout {
    double heaps[4]; /* GiB; a heap is device-local when a device-local type is in it */
    struct {
        VkMemoryPropertyFlags flags;
        uint32_t heap;
    } types[12];
    int count;
} layout;

static VkPhysicalDeviceMemoryProperties props(const layout *l)
{
    VkPhysicalDeviceMemoryProperties m = {0};
    for (int h = 0; h < 4 && l->heaps[h] > 0; h++) {
        m.memoryHeaps[h].size = (VkDeviceSize)(l->heaps[h] * GIB);
        m.memoryHeapCount = (uint32_t)h + 1;
    }
    m.memoryTypeCount = (uint32_t)l->count;
    for (int i = 0; i < l->count; i++) {
        m.memoryTypes[i].propertyFlags = l->types[i].flags;
        m.memoryTypes[i].heapIndex = l->types[i].heap;
        if (l->types[i].flags & L)
            m.memoryHeaps[l->types[i].heap].flags |= VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    }
    return m;
}

static int pick(const layout *l, uint32_t allowed, tt_vk_memory_want want)
{
    VkPhysicalDeviceMemoryProperties m = props(l);
    return tt_vk_memory_type_pick(&m, allowed, want);
}

/* GTX 1080: seven types of no flags (images), two device-local, host
 * uncached then cached, and the 246 MiB BAR window. */
static void test_nvidia(void)
{
    layout l = {{8, 16, 0.24},
                {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1},
                 {L, 0}, {L, 0}, {H, 1}, {H | C, 1}, {L | H, 2}},
                12};
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_buffers), 7);
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_staging), 10); /* cached: reads are memcpy */
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_table), 11);   /* the BAR window: device memory */
    /* a driver that allows a storage buffer types 8 to 10 only */
    CU_ASSERT_EQUAL(pick(&l, 0x700u, tt_vk_want_buffers), 8);
    CU_ASSERT_EQUAL(pick(&l, 0x280u, tt_vk_want_staging), 9);
    CU_ASSERT_EQUAL(pick(&l, 0x280u, tt_vk_want_table), 9);
    CU_ASSERT_EQUAL(pick(&l, 0x7fu, tt_vk_want_buffers), -1); /* none allowed is device-local */
}

/* An 8 GiB Radeon without resizable BAR, the BAR window's type listed
 * first; then with it (the whole of VRAM host-visible). */
static void test_amd(void)
{
    layout l = {{0.25, 7.75, 16}, {{L | H, 0}, {L, 1}, {H, 2}, {H | C, 2}}, 4};
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_buffers), 1); /* VRAM, not the 256 MiB window */
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_staging), 3);
    CU_ASSERT_EQUAL(pick(&l, ~0u, tt_vk_want_table), 0);
    layout rebar = {{8, 16}, {{L | H, 0}, {L, 0}, {H, 1}, {H | C, 1}}, 4};
    CU_ASSERT_EQUAL(pick(&rebar, ~0u, tt_vk_want_buffers), 1); /* not host-visible: the fast one */
    CU_ASSERT_EQUAL(pick(&rebar, ~0u, tt_vk_want_staging), 3);
    CU_ASSERT_EQUAL(pick(&rebar, ~0u, tt_vk_want_table), 0);
}

/* An APU: a 512 MiB carve-out beside 14 GiB of GTT takes none of the
 * buffers (the cached GTT type does); a 4 GiB one beside 12 does. */
static void test_apu(void)
{
    layout small = {{0.5, 14}, {{L, 0}, {H, 1}, {L | H, 0}, {H | C, 1}}, 4};
    CU_ASSERT_EQUAL(pick(&small, ~0u, tt_vk_want_shared), 3);
    layout large = {{4, 12}, {{L, 0}, {H, 1}, {L | H, 0}, {H | C, 1}}, 4};
    CU_ASSERT_EQUAL(pick(&large, ~0u, tt_vk_want_shared), 2);
}

/* lavapipe: one type with every flag, for every kind. */
static void test_lavapipe(void)
{
    layout l = {{23}, {{L | H | C, 0}}, 1};
    CU_ASSERT_EQUAL(pick(&l, 1u, tt_vk_want_shared), 0);
    CU_ASSERT_EQUAL(pick(&l, 1u, tt_vk_want_buffers), 0);
    CU_ASSERT_EQUAL(pick(&l, 1u, tt_vk_want_staging), 0);
    CU_ASSERT_EQUAL(pick(&l, 1u, tt_vk_want_table), 0);
    CU_ASSERT_EQUAL(pick(&l, 0u, tt_vk_want_shared), -1); /* nothing allowed */
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"NVIDIA: device-local buffers, cached staging, the table in the BAR", test_nvidia},
        {"AMD: VRAM, not the BAR window listed first; with resizable BAR", test_amd},
        {"an APU: the carve-out where it is large enough", test_apu},
        {"lavapipe: its one type", test_lavapipe},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("vulkan_memory_type", tests, TH_HOST);
}
