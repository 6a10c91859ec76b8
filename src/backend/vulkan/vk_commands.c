/* The Vulkan backend's ring of TT_VK_FRAMES command buffers: transfers and
 * dispatches are recorded into the current one with a global memory
 * barrier between each two, and one at its start while an earlier one is
 * in flight (a barrier's first scope is every command submitted before it
 * on the queue, so every command may depend on the one before, as in an
 * in-order OpenCL queue).  When TT_VK_BATCH dispatches have used up its
 * descriptor pool it is submitted without waiting, and the host records
 * into the next frame, waiting only for that frame's own earlier batch:
 * the device runs one batch while the host records the next.  A read, a
 * write to mapped memory, a buffer's release and finish submit and wait
 * for everything in flight.  With profiling, every batch is waited for
 * and the timestamps of its dispatches read back (vk_profile.c). */
#include "backend/vulkan/vk_internal.h"

#include <stdio.h>

#include "core/fault.h"

tt_status tt_vk_commands_create(tt_vk_backend *vk)
{
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = vk->queue_family};
    VkResult r = vkCreateCommandPool(vk->device, &pool, NULL, &vk->command_pool);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateCommandPool");
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                 TT_VK_BATCH * TT_VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo descriptors = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = TT_VK_BATCH,
        .poolSizeCount = 1,
        .pPoolSizes = &size};
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int f = 0; f < TT_VK_FRAMES; f++) {
        struct tt_vk_frame *frame = &vk->frames[f];
        VkCommandBufferAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = vk->command_pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1};
        r = vkAllocateCommandBuffers(vk->device, &alloc, &frame->commands);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkAllocateCommandBuffers");
        r = vkCreateFence(vk->device, &fence, NULL, &frame->fence);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateFence");
        r = vkCreateDescriptorPool(vk->device, &descriptors, NULL, &frame->descriptors);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateDescriptorPool");
    }
    vk->frame = 0;
    return NULL;
}

