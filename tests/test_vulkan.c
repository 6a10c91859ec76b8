/* The Vulkan backend on lavapipe (src/backend/vulkan/), with the Khronos
 * validation layer on and no validation message allowed: the factory and
 * the device list; buffers, transfers and copies at odd byte offsets,
 * mapped and staged; unknown shaders and TT_SHADER_DIR; memory accounting
 * against OpenCL; errors by VkResult and from validation messages.  The ops
 * and launch conventions: test_vulkan_ops.c; the pipeline cache on disk:
 * test_vulkan_cache.c; memory blocks and faults: test_vulkan_memory.c. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/vulkan/vk_shaders.h"
#include "ops/util.h"
#include "test_vulkan.h"

static void test_factory(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_STRING_EQUAL(be->ops->name, "vulkan");
    CU_ASSERT_STRING_EQUAL(be->device.type, "CPU");
    CU_ASSERT_STRING_EQUAL(be->device.platform, "Vulkan");
    CU_ASSERT(strstr(be->device.name, "llvmpipe") != NULL);
    CU_ASSERT(be->device.max_alloc_bytes > 0 && be->device.local_mem_bytes >= 16384);
    CU_ASSERT(be->device.max_work_group_size >= 128 && be->device.base_align_bytes > 0);
    tt_backend_kind kind;
    TH_OK(tt_backend_kind_parse("Vulkan", &kind));
    CU_ASSERT_EQUAL(kind, TT_BACKEND_VULKAN);
    CU_ASSERT_STRING_EQUAL(tt_backend_kind_name(TT_BACKEND_VULKAN), "vulkan");

    /* the list, and the selector rules over it */
    tt_device_info *list = NULL;
    int n = 0;
    TH_OK(tt_backend_devices(TT_BACKEND_VULKAN, &list, &n)); /* what `tiletrain devices` lists */
    CU_ASSERT(n >= 1);
    tt_device_info *none = NULL;
    int zero = -1;
    tt_status no_devices = tt_backend_devices(TT_BACKEND_DRY, &none, &zero);
    CU_ASSERT_EQUAL(tt_status_code(no_devices), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(none == NULL && zero == 0);
    tt_status_free(no_devices);
    int lavapipe = -1;
    for (int i = 0; i < n; i++)
        if (strstr(list[i].name, "llvmpipe")) lavapipe = i;
    CU_ASSERT(lavapipe >= 0);
    free(list);
    tt_backend *other = NULL;
    char index[16];
    snprintf(index, sizeof index, "%d", lavapipe);
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = index},
                            &other));
    CU_ASSERT(strstr(other->device.name, "llvmpipe") != NULL);
    tt_backend_destroy(other);
    other = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN}, &other));
    if (n == 1) CU_ASSERT_STRING_EQUAL(other->device.name, be->device.name);
    tt_backend_destroy(other);
    expect_error(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN,
                                                         .device = "no-such-device"},
                                   &other),
                 TT_ERR_NO_DEVICE, "matches no Vulkan device", "llvmpipe");
    /* profiling: timestamp queries (test_vulkan_profile.c) */
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe",
                                                  .profiling = 1},
                            &other));
    CU_ASSERT(other && other->profile && other->profile->count == 0);
    tt_backend_destroy(other);
    no_messages();
}

/* Writes, reads and copies at odd offsets on `be`. */
static void transfers_on(tt_backend *be)
{
    enum { SIZE = 1001 };
    unsigned char host[SIZE], back[SIZE], part[SIZE];
    for (int i = 0; i < SIZE; i++) host[i] = (unsigned char)(i * 37 + 11);
    tt_buffer *a = alloc(be, SIZE, "a"), *b = alloc(be, SIZE, "b");
    TH_OK(tt_write(be, tt_mem_of(a), host, SIZE));
    TH_OK(tt_read(be, back, tt_mem_of(a), SIZE));
    CU_ASSERT(memcmp(host, back, SIZE) == 0);
    /* odd offsets and lengths */
    for (int i = 0; i < 300; i++) part[i] = (unsigned char)(255 - i);
    TH_OK(tt_write(be, tt_mem_at(tt_mem_of(a), 3), part, 299));
    memcpy(host + 3, part, 299);
    TH_OK(tt_read(be, back, tt_mem_at(tt_mem_of(a), 1), 517));
    CU_ASSERT(memcmp(back, host + 1, 517) == 0);
    /* copies between odd offsets, across buffers and within one */
    TH_OK(tt_write(be, tt_mem_of(b), host, SIZE));
    TH_OK(tt_copy(be, tt_mem_at(tt_mem_of(b), 7), tt_mem_at(tt_mem_of(a), 501), 333));
    TH_OK(tt_copy(be, tt_mem_at(tt_mem_of(b), 600), tt_mem_at(tt_mem_of(b), 5), 401));
    unsigned char want[SIZE];
    memcpy(want, host, SIZE);
    memcpy(want + 7, host + 501, 333);
    memcpy(want + 600, want + 5, 401);
    TH_OK(tt_read(be, back, tt_mem_of(b), SIZE));
    CU_ASSERT(memcmp(back, want, SIZE) == 0);
    expect_error(tt_copy(be, tt_mem_at(tt_mem_of(b), 10), tt_mem_of(b), 11),
                 TT_ERR_INVALID_ARGUMENT, "overlap", NULL);
    tt_buffer_free(a);
    tt_buffer_free(b);
}

