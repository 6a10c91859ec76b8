/* Vulkan buffers and transfers: one VkBuffer per tt_buffer, bound at its
 * place in a block of the buffer pool (vk_memory.c).  On devices that share
 * the host's memory (lavapipe, integrated GPUs) the blocks are host-visible
 * and stay mapped, and reads and writes are memcpy after the queued work
 * has run; elsewhere they are device-local and transfers go through a
 * staging buffer from the staging pool. */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/alloc.h"

/* A buffer of `bytes` placed in `pool` (mapped when the pool is). */
static tt_status make_buffer(tt_vk_backend *vk, tt_vk_pool *pool, size_t bytes,
                             VkBufferUsageFlags usage, tt_vk_buffer *out, const char *name)
{
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = bytes,
                               .usage = usage,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(vk->device, &info, NULL, &out->buffer);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateBuffer('%s')", name);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, out->buffer, &req);
    TT_TRY(tt_vk_memory_alloc(vk, pool, &req, &out->memory));
    r = vkBindBufferMemory(vk->device, out->buffer, out->memory.memory, out->memory.offset);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkBindBufferMemory('%s')", name);
    out->mapped = out->memory.mapped;
    if (usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT) { /* addressed shaders reach it */
        VkBufferDeviceAddressInfo where = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                           .buffer = out->buffer};
        out->address = vkGetBufferDeviceAddress(vk->device, &where);
    }
    return NULL;
}

static void free_buffer(tt_vk_backend *vk, tt_vk_buffer *b)
{
    if (b->buffer) vkDestroyBuffer(vk->device, b->buffer, NULL);
    tt_vk_memory_free(vk, &b->memory);
    b->buffer = VK_NULL_HANDLE;
    b->mapped = NULL;
}

tt_status tt_vk_buffer_create(tt_backend *backend, tt_buffer *buf)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_buffer *b = tt_calloc(1, sizeof *b);
    if (!b) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status status = make_buffer(vk, &vk->buffer_pool, tt_vk_storage_bytes(buf->bytes),
                                   tt_vk_buffer_usage(vk), b, buf->record.name);
    if (status) {
        free_buffer(vk, b);
        free(b);
        return status;
    }
    buf->handle = b;
    return NULL;
}

void tt_vk_buffer_release(tt_backend *backend, tt_buffer *buf)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_buffer *b = buf->handle;
    if (!b) return;
    /* queued work may still use it */
    tt_status_free(tt_vk_flush(vk, "freeing a buffer"));
    free_buffer(vk, b);
    free(b);
}

static tt_status record_copy(tt_vk_backend *vk, VkBuffer dst, size_t dst_offset, VkBuffer src,
                             size_t src_offset, size_t bytes)
{
    VkCommandBuffer commands;
    TT_TRY(tt_vk_record(vk, &commands));
    VkBufferCopy region = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = bytes};
    vkCmdCopyBuffer(commands, src, dst, 1, &region);
    return NULL;
}

/* A host-visible buffer of `bytes` for one transfer of a device-local one. */
static tt_status staging(tt_vk_backend *vk, size_t bytes, tt_vk_buffer *out)
{
    memset(out, 0, sizeof *out);
    tt_status s = make_buffer(vk, &vk->staging_pool, bytes, TT_VK_STAGING_USAGE, out, "staging");
    if (s) free_buffer(vk, out);
    return s;
}

tt_status tt_vk_write(tt_backend *backend, tt_mem dst, const void *src, size_t bytes)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_buffer *b = dst.buffer->handle;
    if (b->mapped) {
        /* queued work before the write may still read the old contents */
        TT_TRY(tt_vk_flush(vk, "writing to the device"));
        memcpy((char *)b->mapped + dst.offset, src, bytes);
        return NULL;
    }
    /* the copy is recorded after the queued work, as a command of its own:
     * one wait, for the staging buffer's sake */
    tt_vk_buffer stage;
    TT_TRY(staging(vk, bytes, &stage));
    memcpy(stage.mapped, src, bytes);
    tt_status status = record_copy(vk, b->buffer, dst.offset, stage.buffer, 0, bytes);
    if (!status) status = tt_vk_flush(vk, "writing to the device");
    free_buffer(vk, &stage);
    return status;
}

tt_status tt_vk_read(tt_backend *backend, void *dst, tt_mem src, size_t bytes)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_buffer *b = src.buffer->handle;
    if (b->mapped) {
        TT_TRY(tt_vk_flush(vk, "reading from the device"));
        memcpy(dst, (const char *)b->mapped + src.offset, bytes);
        return NULL;
    }
    tt_vk_buffer stage;
    TT_TRY(staging(vk, bytes, &stage));
    tt_status status = record_copy(vk, stage.buffer, 0, b->buffer, src.offset, bytes);
    if (!status) status = tt_vk_flush(vk, "reading from the device");
    if (!status) memcpy(dst, stage.mapped, bytes);
    free_buffer(vk, &stage);
    return status;
}

tt_status tt_vk_copy(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes)
{
    tt_vk_backend *vk = backend->impl;
    tt_vk_buffer *d = dst.buffer->handle, *s = src.buffer->handle;
    if (d == s && dst.offset < src.offset + bytes && src.offset < dst.offset + bytes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "copying within '%s': bytes %zu and %zu, %zu long, overlap",
                            dst.buffer->record.name, src.offset, dst.offset, bytes);
    return record_copy(vk, d->buffer, dst.offset, s->buffer, src.offset, bytes);
}

void tt_vk_memory_held(const tt_backend *backend, tt_memory_held *out)
{
    const tt_vk_backend *vk = backend->impl;
    out->current_bytes = vk->buffer_pool.held;
    out->peak_bytes = vk->buffer_pool.held_peak;
    out->blocks = vk->buffer_pool.block_count;
}
