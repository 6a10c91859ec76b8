/* The Vulkan backend's one command buffer: transfers and dispatches are
 * recorded into it with a global memory barrier between each two (every
 * command may depend on the one before, as in an in-order OpenCL queue),
 * and submitted when a read, a write or finish needs the results, or when
 * TT_VK_BATCH dispatches have used up the descriptor pool.  With profiling,
 * the timestamps of the dispatches are read back after each submission
 * (vk_profile.c). */
#include "backend/vulkan/vk_internal.h"

tt_status tt_vk_commands_create(tt_vk_backend *vk)
{
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = vk->queue_family};
    VkResult r = vkCreateCommandPool(vk->device, &pool, NULL, &vk->command_pool);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = vk->command_pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
    r = vkAllocateCommandBuffers(vk->device, &alloc, &vk->commands);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = vkCreateFence(vk->device, &fence, NULL, &vk->fence);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateFence");
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                 TT_VK_BATCH * TT_VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo descriptors = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = TT_VK_BATCH,
        .poolSizeCount = 1,
        .pPoolSizes = &size};
    r = vkCreateDescriptorPool(vk->device, &descriptors, NULL, &vk->descriptors);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateDescriptorPool");
    return NULL;
}

void tt_vk_commands_destroy(tt_vk_backend *vk)
{
    if (!vk->device) return;
    if (vk->descriptors) vkDestroyDescriptorPool(vk->device, vk->descriptors, NULL);
    if (vk->fence) vkDestroyFence(vk->device, vk->fence, NULL);
    if (vk->command_pool) vkDestroyCommandPool(vk->device, vk->command_pool, NULL);
    vk->descriptors = VK_NULL_HANDLE;
    vk->fence = VK_NULL_HANDLE;
    vk->command_pool = VK_NULL_HANDLE;
}

/* Every earlier transfer and shader write is visible to every later
 * transfer and shader access (and, at the end, to the host). */
static void barrier(VkCommandBuffer commands, VkPipelineStageFlags to, VkAccessFlags access)
{
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                         .dstAccessMask = access};
    vkCmdPipelineBarrier(commands,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, to,
                         0, 1, &b, 0, NULL, 0, NULL);
}

tt_status tt_vk_record(tt_vk_backend *vk, VkCommandBuffer *out)
{
    if (!vk->recording) {
        VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                          .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkResult r = vkBeginCommandBuffer(vk->commands, &begin);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkBeginCommandBuffer");
        vk->recording = 1;
        vk->recorded = 0;
        tt_vk_profile_restart(vk);
    }
    if (vk->recorded)
        barrier(vk->commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    vk->recorded++;
    *out = vk->commands;
    return NULL;
}

tt_status tt_vk_descriptor_set(tt_vk_backend *vk, VkDescriptorSetLayout layout,
                               VkDescriptorSet *out)
{
    if (vk->dispatches >= TT_VK_BATCH) TT_TRY(tt_vk_flush(vk, "a batch of dispatches"));
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = vk->descriptors,
                                         .descriptorSetCount = 1,
                                         .pSetLayouts = &layout};
    VkResult r = vkAllocateDescriptorSets(vk->device, &alloc, out);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkAllocateDescriptorSets");
    vk->dispatches++;
    return NULL;
}

tt_status tt_vk_flush(tt_vk_backend *vk, const char *during)
{
    if (vk->recording) {
        barrier(vk->commands, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        vk->recording = 0;
        VkResult r = vkEndCommandBuffer(vk->commands);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkEndCommandBuffer (%s)", during);
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                               .commandBufferCount = 1,
                               .pCommandBuffers = &vk->commands};
        r = vkQueueSubmit(vk->queue, 1, &submit, vk->fence);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkQueueSubmit (%s)", during);
        r = vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkWaitForFences (%s)", during);
        r = vkResetFences(vk->device, 1, &vk->fence);
        if (r == VK_SUCCESS) r = vkResetCommandBuffer(vk->commands, 0);
        if (r != VK_SUCCESS) return tt_error_vk(r, "resetting the command buffer (%s)", during);
        TT_TRY(tt_vk_profile_collect(vk, during)); /* the commands ran: their timestamps */
    }
    if (vk->dispatches) {
        VkResult r = vkResetDescriptorPool(vk->device, vk->descriptors, 0);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkResetDescriptorPool (%s)", during);
        vk->dispatches = 0;
    }
    return tt_vk_messages_check(&vk->messages, during);
}
