/* Vulkan device memory in blocks (src/backend/vulkan/vk_memory.c) on
 * lavapipe with validation on: many buffers of mixed sizes made and freed
 * in random order keep their contents through writes, reads, copies and a
 * shader; their places are aligned and never overlap; freed ranges merge;
 * empty blocks go back (one spare kept); the byte accounting is the
 * buffers' own.  Faults: a heap that cannot hold a buffer is
 * TT_ERR_OUT_OF_MEMORY naming it (as OpenCL's allocation failures), and a
 * lost device is an error that says so. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_vulkan.h"

#define SMALL_FULL_BLOCK (1u << 20) /* first blocks 128 KiB, dedicated above */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* A backend with validation whose buffer pool has small blocks, so that a
 * few hundred KiB of buffers fill several and some are dedicated. */
static tt_backend *small_blocks(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(vulkan()); /* validation on */
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"},
                            &be));
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_vk_backend *vk = be->impl;
    CU_ASSERT_PTR_NULL_FATAL(vk->buffer_pool.blocks);
    vk->buffer_pool.block_bytes = SMALL_FULL_BLOCK;
    return be;
}

static tt_vk_pool_stats pool_stats(tt_backend *be)
{
    tt_vk_pool_stats s;
    tt_vk_pool_count(&((tt_vk_backend *)be->impl)->buffer_pool, &s);
    return s;
}

#define SLOTS 40

typedef struct slots {
    tt_buffer *buf[SLOTS];
    unsigned char *shadow[SLOTS]; /* what each buffer should hold */
    size_t bytes[SLOTS];
} slots;

/* Places aligned, inside their sizes and apart; a dedicated place alone in
 * its memory; the pool's bytes all accounted for. */
static void check_layout(tt_backend *be, const slots *s)
{
    tt_vk_backend *vk = be->impl;
    VkDeviceSize storage = vk->properties.limits.minStorageBufferOffsetAlignment, in_shared = 0;
    int live = 0;
    for (int i = 0; i < SLOTS; i++) {
        if (!s->buf[i]) continue;
        const tt_vk_buffer *a = s->buf[i]->handle;
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(vk->device, a->buffer, &req);
        CU_ASSERT(a->memory.offset % req.alignment == 0);
        CU_ASSERT(a->memory.offset % storage == 0);
        CU_ASSERT(a->memory.size >= req.size && req.size >= s->bytes[i]);
        CU_ASSERT(a->mapped == a->memory.mapped && a->mapped != NULL);
        int dedicated = a->memory.size > SMALL_FULL_BLOCK / 8;
        if (dedicated) CU_ASSERT(a->memory.offset == 0);
        if (!dedicated) in_shared += a->memory.size;
        live++;
        for (int j = 0; j < SLOTS; j++) {
            if (j == i || !s->buf[j]) continue;
            const tt_vk_buffer *b = s->buf[j]->handle;
            if (b->memory.memory != a->memory.memory) continue;
            CU_ASSERT(!dedicated);
            CU_ASSERT(a->memory.offset + a->memory.size <= b->memory.offset ||
                      b->memory.offset + b->memory.size <= a->memory.offset);
        }
    }
    tt_vk_pool_stats st = pool_stats(be);
    CU_ASSERT_EQUAL(st.live, live);
    CU_ASSERT(st.empty <= 1); /* at most one spare */
    CU_ASSERT_EQUAL(st.free_bytes + in_shared, st.held - st.dedicated_bytes);
    CU_ASSERT(st.held <= st.held_peak);
    tt_memory_held held;
    CU_ASSERT(tt_backend_memory_held(be, &held));
    CU_ASSERT_EQUAL(held.current_bytes, st.held);
    CU_ASSERT_EQUAL(held.blocks, st.blocks);
    CU_ASSERT(held.current_bytes >= be->mem.current_total);
}