static void test_transfers(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT(((tt_vk_backend *)be->impl)->host_visible); /* lavapipe: mapped memory */
    transfers_on(be);
    no_messages();

    /* the path of discrete GPUs: device memory, staging buffers */
    th_setenv("TT_VULKAN_STAGING", "1");
    tt_backend *staged = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"},
                            &staged));
    th_setenv("TT_VULKAN_STAGING", NULL);
    tt_vk_backend *vk = staged->impl;
    CU_ASSERT(!vk->host_visible);
    transfers_on(staged);
    tt_buffer *x = alloc(staged, 100 * 4, "x");
    float got[100];
    TH_OK(tt_fill(staged, tt_mem_of(x), 0.5f, 100));
    TH_OK(tt_scale(staged, tt_mem_f32(tt_mem_of(x), 1), 4.0f, 98));
    TH_OK(tt_read(staged, got, tt_mem_of(x), sizeof got));
    CU_ASSERT(got[0] == 0.5f && got[1] == 2.0f && got[98] == 2.0f && got[99] == 0.5f);
    tt_buffer_free(x);
    TH_OK(tt_finish(staged));
    CU_ASSERT_EQUAL(vk->messages.count, 0);
    tt_backend_destroy(staged);
}

/* The ring of command buffers: 600 dispatches, each adding into what the
 * one before wrote, with no read between them, so that a full batch is
 * submitted and left running while the next is recorded; each still sees
 * the one before it across the batches (bound, and addressed in the
 * suite's second run, whose address slots are per frame). */
static void test_ring(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_vk_backend *vk = be->impl;
    enum { N = 1000, ADDS = 600 };
    tt_buffer *x = alloc(be, N * 4, "x"), *y = alloc(be, N * 4, "y");
    TH_OK(tt_fill(be, tt_mem_of(x), 1.0f, N));
    TH_OK(tt_fill(be, tt_mem_of(y), 0.0f, N));
    int in_flight_seen = 0;
    for (int i = 0; i < ADDS; i++) {
        TH_OK(tt_axpy(be, tt_mem_of(y), tt_mem_of(x), 1.0f, N));
        for (int f = 0; f < TT_VK_FRAMES; f++) in_flight_seen |= vk->frames[f].submitted;
    }
    CU_ASSERT(in_flight_seen); /* a batch ran while the host recorded */
    float got[N];
    TH_OK(tt_read(be, got, tt_mem_of(y), sizeof got));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != (float)ADDS;
    if (wrong) printf("\n    %d of %d sums are not %d (y[0] = %g)", wrong, N, ADDS, got[0]);
    CU_ASSERT_EQUAL(wrong, 0);
    for (int f = 0; f < TT_VK_FRAMES; f++) CU_ASSERT(!vk->frames[f].submitted); /* read waits */
    tt_buffer_free(x);
    tt_buffer_free(y);
    no_messages();
}

