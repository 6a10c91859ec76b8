/* Profiling on the Vulkan backend (src/backend/vulkan/vk_profile.c), on
 * lavapipe with the validation layer on and no message allowed: timestamp
 * queries around every dispatch give backend->profile the same records as
 * OpenCL's profiling events (kinds per phase and op family, or per kernel;
 * launch counts; durations), across submissions (a read, a full batch of
 * dispatches, finish); the dispatches' timestamps follow their order; the
 * results are the same as without profiling; a device without timestamps
 * is refused with a message that says so. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/util.h"
#include "test_vulkan.h"

/* A profiling backend on lavapipe (validation on, per test_vulkan.h). */
static tt_backend *profiling_backend(int by_kernel)
{
    th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN,
                                                  .device = "llvmpipe",
                                                  .profiling = 1},
                            &be));
    if (be) {
        CU_ASSERT_PTR_NOT_NULL(be->profile);
        if (be->profile) be->profile->by_kernel = by_kernel;
    }
    return be;
}

/* Finishes `be`, checks that validation said nothing, destroys it. */
static void done(tt_backend *be)
{
    TH_OK(tt_finish(be));
    tt_vk_messages *m = &((tt_vk_backend *)be->impl)->messages;
    CU_ASSERT(m->enabled);
    CU_ASSERT_EQUAL(m->count, 0);
    tt_backend_destroy(be);
}

/* The index of `kind` in the profile; -1 when absent. */
static int kind_index(const tt_profile *p, const char *kind)
{
    for (int k = 0; k < p->count; k++)
        if (strcmp(p->kind[k], kind) == 0) return k;
    return -1;
}

/* Every kind has a finite, positive time. */
static void all_timed(const tt_profile *p)
{
    for (int k = 0; k < p->count; k++) {
        int ok = isfinite(p->seconds[k]) && p->seconds[k] > 0 && p->seconds[k] < 60;
        if (!ok) printf("\n    kind %s: %g s over %llu launches\n", p->kind[k], p->seconds[k],
                        (unsigned long long)p->launches[k]);
        CU_ASSERT(ok);
    }
}

static void fill(tt_backend *be, tt_buffer *b, float value, int n)
{
    TH_OK(TT_LAUNCH_1D(be, "util", "fill", (size_t)n, tt_arg_mem(tt_mem_of(b)),
                       tt_arg_f32(value), tt_arg_i32(n)));
}

/* Kernels by name, per phase, in the order of their first launch. */
static void test_by_kernel(void)
{
    enum { N = 4096 };
    tt_backend *be = profiling_backend(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *x = alloc(be, N * sizeof(float), "x"), *y = alloc(be, N * sizeof(float), "y");
    tt_backend_phase(be, "forward");
    fill(be, x, 1.5f, N);
    fill(be, y, 2.0f, N);
    TH_OK(tt_scale(be, tt_mem_of(x), 2.0f, N));
    tt_backend_phase(be, "backward");
    TH_OK(tt_axpy(be, tt_mem_of(y), tt_mem_of(x), 0.5f, N));
    fill(be, x, 0.0f, N);
    TH_OK(tt_finish(be));
    const tt_profile *p = be->profile;
    CU_ASSERT_EQUAL_FATAL(p->count, 4);
    const char *want[] = {"forward/fill", "forward/scale", "backward/axpy", "backward/fill"};
    const uint64_t launches[] = {2, 1, 1, 1};
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_STRING_EQUAL(p->kind[k], want[k]);
        CU_ASSERT_EQUAL(p->launches[k], launches[k]);
    }
    all_timed(p);
    /* the results do not change with profiling */
    float got[N];
    TH_OK(tt_read(be, got, tt_mem_of(y), sizeof got));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != 3.5f;
    CU_ASSERT_EQUAL(wrong, 0);
    tt_buffer_free(x);
    tt_buffer_free(y);
    done(be);
}

/* Op families, as bench shows them: util, and GEMM (shaders/blas) as conv
 * work, like CLBlast's GEMM on OpenCL; a launch before any phase is
 * "other". */