static void verify(tt_backend *be, const slots *s, int i)
{
    unsigned char *back = malloc(s->bytes[i]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    TH_OK(tt_read(be, back, tt_mem_of(s->buf[i]), s->bytes[i]));
    CU_ASSERT(memcmp(back, s->shadow[i], s->bytes[i]) == 0);
    free(back);
}

static size_t random_size(void)
{
    uint32_t kind = next_random() % 20;
    if (kind < 2) return 1 + next_random() % 7;                   /* a few bytes */
    if (kind < 14) return 8 + next_random() % 4096;               /* small */
    if (kind < 19) return 4096 + next_random() % (96 << 10);      /* medium */
    return (130 << 10) + next_random() % (170 << 10);             /* dedicated */
}

static void make(tt_backend *be, slots *s, int i)
{
    size_t bytes = random_size();
    char name[32];
    snprintf(name, sizeof name, "slot %d", i);
    TH_OK(tt_buffer_alloc(be, bytes, (tt_mem_category)(i % TT_MEM_CATEGORY_COUNT), name,
                          &s->buf[i]));
    s->shadow[i] = malloc(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->shadow[i]);
    for (size_t k = 0; k < bytes; k++) s->shadow[i][k] = (unsigned char)next_random();
    s->bytes[i] = bytes;
    TH_OK(tt_write(be, tt_mem_of(s->buf[i]), s->shadow[i], bytes));
}

static void drop(slots *s, int i)
{
    tt_buffer_free(s->buf[i]);
    free(s->shadow[i]);
    s->buf[i] = NULL;
    s->shadow[i] = NULL;
}

/* y <- x over the floats both hold: util/copy, or tt_copy at a byte offset. */
static void copy_between(tt_backend *be, slots *s, int y, int x, int shader)
{
    size_t common = s->bytes[y] < s->bytes[x] ? s->bytes[y] : s->bytes[x];
    if (shader) {
        int n = (int)(common / 4);
        if (n == 0) return;
        TH_OK(TT_LAUNCH_1D(be, "util", "copy", (size_t)n, tt_arg_mem(tt_mem_of(s->buf[y])),
                           tt_arg_mem(tt_mem_of(s->buf[x])), tt_arg_i32(n)));
        memcpy(s->shadow[y], s->shadow[x], (size_t)n * 4);
    } else {
        size_t at = common > 1 ? next_random() % (common / 2) : 0, len = common - at;
        TH_OK(tt_copy(be, tt_mem_at(tt_mem_of(s->buf[y]), at), tt_mem_at(tt_mem_of(s->buf[x]), at),
                      len));
        memcpy(s->shadow[y] + at, s->shadow[x] + at, len);
    }
}

/* Random makes, frees, copies and reads; then everything freed in random
 * order gives back all but one spare block, whole again. */
static void test_random_buffers(void)
{
    tt_backend *be = small_blocks();
    tt_vk_backend *vk = be->impl;
    slots s = {0};
    int made = 0, dedicated_seen = 0, copies = 0;
    for (int op = 0; op < 1500; op++) {
        int i = (int)(next_random() % SLOTS);
        if (!s.buf[i]) {
            make(be, &s, i);
            made++;
            dedicated_seen += s.bytes[i] > SMALL_FULL_BLOCK / 8;
        } else {
            uint32_t what = next_random() % 10;
            int j = (int)(next_random() % SLOTS);
            if (what < 4) drop(&s, i);
            else if (what < 8 && s.buf[j] && j != i) {
                copy_between(be, &s, i, j, what < 6);
                copies++;
            } else verify(be, &s, i);
        }
        if (op % 100 == 99) {
            check_layout(be, &s);
            for (int k = 0; k < SLOTS; k++)
                if (s.buf[k]) verify(be, &s, k);
        }
    }
    tt_vk_pool_stats mid = pool_stats(be);
    CU_ASSERT(made > 250 && dedicated_seen > 5 && copies > 100);
    CU_ASSERT(mid.held_peak > 4 * (SMALL_FULL_BLOCK / 8)); /* several blocks were needed */
    check_layout(be, &s);
    for (int k = 0; k < SLOTS; k++)
        if (s.buf[k]) verify(be, &s, k);
    /* free the rest in random order */
    int order[SLOTS];
    for (int k = 0; k < SLOTS; k++) order[k] = k;
    for (int k = SLOTS - 1; k > 0; k--) {
        int j = (int)(next_random() % (uint32_t)(k + 1)), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < SLOTS; k++) {
        if (s.buf[order[k]]) drop(&s, order[k]);
        if (k % 8 == 7) check_layout(be, &s);
    }
    CU_ASSERT_EQUAL(be->mem.current_total, 0);
    tt_vk_pool_stats end = pool_stats(be);
    CU_ASSERT_EQUAL(end.live, 0);
    CU_ASSERT(end.blocks <= 1); /* the spare */
    CU_ASSERT_EQUAL(end.dedicated, 0);
    if (end.blocks == 1) { /* merged back into one range */
        CU_ASSERT_EQUAL(end.free_ranges, 1);
        CU_ASSERT_EQUAL(end.free_bytes, end.held);
    }
    tt_vk_memory_trim(vk);
    end = pool_stats(be);
    CU_ASSERT_EQUAL(end.blocks, 0);
    CU_ASSERT_EQUAL(end.held, 0);
    for (uint32_t h = 0; h < VK_MAX_MEMORY_HEAPS; h++) CU_ASSERT_EQUAL(vk->heap_held[h], 0);
    TH_OK(tt_finish(be));
    CU_ASSERT_EQUAL(vk->messages.count, 0);
    tt_backend_destroy(be);
}

/* Freed neighbours merge; a block that empties is kept as the one spare. */
static void test_merge_and_spare(void)
{
    tt_backend *be = small_blocks();
    tt_vk_backend *vk = be->impl;
    enum { QUARTER = 32 << 10 }; /* a quarter of the first block */
    tt_buffer *q[4], *half = NULL, *more[4];
    for (int i = 0; i < 4; i++) q[i] = alloc(be, QUARTER, "quarter");
    tt_vk_pool_stats st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 1);
    CU_ASSERT_EQUAL(st.held, SMALL_FULL_BLOCK / 8);
    CU_ASSERT_EQUAL(st.free_bytes, 0);
    tt_buffer_free(q[1]);
    tt_buffer_free(q[2]);
    st = pool_stats(be);
    CU_ASSERT_EQUAL(st.free_ranges, 1);
    CU_ASSERT_EQUAL(st.free_bytes, 2 * QUARTER);
    half = alloc(be, 2 * QUARTER, "half"); /* fits the merged hole only */
    st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 1);
    CU_ASSERT_EQUAL(st.free_bytes, 0);
    CU_ASSERT_EQUAL(((tt_vk_buffer *)half->handle)->memory.offset, QUARTER);
    /* a second block, larger (blocks grow), then both emptied: one stays */
    for (int i = 0; i < 4; i++) more[i] = alloc(be, QUARTER, "more");
    st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 2);
    CU_ASSERT_EQUAL(st.held, SMALL_FULL_BLOCK / 8 + SMALL_FULL_BLOCK / 4);
    tt_buffer_free(q[0]);
    tt_buffer_free(q[3]);
    tt_buffer_free(half);
    st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 2);
    CU_ASSERT_EQUAL(st.empty, 1);
    for (int i = 0; i < 4; i++) tt_buffer_free(more[i]);
    st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 1); /* the larger block is the spare */
    CU_ASSERT_EQUAL(st.held, SMALL_FULL_BLOCK / 4);
    CU_ASSERT_EQUAL(st.free_ranges, 1);
    /* the spare serves the next buffer: no new block */
    tt_buffer *again = alloc(be, 100, "again");
    CU_ASSERT_EQUAL(pool_stats(be).blocks, 1);
    CU_ASSERT_EQUAL(pool_stats(be).held, SMALL_FULL_BLOCK / 4);
    tt_buffer_free(again);
    /* the memory report names what is held */
    char *json = tt_memory_report_json(be, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT(strstr(json, "\"held\":{\"current_bytes\":262144") != NULL);
    free(json);
    TH_OK(tt_finish(be));
    CU_ASSERT_EQUAL(vk->messages.count, 0);
    tt_backend_destroy(be);
}