/* Unknown shaders name themselves; TT_SHADER_DIR loads .spv files. */
static void test_shader_sources(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *b = alloc(be, 64 * 4, "b");
    expect_error(TT_LAUNCH_1D(be, "util", "nosuch", 4, tt_arg_mem(tt_mem_of(b))),
                 TT_ERR_INVALID_ARGUMENT, "util/nosuch", "shaders/util/nosuch.comp");
    expect_error(TT_LAUNCH_1D(be, "noprogram", "fill", 4, tt_arg_mem(tt_mem_of(b))),
                 TT_ERR_INVALID_ARGUMENT, "noprogram/fill", NULL);
    tt_buffer_free(b);
    no_messages();

    /* a folder with util/fill.spv only (the embedded words, written out) */
    char dir[] = "/tmp/tt_shaders_XXXXXX", path[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/util", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/util/fill.spv", dir);
    const tt_embedded_shader *fill = NULL;
    for (size_t i = 0; i < tt_embedded_shader_count; i++)
        if (strcmp(tt_embedded_shaders[i].name, "util/fill") == 0) fill = &tt_embedded_shaders[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(fill);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(fill->words, 4, fill->word_count, f), fill->word_count);
    fclose(f);
    th_setenv("TT_SHADER_DIR", dir);
    tt_backend *from_dir = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"},
                            &from_dir));
    tt_buffer *d = alloc(from_dir, 10 * 4, "d");
    float got[10];
    TH_OK(TT_LAUNCH_1D(from_dir, "util", "fill", 10, tt_arg_mem(tt_mem_of(d)), tt_arg_f32(4.0f),
                       tt_arg_i32(10)));
    TH_OK(tt_read(from_dir, got, tt_mem_of(d), sizeof got));
    CU_ASSERT(got[0] == 4.0f && got[9] == 4.0f);
    expect_error(TT_LAUNCH_1D(from_dir, "util", "scale", 10, tt_arg_mem(tt_mem_of(d)),
                              tt_arg_f32(1), tt_arg_i32(10)),
                 TT_ERR_IO, "TT_SHADER_DIR", "util/scale.spv");
    tt_buffer_free(d);
    tt_backend_destroy(from_dir);
    th_setenv("TT_SHADER_DIR", NULL);
    unlink(path);
    snprintf(path, sizeof path, "%s/util", dir);
    rmdir(path);
    rmdir(dir);
}

/* The same allocations are accounted the same on Vulkan and OpenCL. */
static void test_accounting(void)
{
    tt_backend *be = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    static const size_t sizes[] = {4, 1000, 123457, 1 << 20};
    tt_buffer *bufs[2][4];
    tt_backend *both[2] = {be, cl};
    tt_memstats before[2] = {be->mem, cl->mem};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++)
            TH_OK(tt_buffer_alloc(both[k], sizes[i], (tt_mem_category)i, "acct", &bufs[k][i]));
    for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++)
        CU_ASSERT_EQUAL(be->mem.current[c] - before[0].current[c],
                        cl->mem.current[c] - before[1].current[c]);
    CU_ASSERT_EQUAL(be->mem.live_count - before[0].live_count,
                    cl->mem.live_count - before[1].live_count);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) tt_buffer_free(bufs[k][i]);
    CU_ASSERT_EQUAL(be->mem.current_total, before[0].current_total);
    CU_ASSERT_EQUAL(cl->mem.current_total, before[1].current_total);
    tt_buffer *none = NULL;
    expect_error(tt_buffer_alloc(be, be->device.max_alloc_bytes + 1, TT_MEM_OTHER, "huge", &none),
                 TT_ERR_TOO_LARGE, "huge", NULL);
    no_messages();
}

/* VkResults become errors that keep them; validation messages become the
 * next call's error. */
static void test_errors(void)
{
    tt_status s = tt_error_vk(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory('%s')", "w");
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_OUT_OF_MEMORY);
    CU_ASSERT_EQUAL(tt_status_backend_code(s), VK_ERROR_OUT_OF_DEVICE_MEMORY);
    CU_ASSERT_STRING_EQUAL(tt_status_backend(s), "vulkan");
    CU_ASSERT(strstr(tt_status_message(s), "vkAllocateMemory('w') failed: "
                                           "VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)") != NULL);
    tt_status_free(s);
    s = tt_error_vk(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_BACKEND);
    CU_ASSERT(strstr(tt_status_message(s), "VK_ERROR_DEVICE_LOST") != NULL);
    tt_status_free(s);

    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    VkDebugUtilsMessengerCallbackDataEXT data = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT,
        .pMessage = "planted message"};
    tt_vk_on_message(VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT,
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, &data, messages());
    TH_OK(tt_finish(be)); /* information is not a fault */
    tt_vk_on_message(VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, &data, messages());
    expect_error(tt_finish(be), TT_ERR_BACKEND, "validation", "planted message");
    TH_OK(tt_finish(be)); /* reported once */
    messages()->count = messages()->reported = 0;
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"factory and devices", test_factory},
        {"transfers and copies at odd offsets, mapped and staged", test_transfers},
        {"unknown shaders and TT_SHADER_DIR", test_shader_sources},
        {"memory accounting", test_accounting},
        {"dependent dispatches across the ring of command buffers", test_ring},
        {"errors and validation messages", test_errors},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
