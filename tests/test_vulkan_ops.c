/* Ops and launch conventions on the Vulkan backend (lavapipe, validation
 * on): the utility ops (src/ops/util.c) against plain C and, bit for bit,
 * against the OpenCL backend, at sizes across work-group boundaries and at
 * byte offsets; specialization constants from options and TT_ARG_LOCAL;
 * push constants and their limit; 1-D launches folded into rows; bindings
 * at offsets and the maxStorageBufferRange limit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/util.h"
#include "test_vulkan.h"

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
        force_both((tt_forced_variants){.w8 = variant ? TT_VARIANT_OFF : TT_VARIANT_DEVICE});
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
    force_both((tt_forced_variants){0});
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
 * past the range run by device address (test_vulkan_address.c) or, on a
 * device without addresses, are refused by name; one near the end runs. */
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
    if (((tt_vk_backend *)be->impl)->addresses) TH_OK(tt_fill(be, tt_mem_of(b), 1.0f, 16));
    else
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

int main(void)
{
    CU_TestInfo tests[] = {
        {"fill/scale/axpy/copy against C and OpenCL", test_util_ops},
        {"constants, push constants, folded launches", test_launch_conventions},
        {"binding range", test_binding_range},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_ops", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