void tt_vk_commands_destroy(tt_vk_backend *vk)
{
    if (!vk->device) return;
    for (int f = 0; f < TT_VK_FRAMES; f++) {
        struct tt_vk_frame *frame = &vk->frames[f];
        if (frame->descriptors) vkDestroyDescriptorPool(vk->device, frame->descriptors, NULL);
        if (frame->fence) vkDestroyFence(vk->device, frame->fence, NULL);
        *frame = (struct tt_vk_frame){0};
    }
    if (vk->command_pool) vkDestroyCommandPool(vk->device, vk->command_pool, NULL);
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

/* Whether a frame's batch is in flight. */
static int in_flight(const tt_vk_backend *vk)
{
    for (int f = 0; f < TT_VK_FRAMES; f++)
        if (vk->frames[f].submitted) return 1;
    return 0;
}

tt_status tt_vk_record(tt_vk_backend *vk, VkCommandBuffer *out)
{
    VkCommandBuffer commands = vk->frames[vk->frame].commands;
    if (!vk->recording) {
        VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                          .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkResult r = vkBeginCommandBuffer(commands, &begin);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkBeginCommandBuffer");
        vk->recording = 1;
        /* after the batches in flight, as after a command of this one */
        vk->recorded = in_flight(vk);
        tt_vk_profile_restart(vk);
    }
    if (vk->recorded)
        barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    vk->recorded++;
    *out = commands;
    return NULL;
}

/* Marks the device lost by `call` (made while `during`; `injected`: by
 * TT_FAULT), so that every later call's error says where it was lost. */
static void lose(tt_vk_backend *vk, const char *call, const char *during, int injected)
{
    vk->lost = 1;
    snprintf(vk->lost_at, sizeof vk->lost_at, "%s (%s)%s", call, during,
             injected ? " (TT_FAULT)" : "");
}

/* The error of a call made while `during` on a device lost earlier. */
static tt_status lost(const tt_vk_backend *vk, const char *during)
{
    return tt_error_vk(VK_ERROR_DEVICE_LOST, "%s: not run, the device having been lost at %s",
                       during, vk->lost_at);
}

/* Waits for frame `f`'s batch where it is in flight, and makes the frame
 * ready to record again: its fence, command buffer and descriptor pool. */
static tt_status retire(tt_vk_backend *vk, int f, const char *during)
{
    struct tt_vk_frame *frame = &vk->frames[f];
    if (!frame->submitted) return NULL;
    frame->submitted = 0;
    VkResult r = vkWaitForFences(vk->device, 1, &frame->fence, VK_TRUE, UINT64_MAX);
    if (r == VK_ERROR_DEVICE_LOST) lose(vk, "vkWaitForFences", during, 0);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkWaitForFences (%s)", during);
    r = vkResetFences(vk->device, 1, &frame->fence);
    if (r == VK_SUCCESS) r = vkResetCommandBuffer(frame->commands, 0);
    if (r != VK_SUCCESS) return tt_error_vk(r, "resetting the command buffer (%s)", during);
    r = vkResetDescriptorPool(vk->device, frame->descriptors, 0);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkResetDescriptorPool (%s)", during);
    return NULL;
}

/* Submits the current frame's commands, waiting for nothing, and moves to
 * the next frame, once that one's own batch has completed.  A lost device
 * stays lost: every later submission fails too, so that an error dropped
 * on the way (a buffer's release cannot return one) is met again at the
 * next read, never read past. */
static tt_status submit(tt_vk_backend *vk, const char *during)
{
    struct tt_vk_frame *frame = &vk->frames[vk->frame];
    if (vk->lost) return lost(vk, during);
    if (vk->recording) {
        barrier(frame->commands, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        vk->recording = 0;
        VkResult r = vkEndCommandBuffer(frame->commands);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkEndCommandBuffer (%s)", during);
        VkSubmitInfo info = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &frame->commands};
        int injected = tt_fault_hit(TT_FAULT_SUBMIT); /* a test's lost device */
        r = injected ? VK_ERROR_DEVICE_LOST : vkQueueSubmit(vk->queue, 1, &info, frame->fence);
        if (r == VK_ERROR_DEVICE_LOST) lose(vk, "vkQueueSubmit", during, injected);
        if (r != VK_SUCCESS)
            return tt_error_vk(r, "vkQueueSubmit (%s)%s", during, injected ? " (TT_FAULT)" : "");
        frame->submitted = 1;
    } else if (vk->dispatches) { /* sets allocated, nothing recorded: recycle them */
        VkResult r = vkResetDescriptorPool(vk->device, frame->descriptors, 0);
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkResetDescriptorPool (%s)", during);
    }
    vk->dispatches = 0;
    vk->frame = (vk->frame + 1) % TT_VK_FRAMES;
    return retire(vk, vk->frame, during);
}

tt_status tt_vk_descriptor_set(tt_vk_backend *vk, VkDescriptorSetLayout layout,
                               VkDescriptorSet *out)
{
    if (vk->dispatches >= TT_VK_BATCH)
        TT_TRY(vk->profiler.pool ? tt_vk_flush(vk, "a batch of dispatches")
                                 : submit(vk, "a batch of dispatches"));
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = vk->frames[vk->frame].descriptors,
                                         .descriptorSetCount = 1,
                                         .pSetLayouts = &layout};
    VkResult r = vkAllocateDescriptorSets(vk->device, &alloc, out);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkAllocateDescriptorSets");
    vk->dispatches++;
    return NULL;
}

tt_status tt_vk_flush(tt_vk_backend *vk, const char *during)
{
    if (vk->lost) return lost(vk, during);
    if (vk->recording || vk->dispatches || in_flight(vk)) {
        int profiled = vk->recording; /* the timestamps are this batch's */
        TT_TRY(submit(vk, during));
        for (int i = 0; i < TT_VK_FRAMES; i++) /* oldest first */
            TT_TRY(retire(vk, (vk->frame + i) % TT_VK_FRAMES, during));
        if (profiled) TT_TRY(tt_vk_profile_collect(vk, during)); /* they ran */
    }
    return tt_vk_messages_check(&vk->messages, during);
}
