/*
 * One tt_launch on the Vulkan backend (docs/backend.md, "Vulkan"):
 * - the k-th TT_ARG_MEM is placed at the largest offset at or below the
 *   tensor that meets minStorageBufferOffsetAlignment (and 4 bytes); the
 *   tensor's remaining byte offset from there is a uint push constant;
 * - where every buffer argument's rest of its buffer from that place fits
 *   maxStorageBufferRange, the bound variant of the shader runs, the k-th
 *   argument storage-buffer binding k over that rest; else, on a device with
 *   buffer device addresses, the addressed variant (<kernel>.addressed),
 *   whose table at TT_VK_ADDRESS_BINDING holds each argument's buffer
 *   address plus the same offset (vk_address.c); else an error naming the
 *   argument.  TT_VULKAN_ADDRESSED=1 picks the addressed variant always;
 * - the push constants mirror the arguments in order: a uint per buffer,
 *   int and float scalars (4 bytes), uint64 scalars (8 bytes, 8-aligned);
 *   128 bytes at most;
 * - the k-th TT_ARG_LOCAL becomes the specialization constant TT_LOCAL<k>
 *   (its size in 32-bit words);
 * - `local` (else 64 x 1 x 1) is the work-group size, and `global` is
 *   rounded up to whole work-groups; a 1-D launch of more groups than the
 *   device allows in x is folded into rows (tt_global_id() in
 *   shaders/common.glsl undoes it);
 * - with profiling, two timestamps frame the dispatch (vk_profile.c).
 */
#include <string.h>

#include "backend/vulkan/vk_internal.h"

#define DEFAULT_LOCAL 64

typedef struct recipe {
    tt_vk_pipeline_key key;
    VkDescriptorBufferInfo buffers[TT_VK_MAX_BINDINGS];
    VkDeviceAddress addresses[TT_VK_MAX_BINDINGS]; /* buffer address + binding offset */
    int too_far;          /* 1 + the first argument whose rest exceeds a binding; 0: none */
    unsigned char push[TT_VK_PUSH_BYTES];
    uint32_t groups[3];
} recipe;

static tt_status put(const tt_launch *l, recipe *r, const void *value, uint32_t size)
{
    uint32_t at = (r->key.push_bytes + size - 1) / size * size; /* aligned to its size */
    if (at + size > TT_VK_PUSH_BYTES)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "shader %s/%s: its arguments need more than the %d bytes of push "
                            "constants a launch may use (4 per buffer and per int or float "
                            "scalar, 8 per uint64)",
                            l->program, l->kernel, TT_VK_PUSH_BYTES);
    memcpy(r->push + at, value, size);
    r->key.push_bytes = at + size;
    return NULL;
}

static tt_status bind(const tt_vk_backend *vk, const tt_launch *l, int arg, recipe *r)
{
    const VkPhysicalDeviceLimits *lim = &vk->properties.limits;
    tt_mem m = l->args[arg].value.mem;
    uint32_t max_bindings = lim->maxPerStageDescriptorStorageBuffers < TT_VK_MAX_BINDINGS
                                ? lim->maxPerStageDescriptorStorageBuffers
                                : TT_VK_MAX_BINDINGS;
    if ((uint32_t)r->key.bindings >= max_bindings)
        return tt_error_new(TT_ERR_UNSUPPORTED, "shader %s/%s: more than %u buffer arguments",
                            l->program, l->kernel, max_bindings);
    if (m.offset >= m.buffer->bytes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "shader %s/%s: buffer argument %d starts at byte %zu, past the end "
                            "of '%s' (%zu bytes)",
                            l->program, l->kernel, arg, m.offset, m.buffer->record.name,
                            m.buffer->bytes);
    /* whole words at least: a shader reads uint words (TT_BYTE) from here */
    size_t align = lim->minStorageBufferOffsetAlignment > 4 ? lim->minStorageBufferOffsetAlignment : 4;
    size_t base = m.offset / align * align, rest = tt_vk_storage_bytes(m.buffer->bytes) - base;
    if (rest > lim->maxStorageBufferRange && !r->too_far) r->too_far = arg + 1;
    const tt_vk_buffer *b = m.buffer->handle;
    r->addresses[r->key.bindings] = b->address + base;
    r->buffers[r->key.bindings++] = (VkDescriptorBufferInfo){b->buffer, base, rest};
    uint32_t remainder = (uint32_t)(m.offset - base);
    return put(l, r, &remainder, 4);
}

