/*
 * Vulkan device memory in blocks, sub-allocated.  A pool holds the blocks
 * of one memory type; each VkBuffer is bound at an offset in a block that
 * meets its VkMemoryRequirements alignment and minStorageBufferOffsetAlignment.
 * A block keeps its free ranges sorted by offset and merges neighbours when
 * a place is freed.
 *
 * New blocks start at an eighth of the full size and double up to it (as
 * VMA does), so a small run holds little.  A need above that eighth gets a
 * dedicated allocation of its own size, released with it: such buffers are
 * few (an arena, a large tensor), and in a shared block each would leave
 * most of a new block unused.  Every block counts against its
 * heap's size: VK_EXT_memory_budget is often absent (lavapipe), so our own
 * count is the truth, and a block that would overfill the heap is refused
 * as out of memory before the driver is asked.
 *
 * An empty block is released, except one per pool kept as a spare: freeing
 * and making the same buffers again (staging buffers, per-step scratch)
 * then costs no vkAllocateMemory and vkMapMemory each time.  The spare is
 * released before any allocation is refused for lack of memory.
 *
 * Assumes the caller has made sure no queued work still uses a place it
 * frees (vk_buffer.c submits and waits first).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/alloc.h"

#define FULL_BLOCK_BYTES ((VkDeviceSize)256 << 20)
#define SMALLER_BLOCK_STEPS 3 /* the first block is an eighth of a full one,
                                  and larger needs get their own */

typedef struct range {
    VkDeviceSize offset, size;
} range;

struct tt_vk_block {
    tt_vk_pool *pool;
    VkDeviceMemory memory;
    VkDeviceSize size;
    char *mapped;          /* pool->map: the block's first byte */
    int dedicated;         /* one place, of the whole block */
    int live;              /* places handed out */
    range *free;           /* sorted by offset, never adjacent */
    int free_count, free_capacity;
    tt_vk_block *next;
};

static VkDeviceSize round_up(VkDeviceSize value, VkDeviceSize align)
{
    return (value + align - 1) / align * align;
}

void tt_vk_pool_init(tt_vk_backend *vk, tt_vk_pool *pool, uint32_t type, int map,
                     VkDeviceSize max_alloc)
{
    memset(pool, 0, sizeof *pool);
    pool->type = type;
    pool->map = map;
    uint32_t heap = vk->memory.memoryTypes[type].heapIndex;
    VkDeviceSize bytes = FULL_BLOCK_BYTES, heap_bytes = vk->memory.memoryHeaps[heap].size;
    /* a small heap gets small blocks: a spare block is then little of it */
    if (heap_bytes / 8 < bytes) bytes = heap_bytes / 8;
    if (max_alloc && max_alloc < bytes) bytes = max_alloc;
    pool->block_bytes = bytes ? bytes : 1;
}

static uint32_t heap_of(const tt_vk_backend *vk, const tt_vk_pool *pool)
{
    return vk->memory.memoryTypes[pool->type].heapIndex;
}

static void release_block(tt_vk_backend *vk, tt_vk_block *b)
{
    tt_vk_pool *pool = b->pool;
    for (tt_vk_block **p = &pool->blocks; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    pool->block_count--;
    pool->held -= b->size;
    vk->heap_held[heap_of(vk, pool)] -= b->size;
    vkFreeMemory(vk->device, b->memory, NULL); /* unmaps */
    free(b->free);
    free(b);
}

/* A new block of `bytes` (VkResult of the allocation; the heap's own limit
 * reads as VK_ERROR_OUT_OF_DEVICE_MEMORY). */
static VkResult allocate_block(tt_vk_backend *vk, tt_vk_pool *pool, VkDeviceSize bytes,
                               int dedicated, tt_vk_block **out)
{
    uint32_t heap = heap_of(vk, pool);
    if (vk->heap_held[heap] + bytes > vk->memory.memoryHeaps[heap].size)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    tt_vk_block *b = tt_calloc(1, sizeof *b);
    if (!b) return VK_ERROR_OUT_OF_HOST_MEMORY;
    /* buffers in it may be reached by device address (addressed shaders) */
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                 .pNext = vk->addresses ? &flags : NULL,
                                 .allocationSize = bytes,
                                 .memoryTypeIndex = pool->type};
    VkResult r = vkAllocateMemory(vk->device, &info, NULL, &b->memory);
    if (r == VK_SUCCESS && pool->map) {
        void *mapped = NULL;
        r = vkMapMemory(vk->device, b->memory, 0, VK_WHOLE_SIZE, 0, &mapped);
        b->mapped = mapped;
        if (r != VK_SUCCESS) vkFreeMemory(vk->device, b->memory, NULL);
    }
    if (r == VK_SUCCESS && !dedicated) {
        b->free = tt_malloc(4 * sizeof *b->free);
        if (!b->free) {
            vkFreeMemory(vk->device, b->memory, NULL);
            r = VK_ERROR_OUT_OF_HOST_MEMORY;
        } else {
            b->free_capacity = 4;
            b->free_count = 1;
            b->free[0] = (range){0, bytes};
        }
    }
    if (r != VK_SUCCESS) {
        free(b);
        return r;
    }
    b->pool = pool;
    b->size = bytes;
    b->dedicated = dedicated;
    /* appended: places go to the oldest blocks first, so newer ones empty */
    tt_vk_block **tail = &pool->blocks;
    while (*tail) tail = &(*tail)->next;
    *tail = b;
    pool->block_count++;
    pool->held += bytes;
    if (pool->held > pool->held_peak) pool->held_peak = pool->held;
    vk->heap_held[heap] += bytes;
    *out = b;
    return VK_SUCCESS;
}

