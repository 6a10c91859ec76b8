/* Choosing a Vulkan memory type; see vk_memory_type.h. */
#include "backend/vulkan/vk_memory_type.h"

#define HOST (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
#define LOCAL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define CACHED VK_MEMORY_PROPERTY_HOST_CACHED_BIT

const tt_vk_memory_want tt_vk_want_buffers = {LOCAL, 0, 0, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 1};
const tt_vk_memory_want tt_vk_want_staging = {HOST, CACHED, 0, LOCAL, 1};
const tt_vk_memory_want tt_vk_want_shared = {HOST, LOCAL, CACHED, 0, 1};
const tt_vk_memory_want tt_vk_want_table = {HOST, LOCAL, 0, 0, 0};

static int bits(VkMemoryPropertyFlags f)
{
    int n = 0;
    for (; f; f &= f - 1) n++;
    return n;
}

static VkDeviceSize heap_of(const VkPhysicalDeviceMemoryProperties *m, uint32_t type)
{
    uint32_t heap = m->memoryTypes[type].heapIndex;
    return heap < m->memoryHeapCount ? m->memoryHeaps[heap].size : 0;
}

int tt_vk_memory_type_pick(const VkPhysicalDeviceMemoryProperties *memory, uint32_t allowed,
                           tt_vk_memory_want want)
{
    uint32_t count = memory->memoryTypeCount < VK_MAX_MEMORY_TYPES ? memory->memoryTypeCount
                                                                   : VK_MAX_MEMORY_TYPES;
    VkDeviceSize largest = 0;
    for (uint32_t i = 0; i < count; i++) {
        VkMemoryPropertyFlags f = memory->memoryTypes[i].propertyFlags;
        if ((allowed >> i & 1) && (f & want.required) == want.required && heap_of(memory, i) > largest)
            largest = heap_of(memory, i);
    }
    int best = -1;
    long best_score = 0;
    VkDeviceSize best_heap = 0;
    for (uint32_t i = 0; i < count; i++) {
        VkMemoryPropertyFlags f = memory->memoryTypes[i].propertyFlags;
        if (!(allowed >> i & 1) || (f & want.required) != want.required) continue;
        VkDeviceSize heap = heap_of(memory, i);
        long score = (want.room && heap >= largest / 4 ? 1000 : 0) +
                     100 * bits(f & want.preferred) + 10 * bits(f & want.then) -
                     bits(f & want.avoided);
        if (best < 0 || score > best_score || (score == best_score && heap > best_heap))
            best = (int)i, best_score = score, best_heap = heap;
    }
    return best;
}
