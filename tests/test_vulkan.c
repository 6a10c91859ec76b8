/* The Vulkan backend on lavapipe (src/backend/vulkan/), with the Khronos
 * validation layer on and no validation message allowed: the factory and
 * the device list; buffers, transfers and copies at odd byte offsets; the
 * utility ops (src/ops/util.c) against plain C and, bit for bit, against
 * the OpenCL backend; the launch conventions (specialization constants from
 * options and TT_ARG_LOCAL, push constants and their limit, bindings at
 * offsets and their range limit, 1-D launches folded into rows); unknown
 * shaders and TT_SHADER_DIR; the pipeline cache on disk; errors by
 * VkResult; memory accounting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/vulkan/vk_internal.h"
#include "backend/vulkan/vk_shaders.h"
#include "core/status.h"
#include "harness.h"
#include "ops/util.h"

static tt_backend *vk_be;

static tt_backend *vulkan(void)
{
    if (vk_be) return vk_be;
    th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_status s = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"}, &vk_be);
    if (s) th_report_status("creating the Vulkan backend on lavapipe", s, __FILE__, __LINE__);
    return vk_be;
}

static tt_vk_messages *messages(void) { return &((tt_vk_backend *)vulkan()->impl)->messages; }

/* Every test ends here: the queue runs clean and validation said nothing. */
static void no_messages(void)
{
    TH_OK(tt_finish(vulkan()));
    CU_ASSERT(messages()->enabled);
    CU_ASSERT_EQUAL(messages()->count, 0);
}

static tt_buffer *alloc(tt_backend *be, size_t bytes, const char *name)
{
    tt_buffer *b = NULL;
    TH_OK(tt_buffer_alloc(be, bytes, TT_MEM_OTHER, name, &b));
    return b;
}

static void expect_error(tt_status s, tt_code code, const char *part1, const char *part2)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const char *m = tt_status_message(s);
    int ok = tt_status_code(s) == code && strstr(m, part1) && (!part2 || strstr(m, part2));
    if (!ok) printf("\n    unexpected error: %s [%s]\n", m, tt_code_name(tt_status_code(s)));
    CU_ASSERT(ok);
    tt_status_free(s);
}

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
    TH_OK(tt_vk_devices_list(&list, &n));
    CU_ASSERT(n >= 1);
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
    expect_error(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .profiling = 1},
                                   &other),
                 TT_ERR_UNSUPPORTED, "profile", NULL);
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

/* ---- the utility ops, on both backends ----------------------------------- */

enum { PAD = 5 };

typedef struct op_case {
    size_t n, off_y, off_x; /* in floats */
    float *y, *x;           /* host inputs: off + n + PAD floats */
} op_case;

/* Runs op `which` on `be` over copies of c's inputs; returns y (malloc'd). */
static float *run_op(tt_backend *be, const op_case *c, int which)
{
    size_t ny = c->off_y + c->n + PAD, nx = c->off_x + c->n + PAD;
    tt_buffer *y = alloc(be, ny * 4, "y"), *x = alloc(be, nx * 4, "x");
    TH_OK(tt_write(be, tt_mem_of(y), c->y, ny * 4));
    TH_OK(tt_write(be, tt_mem_of(x), c->x, nx * 4));
    tt_mem my = tt_mem_f32(tt_mem_of(y), c->off_y), mx = tt_mem_f32(tt_mem_of(x), c->off_x);
    switch (which) {
    case 0: TH_OK(tt_fill(be, my, -1.25f, c->n)); break;
    case 1: TH_OK(tt_scale(be, my, 0.3f, c->n)); break;
    case 2: TH_OK(tt_axpy(be, my, mx, -0.7f, c->n)); break;
    default: TH_OK(tt_copy_f32(be, my, mx, c->n)); break;
    }
    float *got = malloc(ny * 4), *gx = malloc(nx * 4);
    CU_ASSERT_FATAL(got && gx);
    TH_OK(tt_read(be, got, tt_mem_of(y), ny * 4));
    TH_OK(tt_read(be, gx, tt_mem_of(x), nx * 4));
    CU_ASSERT(memcmp(gx, c->x, nx * 4) == 0); /* x is only read */
    free(gx);
    tt_buffer_free(y);
    tt_buffer_free(x);
    return got;
}

