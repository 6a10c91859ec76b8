/*
 * Profiling on the Vulkan backend: device time per dispatch from timestamp
 * queries, into backend->profile under the same kinds as OpenCL's
 * profiling events (backend/profile.h).
 *
 * Every dispatch of the recorded command buffer is framed by two
 * vkCmdWriteTimestamp at the compute-shader stage: the first is written
 * once every earlier command finished that stage (the barrier before the
 * dispatch waits for them anyway), the second once this dispatch did.
 * The pair is reset in the same command buffer just before (query commands
 * run in submission order), so a query is never written twice without a
 * reset, and the pool is sized for the most dispatches one submission
 * holds (TT_VK_BATCH, bounded by the descriptor pool).  The commands are
 * still submitted only when a read, a write, finish or a full batch needs
 * it; the queries are read back then, after the fence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/profile.h"
#include "backend/vulkan/vk_internal.h"
#include "core/alloc.h"

tt_status tt_vk_timestamps_check(const char *device, uint32_t valid_bits, float period)
{
    if (valid_bits == 0)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "Vulkan device '%s': its compute queue has no timestamps "
                            "(timestampValidBits 0), so it cannot profile (bench, "
                            "device time per kind); run without profiling or with --backend "
                            "opencl",
                            device);
    if (!(period > 0.0f) || !isfinite(period))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "Vulkan device '%s' gives no timestamp period (%g ns per tick), so "
                            "it cannot profile; run without profiling or with --backend opencl",
                            device, (double)period);
    return NULL;
}

tt_status tt_vk_profile_create(tt_vk_backend *vk, const char *device, tt_profile *profile)
{
    tt_vk_profiler *p = &vk->profiler;
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &families, NULL);
    VkQueueFamilyProperties *props = tt_calloc(families ? families : 1, sizeof *props);
    if (!props) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "profiling: out of host memory");
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &families, props);
    uint32_t bits = vk->queue_family < families ? props[vk->queue_family].timestampValidBits : 0;
    free(props);
    TT_TRY(tt_vk_timestamps_check(device, bits, vk->properties.limits.timestampPeriod));
    p->ns_per_tick = (double)vk->properties.limits.timestampPeriod;
    p->valid_mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    p->capacity = 2 * TT_VK_BATCH;
    p->kinds = tt_calloc(p->capacity / 2, sizeof *p->kinds);
    p->ticks = tt_calloc(p->capacity, sizeof *p->ticks);
    if (!p->kinds || !p->ticks) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "profiling: out of host memory");
    VkQueryPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                  .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                  .queryCount = p->capacity};
    VkResult r = vkCreateQueryPool(vk->device, &info, NULL, &p->pool);
    if (r != VK_SUCCESS) {
        p->pool = VK_NULL_HANDLE;
        return tt_error_vk(r, "vkCreateQueryPool (%u timestamps, for profiling)", p->capacity);
    }
    p->profile = profile;
    p->used = 0;
    return NULL;
}

void tt_vk_profile_destroy(tt_vk_backend *vk)
{
    tt_vk_profiler *p = &vk->profiler;
    if (p->pool && vk->device) vkDestroyQueryPool(vk->device, p->pool, NULL);
    free(p->kinds);
    free(p->ticks);
    *p = (tt_vk_profiler){0};
}

void tt_vk_profile_restart(tt_vk_backend *vk)
{
    vk->profiler.used = 0; /* the queries of a discarded command buffer are never read */
}

int tt_vk_profile_before(tt_backend *backend, VkCommandBuffer commands, const char *program,
                         const char *kernel)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_profiler *p = &vk->profiler;
    if (!p->pool) return -1;
    /* one pair per descriptor set, and a submission holds at most
     * TT_VK_BATCH of those */
    TT_ASSERT(p->used + 2 <= p->capacity);
    int slot = (int)(p->used / 2);
    tt_profile_kind(backend, program, kernel, p->kinds[slot]);
    vkCmdResetQueryPool(commands, p->pool, p->used, 2);
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, p->pool, p->used);
    p->used += 2;
    return slot;
}

void tt_vk_profile_after(tt_vk_backend *vk, VkCommandBuffer commands, int slot)
{
    if (slot < 0) return;
    vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk->profiler.pool,
                        2 * (uint32_t)slot + 1);
}

tt_status tt_vk_profile_collect(tt_vk_backend *vk, const char *during)
{
    tt_vk_profiler *p = &vk->profiler;
    uint32_t used = p->used;
    p->used = 0;
    if (!p->pool || !used) return NULL;
    VkResult r = vkGetQueryPoolResults(vk->device, p->pool, 0, used, sizeof *p->ticks * used,
                                       p->ticks, sizeof *p->ticks,
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
        return tt_error_vk(r, "vkGetQueryPoolResults (the timestamps of %u dispatches, %s)",
                           used / 2, during);
    for (uint32_t i = 0; i + 1 < used; i += 2) {
        uint64_t ticks = (p->ticks[i + 1] - p->ticks[i]) & p->valid_mask;
        tt_profile_add(p->profile, p->kinds[i / 2], 1e-9 * p->ns_per_tick * (double)ticks);
    }
    return NULL;
}
