/* The table of buffer addresses that addressed dispatches read (binding
 * TT_VK_ADDRESS_BINDING of the <kernel>.addressed shaders,
 * shaders/common.glsl): one host-visible, coherent, mapped buffer of
 * TT_VK_BATCH slots per frame of the ring, slot f TT_VK_BATCH + k for the
 * dispatch whose descriptor set is the k-th of frame f.  A frame's batch
 * is waited for before its descriptor pool is reset (vk_commands.c), so a
 * slot is rewritten only when no queued work reads it, and the table
 * cannot fill up: it has a slot for every descriptor set the pools hold.
 * Made on the first addressed dispatch (64 KiB a frame; not in the memory
 * accounting). */
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "backend/vulkan/vk_memory_type.h"

/* Bytes of one slot: an address per binding, at an offset a descriptor may
 * start at (minStorageBufferOffsetAlignment is at most 256). */
static VkDeviceSize slot_bytes(const tt_vk_backend *vk)
{
    VkDeviceSize align = vk->properties.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize bytes = TT_VK_MAX_BINDINGS * sizeof(VkDeviceAddress);
    if (align > 1) bytes = (bytes + align - 1) / align * align;
    return bytes;
}

static tt_status make_table(tt_vk_backend *vk)
{
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = slot_bytes(vk) * TT_VK_BATCH * TT_VK_FRAMES,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(vk->device, &info, NULL, &vk->address_ring);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateBuffer(address table)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, vk->address_ring, &req);
    /* the device reads it in every dispatch: its own memory where the host
     * can write that (a BAR window, an integrated GPU's) */
    int type = tt_vk_memory_type_pick(&vk->memory, req.memoryTypeBits, tt_vk_want_table);
    if (type < 0)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "the Vulkan device has no host-visible memory for the table of "
                            "buffer addresses");
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = (uint32_t)type};
    r = vkAllocateMemory(vk->device, &alloc, NULL, &vk->address_memory);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(vk->device, vk->address_ring, vk->address_memory, 0);
    if (r == VK_SUCCESS)
        r = vkMapMemory(vk->device, vk->address_memory, 0, VK_WHOLE_SIZE, 0, &vk->address_mapped);
    if (r != VK_SUCCESS) return tt_error_vk(r, "allocating the address table");
    return NULL;
}

tt_status tt_vk_address_slot(tt_vk_backend *vk, int slot, const VkDeviceAddress *addresses,
                             int count, VkDescriptorBufferInfo *out)
{
    TT_ASSERT(count > 0 && count <= TT_VK_MAX_BINDINGS);
    if (slot < 0 || slot >= TT_VK_BATCH * TT_VK_FRAMES)
        return tt_error_new(TT_ERR_INTERNAL,
                            "address table: slot %d of %d (the batch outgrew the table)", slot,
                            TT_VK_BATCH * TT_VK_FRAMES);
    if (!vk->address_mapped) {
        tt_status s = make_table(vk);
        if (s) {
            tt_vk_addresses_release(vk);
            return s;
        }
    }
    VkDeviceSize at = slot_bytes(vk) * (VkDeviceSize)slot;
    memcpy((char *)vk->address_mapped + at, addresses, (size_t)count * sizeof *addresses);
    *out = (VkDescriptorBufferInfo){vk->address_ring, at,
                                    (VkDeviceSize)count * sizeof *addresses};
    return NULL;
}

void tt_vk_addresses_release(tt_vk_backend *vk)
{
    if (vk->address_memory) vkFreeMemory(vk->device, vk->address_memory, NULL); /* unmaps */
    if (vk->address_ring) vkDestroyBuffer(vk->device, vk->address_ring, NULL);
    vk->address_memory = VK_NULL_HANDLE;
    vk->address_ring = VK_NULL_HANDLE;
    vk->address_mapped = NULL;
}
