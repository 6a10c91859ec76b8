/*
 * Which Vulkan memory type a kind of buffer goes in, from what the driver
 * allows for the buffer (its memoryTypeBits) and the property flags the
 * kind requires, prefers and avoids.  Drivers list their types in no
 * promised order: NVIDIA's first device-local type is not the only one, an
 * AMD card's 256 MiB BAR window is device-local and host-visible, an APU's
 * device-local carve-out can be a fraction of the memory the GTT heap
 * holds, and a readback from an uncached (write-combined) type crawls.
 */
#ifndef TT_BACKEND_VULKAN_MEMORY_TYPE_H
#define TT_BACKEND_VULKAN_MEMORY_TYPE_H

#include <vulkan/vulkan.h>

typedef struct tt_vk_memory_want {
    VkMemoryPropertyFlags required;  /* every one of these */
    VkMemoryPropertyFlags preferred; /* as many of these as can be */
    VkMemoryPropertyFlags then;      /* and of these, as a lesser wish */
    VkMemoryPropertyFlags avoided;   /* as few of these as can be */
    int room;                        /* a pool: not a heap far smaller than the largest */
} tt_vk_memory_want;

/* The memory type among `allowed` (a bit per type) with every required
 * flag; of those, for a pool (`room`), one whose heap holds at least a
 * quarter of the largest such heap (a BAR window or carve-out does not
 * take the buffers of a device with a larger heap); then the most
 * preferred flags, the most of `then`, the fewest avoided, the larger
 * heap, the lower index.  -1 when none has the required flags. */
int tt_vk_memory_type_pick(const VkPhysicalDeviceMemoryProperties *memory, uint32_t allowed,
                           tt_vk_memory_want want);

/* What each kind wants.  Buffers on a device with memory of its own:
 * device-local, not host-visible.  Staging for that device's transfers:
 * host-visible and coherent, cached (reads are memcpy from it), not the
 * device's memory.  Buffers on a device that shares the host's memory
 * (mapped): host-visible and coherent, device-local where a type is (an
 * APU's carve-out), then cached.  A table the device reads in every
 * dispatch and the host writes: host-visible and coherent, device-local
 * where it can be (a BAR window). */
extern const tt_vk_memory_want tt_vk_want_buffers, tt_vk_want_staging, tt_vk_want_shared,
    tt_vk_want_table;

#endif
