/* Tensors larger than one storage binding on the Vulkan backend (lavapipe,
 * validation on): a launch whose buffer continues past
 * maxStorageBufferRange (128 MiB) runs the addressed shader variant
 * (buffers by device address, shaders/common.glsl), one whose buffers all
 * fit the bound variant; without device addresses the launch is refused by
 * name.  A 160 MiB buffer goes through fill, copy and axpy at offsets near
 * its start and past 128 MiB, one of them mixed with a small buffer, and a
 * max pooling with three buffers reads a 151 MiB input; results are checked
 * on the host at boundaries and at sampled places. */
#include <stdlib.h>
#include <string.h>

#include "ops/max_pool2d.h"
#include "ops/util.h"
#include "test_vulkan.h"

/* 40 Mi floats: 160 MiB, past lavapipe's 128 MiB binding, far below its
 * 2 GiB heap. */
#define BIG ((size_t)40 << 20)
/* The places used: A near the start, P and Q past 128 MiB (32 Mi floats);
 * odd, so the offsets are not aligned to minStorageBufferOffsetAlignment. */
#define A ((size_t)1001)
#define P (((size_t)36 << 20) + 7)
#define W (((size_t)1 << 20) + 5)
#define SMALL ((size_t)1 << 16)

static tt_vk_backend *impl(tt_backend *be) { return be->impl; }

/* The dispatches recorded with each variant since the last call. */
typedef struct counts {
    uint64_t bound, addressed;
} counts;
static counts since(tt_backend *be, counts *last)
{
    counts now = {impl(be)->bound_dispatches, impl(be)->addressed_dispatches};
    counts d = {now.bound - last->bound, now.addressed - last->addressed};
    *last = now;
    return d;
}

/* Skips (printing why) where one binding reaches the whole buffer. */
static int big_exceeds_binding(tt_backend *be)
{
    if (BIG * 4 <= impl(be)->properties.limits.maxStorageBufferRange ||
        BIG * 4 > be->device.max_alloc_bytes) {
        printf("\n    skipped: one binding reaches %zu bytes, or they cannot be allocated\n",
               BIG * 4);
        return 0;
    }
    return 1;
}

static void test_device_info(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    /* lavapipe has buffer device addresses: kernels reach whole allocations */
    CU_ASSERT(impl(be)->addresses);
    CU_ASSERT_EQUAL(be->device.max_binding_bytes, be->device.max_alloc_bytes);
    CU_ASSERT(be->device.max_binding_bytes > impl(be)->properties.limits.maxStorageBufferRange);
    no_messages();
}

/* What the large buffer holds after test_util_ops's launches. */
static float expected(size_t i)
{
    if (i >= A && i < A + W) return 3.0f;     /* 2, then += 0.5 * 2 */
    if (i >= P && i < P + W) return 2.0f;     /* copied from A */
    if (i >= BIG - SMALL) return 5.0f;        /* the tail: bound */
    return 1.0f;
}