static void reference(const op_case *c, int which, float *want)
{
    memcpy(want, c->y, (c->off_y + c->n + PAD) * 4);
    float *y = want + c->off_y;
    const float *x = c->x + c->off_x;
    for (size_t i = 0; i < c->n; i++) {
        if (which == 0) y[i] = -1.25f;
        else if (which == 1) y[i] *= 0.3f;
        else if (which == 2) y[i] += -0.7f * x[i];
        else y[i] = x[i];
    }
}

/* axpy: the shader never fuses (`precise`), so it equals C bit for bit;
 * OpenCL C allows contraction and PoCL fuses when it vectorises, so there
 * the two differ by at most one rounding of the terms (as in
 * test_util_ops.c), and nothing outside the range may differ. */
static int close_to_fused(const op_case *c, const float *got, const float *got_cl)
{
    size_t ny = c->off_y + c->n + PAD;
    for (size_t i = 0; i < ny; i++) {
        int inside = i >= c->off_y && i < c->off_y + c->n;
        if (!inside && memcmp(&got[i], &got_cl[i], 4) != 0) return 0;
        double terms = fabs(c->y[i]) + (inside ? fabs(0.7 * c->x[c->off_x + i - c->off_y]) : 0);
        if (inside && fabs((double)got[i] - got_cl[i]) > 1.3e-7 * terms) return 0;
    }
    return 1;
}

static void test_util_ops(void)
{
    static const char *const names[] = {"fill", "scale", "axpy", "copy"};
    static const size_t sizes[] = {1, 63, 64, 65, 1000, 4097, 65537};
    static const size_t offsets[][2] = {{0, 0}, {3, 17}, {1001, 2}};
    tt_backend *be = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    uint64_t seed = 7;
    int cases = 0, fused_cl = 0;
    for (int variant = 0; variant < 2; variant++) { /* CPUs: fill_w8, then the scalar fill */
        th_setenv("TT_CONV_DIRECT_VARIANT", variant ? "scalar" : NULL);
        for (int which = 0; which < (variant ? 1 : 4); which++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
                for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
                    op_case c = {sizes[k], offsets[o][0], offsets[o][1], NULL, NULL};
                    size_t ny = c.off_y + c.n + PAD, nx = c.off_x + c.n + PAD;
                    c.y = malloc(ny * 4);
                    c.x = malloc(nx * 4);
                    float *want = malloc(ny * 4);
                    CU_ASSERT_FATAL(c.y && c.x && want);
                    th_fill_uniform(c.y, ny, -3, 3, &seed);
                    th_fill_uniform(c.x, nx, -3, 3, &seed);
                    reference(&c, which, want);
                    float *got = run_op(be, &c, which), *got_cl = run_op(cl, &c, which);
                    int same_c = memcmp(got, want, ny * 4) == 0;
                    int same_cl = memcmp(got, got_cl, ny * 4) == 0;
                    if (which == 2 && !same_cl) { /* OpenCL may fuse: see close_to_fused */
                        same_cl = close_to_fused(&c, got, got_cl);
                        fused_cl++;
                    }
                    if (!same_c || !same_cl)
                        printf("\n    %s n=%zu offsets %zu/%zu: %s\n", names[which], c.n, c.off_y,
                               c.off_x, same_c ? "differs from OpenCL" : "differs from C");
                    CU_ASSERT(same_c && same_cl);
                    free(got), free(got_cl), free(want), free(c.y), free(c.x);
                    cases++;
                }
    }
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
    printf("\n    fill (both kernels), scale, axpy, copy: %d cases bitwise equal to C, and to "
           "OpenCL but for %d axpy cases where OpenCL fused the multiply-add\n",
           cases, fused_cl);
    no_messages();
}