/* More than the heap holds is TT_ERR_OUT_OF_MEMORY naming the buffer, its
 * category and size, before the driver is asked; the spare goes first. */
static void test_out_of_memory(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_vk_backend *vk = be->impl;
    uint32_t heap = vk->memory.memoryTypes[vk->memory_type].heapIndex;
    VkDeviceSize heap_bytes = vk->memory.memoryHeaps[heap].size;
    CU_ASSERT_FATAL(be->device.max_alloc_bytes <= heap_bytes);
    size_t big = (size_t)(heap_bytes / 8 * 5), rest = (size_t)(heap_bytes / 2);
    tt_buffer *weights = NULL, *acts = NULL;
    TH_OK(tt_buffer_alloc(be, big, TT_MEM_PARAMETERS, "big weights", &weights));
    tt_memstats before = be->mem;
    tt_status s = tt_buffer_alloc(be, rest, TT_MEM_ACTIVATIONS, "big activations", &acts);
    CU_ASSERT_PTR_NULL(acts);
    char size[32];
    tt_format_bytes(rest, size, sizeof size);
    CU_ASSERT(s && strstr(tt_status_message(s), size)); /* "1.00 GiB" */
    expect_error(s, TT_ERR_OUT_OF_MEMORY, "'big activations' (activations", "memory heap");
    CU_ASSERT_EQUAL(be->mem.current_total, before.current_total); /* not accounted */
    CU_ASSERT_EQUAL(be->mem.live_count, before.live_count);
    tt_buffer_free(weights);
    TH_OK(tt_buffer_alloc(be, rest, TT_MEM_ACTIVATIONS, "big activations", &acts));
    tt_buffer_free(acts);

    /* a spare block held, then a buffer that fits only without it */
    tt_buffer_free(alloc(be, 1000, "small"));
    CU_ASSERT_EQUAL(pool_stats(be).blocks, 1);
    CU_ASSERT_EQUAL(pool_stats(be).empty, 1);
    size_t almost = (size_t)(be->device.max_alloc_bytes - pool_stats(be).held / 2);
    TH_OK(tt_buffer_alloc(be, almost, TT_MEM_WORKSPACE, "almost all", &acts));
    tt_vk_pool_stats st = pool_stats(be);
    CU_ASSERT_EQUAL(st.blocks, 1);
    CU_ASSERT_EQUAL(st.dedicated, 1);
    tt_buffer_free(acts);
    CU_ASSERT_EQUAL(pool_stats(be).held, 0);
    no_messages();
}