static void test_util_ops(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    if (!big_exceeds_binding(be)) return;
    tt_buffer *big = alloc(be, BIG * 4, "big"), *small = alloc(be, SMALL * 4, "small");
    tt_mem at_a = tt_mem_f32(tt_mem_of(big), A), at_p = tt_mem_f32(tt_mem_of(big), P);
    counts c = {0}, d;
    since(be, &c);
    TH_OK(tt_fill(be, tt_mem_of(big), 1.0f, BIG));
    TH_OK(tt_fill(be, at_a, 2.0f, W));
    d = since(be, &c);
    CU_ASSERT(d.addressed == 2 && d.bound == 0);
    /* x near the start: addressed, so y past 128 MiB is reached by address too */
    TH_OK(tt_copy_f32(be, at_p, at_a, W));
    TH_OK(tt_axpy(be, at_a, at_p, 0.5f, W));
    d = since(be, &c);
    CU_ASSERT(d.addressed == 2 && d.bound == 0);
    /* the tail: the rest of the buffer fits a binding */
    TH_OK(tt_fill(be, tt_mem_f32(tt_mem_of(big), BIG - SMALL), 5.0f, SMALL));
    d = since(be, &c);
    CU_ASSERT(d.addressed == 0 && d.bound == 1);

    float *host = malloc(BIG * 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    TH_OK(tt_read(be, host, tt_mem_of(big), BIG * 4));
    const size_t edges[] = {0,         A - 1,     A,          A + W - 1,   A + W,
                            P - 1,     P,         P + W - 1,  P + W,       ((size_t)32 << 20) - 1,
                            (size_t)32 << 20,     BIG - SMALL - 1,        BIG - SMALL, BIG - 1};
    int wrong = 0;
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
        if (host[edges[e]] != expected(edges[e])) {
            if (wrong++ < 5)
                printf("\n    big[%zu] = %g, not %g", edges[e], host[edges[e]], expected(edges[e]));
        }
    uint64_t seed = 3;
    for (int s = 0; s < 100000; s++) {
        size_t i = (size_t)th_uniform(&seed, 0, (double)BIG);
        if (host[i] != expected(i) && wrong++ < 5)
            printf("\n    big[%zu] = %g, not %g", i, host[i], expected(i));
    }
    CU_ASSERT_EQUAL(wrong, 0);

    /* mixed: a small y that fits a binding, an x that does not */
    TH_OK(tt_fill(be, tt_mem_of(small), 0.25f, SMALL));
    TH_OK(tt_axpy(be, tt_mem_f32(tt_mem_of(small), 3), at_a, 2.0f, SMALL - 6));
    d = since(be, &c);
    CU_ASSERT(d.bound == 1 && d.addressed == 1);
    TH_OK(tt_read(be, host, tt_mem_of(small), SMALL * 4));
    int mixed = host[0] == 0.25f && host[2] == 0.25f && host[SMALL - 3] == 0.25f;
    for (size_t i = 3; i < SMALL - 3; i++) mixed &= host[i] == 6.25f;
    CU_ASSERT(mixed);
    free(host);
    tt_buffer_free(small);
    tt_buffer_free(big);
    no_messages();
}

/* Max pooling (three buffers: out, argmax, inp) of a 16 x 1536 x 1536
 * input, 151 MiB: every output checked against the host's window maximum
 * at sampled places and the corners. */
static float pattern(size_t i) { return (float)((i * 2654435761u) >> 12 & 0xfffff); }

static void test_pool_forward(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const int C = 16, H = 1536, Wd = 1536, OH = H / 2, OW = Wd / 2;
    size_t n_in = (size_t)C * H * Wd, n_out = (size_t)C * OH * OW;
    if (n_in * 4 <= impl(be)->properties.limits.maxStorageBufferRange) return;
    float *x = malloc(n_in * 4), *out = malloc(n_out * 4);
    int *arg = malloc(n_out * 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x && out && arg);
    for (size_t i = 0; i < n_in; i++) x[i] = pattern(i);
    tt_buffer *inp = alloc(be, n_in * 4, "inp"), *o = alloc(be, n_out * 4, "out"),
              *am = alloc(be, n_out * 4, "argmax");
    TH_OK(tt_write(be, tt_mem_of(inp), x, n_in * 4));
    counts c = {0};
    since(be, &c);
    tt_pool2d_desc desc = tt_pool2d_square(1, C, H, Wd, 2, 2);
    TH_OK(tt_max_pool2d_forward(be, tt_mem_of(o), tt_mem_of(am), tt_mem_of(inp), &desc));
    counts d = since(be, &c);
    CU_ASSERT(d.addressed >= 1);
    TH_OK(tt_read(be, out, tt_mem_of(o), n_out * 4));
    TH_OK(tt_read(be, arg, tt_mem_of(am), n_out * 4));
    uint64_t seed = 5;
    int wrong = 0;
    for (int s = 0; s < 20000; s++) {
        size_t j = s < 2 ? (s ? n_out - 1 : 0) : (size_t)th_uniform(&seed, 0, (double)n_out);
        size_t plane = j / ((size_t)OH * OW), oy = j / OW % OH, ox = j % OW;
        const float *p = x + plane * H * Wd;
        float best = -1;
        int at = -1;
        for (int ky = 0; ky < 2; ky++)
            for (int kx = 0; kx < 2; kx++) {
                int k = (int)(2 * oy + ky) * Wd + (int)(2 * ox + kx);
                if (p[k] > best) best = p[k], at = k;
            }
        if ((out[j] != best || arg[j] != at) && wrong++ < 5)
            printf("\n    out[%zu] = %g at %d, not %g at %d", j, out[j], arg[j], best, at);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    free(x), free(out), free(arg);
    tt_buffer_free(inp), tt_buffer_free(o), tt_buffer_free(am);
    no_messages();
}

/* Small tensors keep the bound variant; TT_VULKAN_ADDRESSED=1 addresses
 * every launch (same results); =0 does without addresses, as a device
 * that lacks them: the binding limit is back, and a launch that may reach
 * past it is refused by name. */
static void test_variants(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *b = alloc(be, 1000 * 4, "b");
    counts c = {0}, d;
    since(be, &c);
    TH_OK(tt_fill(be, tt_mem_of(b), 1.0f, 1000));
    d = since(be, &c);
    CU_ASSERT(d.bound == 1 && d.addressed == 0);
    tt_buffer_free(b);
    no_messages();

    for (int knob = 0; knob < 2; knob++) {
        th_setenv("TT_VULKAN_ADDRESSED", knob ? "1" : "0");
        tt_backend *other = NULL;
        TH_OK(tt_backend_create(
            &(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"}, &other));
        th_setenv("TT_VULKAN_ADDRESSED", NULL);
        tt_vk_backend *vk = impl(other);
        CU_ASSERT_EQUAL(vk->addresses, knob);
        uint64_t range = vk->properties.limits.maxStorageBufferRange;
        CU_ASSERT_EQUAL(other->device.max_binding_bytes,
                        knob ? other->device.max_alloc_bytes : range);
        tt_buffer *s = alloc(other, 1000 * 4, "s");
        float got[998];
        TH_OK(tt_fill(other, tt_mem_of(s), 0.0f, 1000));
        TH_OK(tt_fill(other, tt_mem_f32(tt_mem_of(s), 1), 7.0f, 998));
        TH_OK(tt_read(other, got, tt_mem_f32(tt_mem_of(s), 1), sizeof got));
        int right = 1;
        for (int i = 0; i < 998; i++) right &= got[i] == 7.0f;
        CU_ASSERT(right);
        CU_ASSERT_EQUAL(vk->addressed_dispatches, knob ? 2u : 0u);
        CU_ASSERT_EQUAL(vk->bound_dispatches, knob ? 0u : 2u);
        tt_buffer_free(s);
        if (!knob && range + 4096 <= other->device.max_alloc_bytes) {
            size_t bytes = (size_t)range + 4096;
            tt_buffer *large = alloc(other, bytes, "large");
            expect_error(tt_fill(other, tt_mem_f32(tt_mem_of(large), 3), 1.0f, 16),
                         TT_ERR_UNSUPPORTED, "util/fill", "bufferDeviceAddress");
            TH_OK(tt_fill(other, tt_mem_at(tt_mem_of(large), bytes - 1024), 3.0f, 256));
            tt_buffer_free(large);
        }
        TH_OK(tt_finish(other));
        CU_ASSERT_EQUAL(vk->messages.count, 0);
        tt_backend_destroy(other);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"device addresses: kernels reach whole allocations", test_device_info},
        {"fill/copy/axpy on 160 MiB, near the start and past 128 MiB, mixed", test_util_ops},
        {"max pooling of a 151 MiB input (three buffers)", test_pool_forward},
        {"bound for small tensors; TT_VULKAN_ADDRESSED=1 and =0", test_variants},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_address", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    return rc;
}