/* ---- launch conventions ------------------------------------------------ */

static void test_launch_conventions(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { N = 100 };
    tt_buffer *out = alloc(be, (N + 9) * 4, "out");
    float got[N];
    /* a constant from the options (an unused define is ignored, a repeated
     * one takes its last value), TT_LOCAL0
     * from a TT_ARG_LOCAL, the work-group size from `local` */
    size_t global[1] = {N}, local[1] = {8};
    tt_mem at = tt_mem_f32(tt_mem_of(out), 9);
    const char *options = "-DTT_PROBE_VALUE=5 -DTT_UNUSED=3 -DTT_PROBE_VALUE=7";
    TH_OK(tt_launch_kernel(be, "vktest", "probe", options, 1, global, local,
                           TT_ARGS(tt_arg_mem(at), tt_arg_local(400), tt_arg_i32(N))));
    TH_OK(tt_read(be, got, at, sizeof got));
    int right = 1;
    for (int i = 0; i < N; i++) right &= got[i] == 7 + 100 * 1000 + 8 * 1000000;
    CU_ASSERT(right);
    expect_error(tt_launch_kernel(be, "vktest", "probe", "-DTT_PROBE_VALUE", 1, global, local,
                                  TT_ARGS(tt_arg_mem(at), tt_arg_local(400), tt_arg_i32(N))),
                 TT_ERR_INVALID_ARGUMENT, "vktest/probe", "-DNAME=integer");
    /* a TT_ARG_LOCAL the shader does not size */
    expect_error(tt_launch_kernel(be, "util", "fill", NULL, 1, global, NULL,
                                  TT_ARGS(tt_arg_mem(at), tt_arg_f32(1), tt_arg_i32(N),
                                          tt_arg_local(64))),
                 TT_ERR_INVALID_ARGUMENT, "util/fill", "TT_LOCAL0");
    /* 17 uint64 scalars: 136 bytes of push constants */
    tt_arg many[18];
    many[0] = tt_arg_mem(at);
    for (int i = 1; i < 18; i++) many[i] = tt_arg_u64((uint64_t)i);
    expect_error(tt_launch_kernel(be, "util", "fill", NULL, 1, global, NULL, 18, many),
                 TT_ERR_UNSUPPORTED, "util/fill", "push constants");
    tt_buffer_free(out);

    /* a 1-D launch of more work-groups than x allows is folded into rows */
    const VkPhysicalDeviceLimits *lim = &((tt_vk_backend *)be->impl)->properties.limits;
    size_t n = (size_t)lim->maxComputeWorkGroupCount[0] + 1000;
    tt_buffer *big = alloc(be, (n + 2) * 4, "big");
    TH_OK(tt_fill(be, tt_mem_of(big), 0.0f, n + 2));
    size_t g[1] = {n}, one[1] = {1};
    TH_OK(tt_launch_kernel(be, "util", "fill", NULL, 1, g, one,
                           TT_ARGS(tt_arg_mem(tt_mem_f32(tt_mem_of(big), 1)), tt_arg_f32(2.5f),
                                   tt_arg_i32((int)n))));
    float *host = malloc((n + 2) * 4);
    CU_ASSERT_FATAL(host != NULL);
    TH_OK(tt_read(be, host, tt_mem_of(big), (n + 2) * 4));
    int filled = host[0] == 0.0f && host[n + 1] == 0.0f;
    for (size_t i = 1; i <= n; i++) filled &= host[i] == 2.5f;
    CU_ASSERT(filled);
    free(host);
    tt_buffer_free(big);
    no_messages();
}

/* A buffer larger than one binding can address: launches that may reach
 * past the range are refused by name; one near the end runs. */