/* The VkResults of faults, as the trainer sees them. */
static void test_fault_codes(void)
{
    static const VkResult oom[] = {VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_ERROR_OUT_OF_HOST_MEMORY};
    for (int i = 0; i < 2; i++) {
        tt_status s = tt_error_vk(oom[i], "vkAllocateMemory(%s)", "block");
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_OUT_OF_MEMORY);
        CU_ASSERT_EQUAL(tt_status_backend_code(s), oom[i]);
        tt_status_free(s);
    }
    static const char *const lost_in[] = {"vkQueueSubmit (finish)", "vkWaitForFences (finish)",
                                          "resetting the command buffer (finish)",
                                          "vkAllocateMemory(block)"};
    for (int i = 0; i < 4; i++) {
        tt_status s = tt_error_vk(VK_ERROR_DEVICE_LOST, "%s", lost_in[i]);
        const char *m = tt_status_message(s);
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_BACKEND);
        CU_ASSERT_EQUAL(tt_status_backend_code(s), VK_ERROR_DEVICE_LOST);
        CU_ASSERT_STRING_EQUAL(tt_status_backend(s), "vulkan");
        CU_ASSERT(strncmp(m, "the Vulkan device was lost", 26) == 0);
        CU_ASSERT(strstr(m, "the last checkpoint is kept") != NULL);
        CU_ASSERT(strstr(m, lost_in[i]) != NULL);
        CU_ASSERT(strstr(m, "failed: VK_ERROR_DEVICE_LOST (-4)") != NULL);
        tt_status_free(s);
    }
    tt_status s = tt_error_vk(VK_ERROR_INITIALIZATION_FAILED, "vkCreateDevice");
    CU_ASSERT(strstr(tt_status_message(s), "was lost") == NULL);
    tt_status_free(s);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"random buffers: contents, alignment, no overlap, blocks returned", test_random_buffers},
        {"freed ranges merge, one spare block", test_merge_and_spare},
        {"more than the heap is out of memory", test_out_of_memory},
        {"fault codes: out of memory, device lost", test_fault_codes},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_memory", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    return rc;
}