/* The variant: bound where every buffer fits its binding, else addressed
 * where the device has addresses, else an error naming the buffer. */
static tt_status choose_variant(const tt_vk_backend *vk, const tt_launch *l, recipe *r)
{
    if (!r->key.bindings) return NULL; /* nothing to address */
    r->key.addressed = vk->always_addressed || (r->too_far && vk->addresses);
    if (!r->too_far || r->key.addressed) return NULL;
    int arg = r->too_far - 1, k = 0;
    for (int i = 0; i < arg; i++) k += l->args[i].kind == TT_ARG_MEM;
    tt_mem m = l->args[arg].value.mem;
    return tt_error_new(TT_ERR_UNSUPPORTED,
                        "shader %s/%s: buffer argument %d ('%s' at byte %zu) may reach past the "
                        "%u bytes one storage binding can address (maxStorageBufferRange): "
                        "%zu bytes of the buffer follow the binding, and the device offers no "
                        "buffer device addresses (bufferDeviceAddress) to reach them; keep "
                        "tensors in buffers of at most that size",
                        l->program, l->kernel, arg, m.buffer->record.name, m.offset,
                        vk->properties.limits.maxStorageBufferRange, (size_t)r->buffers[k].range);
}

/* The work-group size and the number of groups. */
static tt_status shape(const tt_vk_backend *vk, const tt_launch *l, recipe *r)
{
    const VkPhysicalDeviceLimits *lim = &vk->properties.limits;
    uint64_t invocations = 1;
    for (int d = 0; d < 3; d++) {
        uint32_t local = 1;
        if (l->local[0]) local = d < l->dims && l->local[d] ? (uint32_t)l->local[d] : 1;
        else if (d == 0) local = DEFAULT_LOCAL;
        if (local > lim->maxComputeWorkGroupSize[d])
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "shader %s/%s: work-group size %u in dimension %d is above the "
                                "device's %u",
                                l->program, l->kernel, local, d, lim->maxComputeWorkGroupSize[d]);
        r->key.local[d] = local;
        invocations *= local;
        uint64_t global = d < l->dims ? l->global[d] : 1;
        uint64_t groups = (global + local - 1) / local;
        if (d == 0 && l->dims == 1 && groups > lim->maxComputeWorkGroupCount[0]) {
            r->groups[0] = lim->maxComputeWorkGroupCount[0];
            groups = (groups + r->groups[0] - 1) / r->groups[0];
            if (groups > lim->maxComputeWorkGroupCount[1])
                return tt_error_new(TT_ERR_UNSUPPORTED,
                                    "shader %s/%s: %llu work-items are too many", l->program,
                                    l->kernel, (unsigned long long)global);
            r->groups[1] = (uint32_t)groups;
            r->groups[2] = 1;
            r->key.local[1] = r->key.local[2] = 1;
            break;
        }
        if (groups > lim->maxComputeWorkGroupCount[d])
            return tt_error_new(TT_ERR_UNSUPPORTED,
                                "shader %s/%s: %llu work-groups in dimension %d, above the "
                                "device's %u",
                                l->program, l->kernel, (unsigned long long)groups, d,
                                lim->maxComputeWorkGroupCount[d]);
        r->groups[d] = (uint32_t)groups;
    }
    if (invocations > lim->maxComputeWorkGroupInvocations)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "shader %s/%s: a work-group of %llu work-items is above the device's "
                            "%u",
                            l->program, l->kernel, (unsigned long long)invocations,
                            lim->maxComputeWorkGroupInvocations);
    return NULL;
}