static void test_binding_range(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const VkPhysicalDeviceLimits *lim = &((tt_vk_backend *)be->impl)->properties.limits;
    size_t bytes = (size_t)lim->maxStorageBufferRange + 4096;
    if (bytes > be->device.max_alloc_bytes) {
        printf("\n    skipped: maxStorageBufferRange is the largest allocation\n");
        return;
    }
    tt_buffer *b = alloc(be, bytes, "large");
    expect_error(tt_fill(be, tt_mem_of(b), 1.0f, 16), TT_ERR_UNSUPPORTED, "util/fill",
                 "maxStorageBufferRange");
    tt_mem tail = tt_mem_at(tt_mem_of(b), bytes - 1024);
    TH_OK(tt_fill(be, tail, 3.0f, 256));
    float got[256];
    TH_OK(tt_read(be, got, tail, sizeof got));
    int right = 1;
    for (int i = 0; i < 256; i++) right &= got[i] == 3.0f;
    CU_ASSERT(right);
    size_t global[1] = {1};
    expect_error(tt_launch_kernel(be, "util", "scale", NULL, 1, global, NULL,
                                  TT_ARGS(tt_arg_mem(tt_mem_at(tt_mem_of(b), bytes)),
                                          tt_arg_f32(1), tt_arg_i32(1))),
                 TT_ERR_INVALID_ARGUMENT, "util/scale", "past the end");
    tt_buffer_free(b);
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

/* The pipeline cache on disk: written at close, loaded by the next backend
 * on the device, and a corrupt file ignored and rewritten. */
static void test_pipeline_cache(void)
{
    char dir[] = "/tmp/tt_vkcache_XXXXXX", file[1024] = "";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const char *was = getenv("TT_CACHE_DIR");
    char *old = was ? strdup(was) : NULL;
    th_setenv("TT_CACHE_DIR", dir);
    for (int round = 0; round < 4; round++) {
        tt_backend *be = NULL;
        TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN,
                                                      .device = "llvmpipe"},
                                &be));
        tt_vk_backend *vk = be->impl;
        /* 0: no file yet; 1: the file of round 0; 2: a corrupt one; 3: rewritten */
        CU_ASSERT_EQUAL(vk->cache_loaded, round == 1 || round == 3);
        CU_ASSERT(strstr(vk->cache_file, "/pipelines/vulkan-") != NULL);
        snprintf(file, sizeof file, "%s", vk->cache_file);
        tt_buffer *b = alloc(be, 8 * 4, "b");
        float got[8];
        TH_OK(tt_fill(be, tt_mem_of(b), 6.0f, 8));
        TH_OK(tt_read(be, got, tt_mem_of(b), sizeof got));
        CU_ASSERT(got[0] == 6.0f && got[7] == 6.0f);
        tt_buffer_free(b);
        TH_OK(tt_finish(be));
        CU_ASSERT_EQUAL(vk->messages.count, 0);
        tt_backend_destroy(be);
        FILE *f = fopen(file, round == 1 ? "r+b" : "rb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fseek(f, 0, SEEK_END);
        CU_ASSERT(ftell(f) >= 32);
        if (round == 1) { /* another driver's cache UUID */
            fseek(f, 20, SEEK_SET);
            fputs("corrupt!", f);
        }
        fclose(f);
    }
    th_setenv("TT_CACHE_DIR", old);
    free(old);
    unlink(file);
    char *slash = strrchr(file, '/');
    if (slash) *slash = '\0';
    rmdir(file);
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
        {"fill/scale/axpy/copy against C and OpenCL", test_util_ops},
        {"constants, push constants, folded launches", test_launch_conventions},
        {"binding range", test_binding_range},
        {"unknown shaders and TT_SHADER_DIR", test_shader_sources},
        {"pipeline cache on disk", test_pipeline_cache},
        {"memory accounting", test_accounting},
        {"errors and validation messages", test_errors},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan", tests);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
