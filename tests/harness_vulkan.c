/* The validation messages of a Vulkan backend; see harness_vulkan.h. */
#include "harness_vulkan.h"

#include "backend/vulkan/vk_internal.h"

int th_vulkan_messages(const tt_backend *be, uint64_t *count, const char **first)
{
    if (be->kernels_of != TT_BACKEND_VULKAN || be->ops->runs_nothing) return -1;
    const tt_vk_messages *m = &((const tt_vk_backend *)be->impl)->messages;
    *count = m->count;
    *first = m->first;
    return m->enabled;
}