static void test_by_family(void)
{
    enum { M = 19, K = 23, P = 17 };
    tt_backend *be = profiling_backend(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = alloc(be, M * K * sizeof(float), "a"), *b = alloc(be, K * P * sizeof(float), "b");
    tt_buffer *c = alloc(be, M * P * sizeof(float), "c");
    fill(be, a, 1.0f, M * K);
    tt_backend_phase(be, "loss");
    fill(be, b, 0.5f, K * P);
    tt_gemm g = {.m = M, .n = P, .k = K, .alpha = 1.0f, .beta = 0.0f, .a = tt_mem_of(a),
                 .lda = K, .b = tt_mem_of(b), .ldb = P, .c = tt_mem_of(c), .ldc = P};
    TH_OK(tt_gemm_run(be, &g));
    TH_OK(tt_gemm_run(be, &g));
    TH_OK(tt_finish(be));
    const tt_profile *p = be->profile;
    CU_ASSERT_EQUAL(p->count, 3);
    CU_ASSERT_EQUAL(kind_index(p, "other/util"), 0);
    CU_ASSERT_EQUAL(kind_index(p, "loss/util"), 1);
    int gemm = kind_index(p, "loss/conv");
    CU_ASSERT_EQUAL_FATAL(gemm, 2);
    CU_ASSERT_EQUAL(p->launches[gemm], 2);
    all_timed(p);
    float got[M * P];
    TH_OK(tt_read(be, got, tt_mem_of(c), sizeof got));
    CU_ASSERT_DOUBLE_EQUAL(got[0], 0.5 * K, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(got[M * P - 1], 0.5 * K, 1e-5);
    tt_buffer_free(a);
    tt_buffer_free(b);
    tt_buffer_free(c);
    done(be);
}

/* More dispatches than one submission holds (the batch), and reads in
 * between: every dispatch is counted once, the query pool is reused, and
 * within a submission each dispatch starts after the one before ended. */
static void test_across_submissions(void)
{
    enum { N = 64, DISPATCHES = TT_VK_BATCH + 44 };
    tt_backend *be = profiling_backend(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *x = alloc(be, N * sizeof(float), "x");
    tt_backend_phase(be, "optimizer");
    float got[N];
    for (int i = 0; i < DISPATCHES; i++) {
        fill(be, x, (float)i, N);
        if (i == 10) TH_OK(tt_read(be, got, tt_mem_of(x), sizeof got)); /* a submission */
    }
    CU_ASSERT_EQUAL(got[N - 1], 10.0f);
    TH_OK(tt_read(be, got, tt_mem_of(x), sizeof got));
    CU_ASSERT_EQUAL(got[0], (float)(DISPATCHES - 1));
    const tt_profile *p = be->profile;
    CU_ASSERT_EQUAL_FATAL(p->count, 1);
    CU_ASSERT_STRING_EQUAL(p->kind[0], "optimizer/fill");
    CU_ASSERT_EQUAL(p->launches[0], DISPATCHES);
    all_timed(p);

    /* the last submission's timestamps, in the order recorded */
    tt_vk_profiler *prof = &((tt_vk_backend *)be->impl)->profiler;
    CU_ASSERT_EQUAL(prof->used, 0); /* read back */
    tt_backend_phase(be, "last");
    for (int i = 0; i < 5; i++) fill(be, x, 1.0f, N);
    CU_ASSERT_EQUAL(prof->used, 10);
    TH_OK(tt_finish(be));
    int ordered = 1;
    for (int q = 0; q + 1 < 10; q++) ordered &= prof->ticks[q] <= prof->ticks[q + 1];
    CU_ASSERT(ordered);
    CU_ASSERT_EQUAL(p->launches[kind_index(p, "last/fill")], 5);
    tt_buffer_free(x);
    done(be);
}

/* Without profiling: no profile, no query pool, no timestamps recorded. */
static void test_off(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_PTR_NULL(be->profile);
    tt_vk_profiler *prof = &((tt_vk_backend *)be->impl)->profiler;
    CU_ASSERT(prof->pool == VK_NULL_HANDLE);
    tt_buffer *x = alloc(be, 64 * sizeof(float), "x");
    fill(be, x, 1.0f, 64);
    CU_ASSERT_EQUAL(prof->used, 0);
    tt_buffer_free(x);
    no_messages();
}

/* A queue without timestamps (or a device without a period) cannot
 * profile: the error names the device, the limit and what to do. */
static void test_no_timestamps(void)
{
    TH_OK(tt_vk_timestamps_check("llvmpipe", 64, 1.0f));
    TH_OK(tt_vk_timestamps_check("some gpu", 36, 52.08f));
    expect_error(tt_vk_timestamps_check("some gpu", 0, 1.0f), TT_ERR_UNSUPPORTED,
                 "'some gpu'", "timestampValidBits 0");
    expect_error(tt_vk_timestamps_check("some gpu", 0, 1.0f), TT_ERR_UNSUPPORTED,
                 "cannot profile", "--backend opencl");
    expect_error(tt_vk_timestamps_check("some gpu", 64, 0.0f), TT_ERR_UNSUPPORTED,
                 "no timestamp period", NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"per kernel: names, phases, counts, durations; results unchanged", test_by_kernel},
        {"per op family: util, GEMM as conv, no phase as other", test_by_family},
        {"more dispatches than a batch, reads between; timestamps in order", test_across_submissions},
        {"without profiling: no profile, no queries", test_off},
        {"a device without timestamps is refused, saying so", test_no_timestamps},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_profile", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    return rc;
}