/* Releases the empty blocks of both pools; whether any was. */
static int release_empty(tt_vk_backend *vk)
{
    int released = 0;
    tt_vk_pool *pools[2] = {&vk->buffer_pool, &vk->staging_pool};
    for (int i = 0; i < 2; i++) {
        tt_vk_block *b = pools[i]->blocks;
        while (b) {
            tt_vk_block *next = b->next;
            if (!b->live) {
                release_block(vk, b);
                released = 1;
            }
            b = next;
        }
    }
    return released;
}

/* The size of a new shared block for a place of `need` bytes: an eighth
 * of a full block at first, doubling past the largest there is. */
static VkDeviceSize shared_block_bytes(const tt_vk_pool *pool, VkDeviceSize need)
{
    VkDeviceSize largest = 0, bytes = pool->block_bytes;
    for (const tt_vk_block *b = pool->blocks; b; b = b->next)
        if (!b->dedicated && b->size > largest) largest = b->size;
    for (int i = 0; i < SMALLER_BLOCK_STEPS; i++) {
        VkDeviceSize half = bytes / 2;
        if (half <= largest || half < 2 * need) break;
        bytes = half;
    }
    return bytes;
}

/* A new block that holds `need` bytes: on a refusal, the empty blocks are
 * released and the request retried, then a smaller shared block tried. */
static tt_status new_block(tt_vk_backend *vk, tt_vk_pool *pool, VkDeviceSize need, int dedicated,
                           tt_vk_block **out)
{
    VkDeviceSize bytes = dedicated ? need : shared_block_bytes(pool, need);
    int released = 0;
    for (;;) {
        VkResult r = allocate_block(vk, pool, bytes, dedicated, out);
        if (r == VK_SUCCESS) return NULL;
        int full = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
        if (full && !released) {
            released = 1;
            if (release_empty(vk)) continue;
        }
        if (full && !dedicated && bytes / 2 >= need) {
            bytes /= 2;
            continue;
        }
        uint32_t heap = heap_of(vk, pool);
        VkDeviceSize heap_bytes = vk->memory.memoryHeaps[heap].size;
        char want[32], held[32], size[32];
        tt_format_bytes(bytes, want, sizeof want);
        tt_format_bytes(vk->heap_held[heap], held, sizeof held);
        tt_format_bytes(heap_bytes, size, sizeof size);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY && vk->heap_held[heap] + bytes > heap_bytes)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                                "device memory is full: memory heap %u of %s holds %s, and "
                                "%s more does not fit",
                                heap, size, held, want);
        return tt_error_vk(r, "%s(%s of memory type %u; heap %u of %s holds %s)",
                           pool->map ? "vkAllocateMemory and vkMapMemory" : "vkAllocateMemory",
                           want, pool->type, heap, size, held);
    }
}

/* Takes `size` bytes at a multiple of `align` from the free range i. */
static tt_status take(tt_vk_block *b, int i, VkDeviceSize size, VkDeviceSize align,
                      VkDeviceSize *offset)
{
    range r = b->free[i];
    VkDeviceSize at = round_up(r.offset, align), end = r.offset + r.size;
    int before = at > r.offset, after = at + size < end;
    if (before && after && b->free_count == b->free_capacity) { /* one more range */
        range *grown = tt_realloc(b->free, 2 * (size_t)b->free_capacity * sizeof *grown);
        if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        b->free = grown;
        b->free_capacity *= 2;
    }
    if (before && after) {
        memmove(b->free + i + 2, b->free + i + 1,
                (size_t)(b->free_count - i - 1) * sizeof *b->free);
        b->free[i] = (range){r.offset, at - r.offset};
        b->free[i + 1] = (range){at + size, end - at - size};
        b->free_count++;
    } else if (before) {
        b->free[i] = (range){r.offset, at - r.offset};
    } else if (after) {
        b->free[i] = (range){at + size, end - at - size};
    } else {
        memmove(b->free + i, b->free + i + 1, (size_t)(b->free_count - i - 1) * sizeof *b->free);
        b->free_count--;
    }
    *offset = at;
    return NULL;
}