/* Everything the launch needs before anything is recorded. */
static tt_status plan(const tt_vk_backend *vk, const tt_launch *l, recipe *r)
{
    memset(r, 0, sizeof *r);
    r->key.program = l->program;
    r->key.kernel = l->kernel;
    r->key.options = l->options;
    uint64_t shared = 0;
    for (int i = 0; i < l->arg_count; i++) {
        const tt_arg *a = &l->args[i];
        switch (a->kind) {
        case TT_ARG_MEM: TT_TRY(bind(vk, l, i, r)); break;
        case TT_ARG_I32: TT_TRY(put(l, r, &a->value.i32, 4)); break;
        case TT_ARG_F32: TT_TRY(put(l, r, &a->value.f32, 4)); break;
        case TT_ARG_U64: TT_TRY(put(l, r, &a->value.u64, 8)); break;
        case TT_ARG_LOCAL:
            shared += a->value.local_bytes;
            r->key.local_words[r->key.local_count++] = (uint32_t)((a->value.local_bytes + 3) / 4);
            break;
        }
    }
    if (shared > vk->properties.limits.maxComputeSharedMemorySize)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "shader %s/%s: %llu bytes of local memory, above the device's %u",
                            l->program, l->kernel, (unsigned long long)shared,
                            vk->properties.limits.maxComputeSharedMemorySize);
    TT_TRY(choose_variant(vk, l, r));
    return shape(vk, l, r);
}

tt_status tt_vk_prepare(tt_backend *backend, const tt_launch *launch)
{
    recipe r;
    tt_status bad = plan(backend->impl, launch, &r);
    if (bad) { /* the launch itself will say so */
        tt_status_free(bad);
        return NULL;
    }
    return tt_vk_pipeline_note(backend, &r.key);
}

tt_status tt_vk_launch(tt_backend *backend, const tt_launch *launch)
{
    tt_vk_backend *vk = backend->impl;
    recipe r;
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
    VkDescriptorSet set;
    VkCommandBuffer commands;
    TT_TRY(tt_launch_check_group(backend, launch, 0)); /* no per-pipeline limit in Vulkan */
    TT_TRY(plan(vk, launch, &r));
    TT_TRY(tt_vk_pipeline_get(backend, &r.key, &pipeline, &layout, &set_layout));
    TT_TRY(tt_vk_descriptor_set(vk, set_layout, &set));
    VkWriteDescriptorSet writes[TT_VK_MAX_BINDINGS];
    VkDescriptorBufferInfo table;
    int count = r.key.addressed ? 1 : r.key.bindings;
    if (r.key.addressed) /* this set is the frame's (dispatches - 1)-th */
        TT_TRY(tt_vk_address_slot(vk, vk->frame * TT_VK_BATCH + vk->dispatches - 1, r.addresses,
                                  r.key.bindings, &table));
    for (int b = 0; b < count; b++)
        writes[b] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = r.key.addressed ? TT_VK_ADDRESS_BINDING : (uint32_t)b,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = r.key.addressed ? &table : &r.buffers[b]};
    if (count) vkUpdateDescriptorSets(vk->device, (uint32_t)count, writes, 0, NULL);
    if (r.key.addressed) vk->addressed_dispatches++;
    else vk->bound_dispatches++;
    TT_TRY(tt_vk_record(vk, &commands));
    int timed = tt_vk_profile_before(backend, commands, launch->program, launch->kernel);
    vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    if (r.key.push_bytes)
        vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.key.push_bytes,
                           r.push);
    vkCmdDispatch(commands, r.groups[0], r.groups[1], r.groups[2]);
    tt_vk_profile_after(vk, commands, timed);
    return tt_vk_messages_check(&vk->messages, "recording a dispatch");
}