/* The smallest free range of `b` that holds `size` at `align`; -1: none. */
static int best_fit(const tt_vk_block *b, VkDeviceSize size, VkDeviceSize align)
{
    int best = -1;
    for (int i = 0; i < b->free_count; i++) {
        VkDeviceSize pad = round_up(b->free[i].offset, align) - b->free[i].offset;
        if (pad > b->free[i].size || b->free[i].size - pad < size) continue;
        if (best < 0 || b->free[i].size < b->free[best].size) best = i;
    }
    return best;
}

tt_status tt_vk_memory_alloc(tt_vk_backend *vk, tt_vk_pool *pool, const VkMemoryRequirements *req,
                             tt_vk_allocation *out)
{
    memset(out, 0, sizeof *out);
    if (!(req->memoryTypeBits & (1u << pool->type)))
        return tt_error_new(TT_ERR_UNSUPPORTED, "the device cannot place it in memory type %u",
                            pool->type);
    VkDeviceSize align = req->alignment ? req->alignment : 1;
    VkDeviceSize storage = vk->properties.limits.minStorageBufferOffsetAlignment;
    if (storage > align) align = storage; /* both are powers of two */
    /* whole multiples of the alignment: no slivers between places */
    VkDeviceSize size = round_up(req->size ? req->size : 1, align);
    tt_vk_block *block = NULL;
    VkDeviceSize offset = 0;
    if (size > pool->block_bytes >> SMALLER_BLOCK_STEPS) {
        TT_TRY(new_block(vk, pool, size, 1, &block));
    } else {
        int i = -1;
        for (block = pool->blocks; block; block = block->next)
            if (!block->dedicated && (i = best_fit(block, size, align)) >= 0) break;
        if (!block) {
            TT_TRY(new_block(vk, pool, size, 0, &block));
            i = 0;
        }
        tt_status s = take(block, i, size, align, &offset);
        if (s) {
            if (!block->live) release_block(vk, block);
            return s;
        }
    }
    block->live++;
    out->block = block;
    out->memory = block->memory;
    out->offset = offset;
    out->size = size;
    out->mapped = block->mapped ? block->mapped + offset : NULL;
    return NULL;
}

/* Returns [offset, offset + size) to b's free ranges, merged with its
 * neighbours; 0 when host memory ran out (the range is then lost until
 * the block empties). */
static int give_back(tt_vk_block *b, VkDeviceSize offset, VkDeviceSize size)
{
    int i = 0;
    while (i < b->free_count && b->free[i].offset < offset) i++;
    int joins_before = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == offset;
    int joins_after = i < b->free_count && offset + size == b->free[i].offset;
    if (joins_before && joins_after) {
        b->free[i - 1].size += size + b->free[i].size;
        memmove(b->free + i, b->free + i + 1, (size_t)(b->free_count - i - 1) * sizeof *b->free);
        b->free_count--;
    } else if (joins_before) {
        b->free[i - 1].size += size;
    } else if (joins_after) {
        b->free[i].offset = offset;
        b->free[i].size += size;
    } else {
        if (b->free_count == b->free_capacity) {
            range *grown = tt_realloc(b->free, 2 * (size_t)b->free_capacity * sizeof *grown);
            if (!grown) return 0;
            b->free = grown;
            b->free_capacity *= 2;
        }
        memmove(b->free + i + 1, b->free + i, (size_t)(b->free_count - i) * sizeof *b->free);
        b->free[i] = (range){offset, size};
        b->free_count++;
    }
    return 1;
}

void tt_vk_memory_free(tt_vk_backend *vk, tt_vk_allocation *a)
{
    tt_vk_block *b = a->block;
    if (!b) return;
    VkDeviceSize offset = a->offset, size = a->size;
    memset(a, 0, sizeof *a);
    b->live--;
    if (b->dedicated) {
        release_block(vk, b);
        return;
    }
    int whole = give_back(b, offset, size);
    if (b->live) return;
    if (!whole) { /* a lost range: start the block afresh */
        b->free_count = 1;
        b->free[0] = (range){0, b->size};
    }
    /* empty: kept as the pool's spare unless it has one (the larger stays) */
    for (tt_vk_block *other = b->pool->blocks; other; other = other->next)
        if (other != b && !other->dedicated && !other->live) {
            release_block(vk, other->size >= b->size ? b : other);
            return;
        }
}

void tt_vk_memory_trim(tt_vk_backend *vk) { release_empty(vk); }

void tt_vk_pool_release(tt_vk_backend *vk, tt_vk_pool *pool)
{
    while (pool->blocks) release_block(vk, pool->blocks);
}

void tt_vk_pool_count(const tt_vk_pool *pool, tt_vk_pool_stats *out)
{
    memset(out, 0, sizeof *out);
    for (const tt_vk_block *b = pool->blocks; b; b = b->next) {
        out->blocks++;
        out->dedicated += b->dedicated;
        if (b->dedicated) out->dedicated_bytes += b->size;
        out->empty += !b->live;
        out->live += b->live;
        for (int i = 0; i < b->free_count; i++) {
            out->free_bytes += b->free[i].size;
            out->free_ranges++;
        }
    }
    out->held = pool->held;
    out->held_peak = pool->held_peak;
}
