/* Building kernels ahead (tt_backend_prepare_begin/_end, backend.h): while
 * preparing, launches, GEMMs, writes, copies and reads run nothing; _end
 * builds each noted program (OpenCL) or pipeline (Vulkan) once; the real
 * launches after it are memory hits with the right results; a kernel that
 * cannot be built fails at its real launch, not at _end.  The options
 * -DTT_TEST_PREPARE=n make keys no other test builds (Vulkan ignores a
 * define its shader does not declare). */
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/util.h"

enum { N = 1031 };

static tt_status fill(tt_backend *be, tt_buffer *y, const char *options, float value)
{
    size_t n = N;
    return tt_launch_kernel(be, "util", "fill", options, 1, &n, NULL,
                            TT_ARGS(tt_arg_mem(tt_mem_of(y)), tt_arg_f32(value), tt_arg_i32(N)));
}

static tt_status scale(tt_backend *be, tt_buffer *y, const char *options, float by)
{
    size_t n = N;
    return tt_launch_kernel(be, "util", "scale", options, 1, &n, NULL,
                            TT_ARGS(tt_arg_mem(tt_mem_of(y)), tt_arg_f32(by), tt_arg_i32(N)));
}

static void test_prepare_runs_nothing_then_builds(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float x[N], h[N], zeros[N] = {0};
    uint64_t seed = 3;
    th_fill_uniform(x, N, -2, 2, &seed);
    tt_buffer *y = th_upload(x, N, "y"), *z = th_upload(x, N, "z");
    TH_OK(tt_finish(be));
    int built = be->programs.built_from_source + be->programs.loaded_from_disk;
    int hits = be->programs.memory_hits;

    tt_backend_prepare_begin(be);
    TH_OK(fill(be, y, "-DTT_TEST_PREPARE=1", 7.0f));
    TH_OK(scale(be, y, "-DTT_TEST_PREPARE=1", 2.0f));
    TH_OK(fill(be, y, "-DTT_TEST_PREPARE=1", 8.0f)); /* noted once */
    TH_OK(fill(be, y, "-DTT_TEST_PREPARE=2", 9.0f));
    TH_OK(tt_write(be, tt_mem_of(y), zeros, sizeof zeros));
    TH_OK(tt_copy(be, tt_mem_of(z), tt_mem_of(y), sizeof x));
    tt_gemm g = {.m = 1, .n = 1, .k = 1, .alpha = 1, .a = tt_mem_of(y), .lda = 1,
                 .b = tt_mem_of(y), .ldb = 1, .c = tt_mem_of(z), .ldc = 1};
    TH_OK(tt_gemm_run(be, &g));
    memcpy(h, x, sizeof h);
    h[0] = -99.0f;
    TH_OK(tt_read(be, h, tt_mem_of(y), sizeof h));
    CU_ASSERT_EQUAL(h[0], -99.0f); /* the read left its destination as it was */
    TH_OK(tt_finish(be));
    CU_ASSERT_EQUAL(be->programs.built_from_source + be->programs.loaded_from_disk, built);
    TH_OK(tt_backend_prepare_end(be));

    /* OpenCL builds a program per (file, options), Vulkan a pipeline per kernel */
    int want = be->kernels_of == TT_BACKEND_VULKAN ? 3 : 2;
    CU_ASSERT_EQUAL(be->programs.built_from_source + be->programs.loaded_from_disk,
                    built + want);
    CU_ASSERT_EQUAL(be->programs.memory_hits, hits);
    th_download(h, y, N);
    CU_ASSERT(memcmp(h, x, sizeof h) == 0); /* nothing ran */
    th_download(h, z, N);
    CU_ASSERT(memcmp(h, x, sizeof h) == 0);

    TH_OK(fill(be, y, "-DTT_TEST_PREPARE=1", 7.0f));
    TH_OK(scale(be, y, "-DTT_TEST_PREPARE=1", 2.0f));
    TH_OK(fill(be, z, "-DTT_TEST_PREPARE=2", 9.0f));
    CU_ASSERT_EQUAL(be->programs.built_from_source + be->programs.loaded_from_disk,
                    built + want);
    CU_ASSERT_EQUAL(be->programs.memory_hits, hits + 3);
    th_download(h, y, N);
    int exact = 1;
    for (int i = 0; i < N; i++) exact &= h[i] == 14.0f;
    CU_ASSERT(exact);
    th_download(h, z, N);
    for (int i = 0; i < N; i++) exact &= h[i] == 9.0f;
    CU_ASSERT(exact);
    tt_buffer_free(y);
    tt_buffer_free(z);
}

/* A kernel whose build fails while preparing is dropped; its real launch
 * builds it again and reports why. */
static void test_failed_build_reported_at_launch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *y = th_zeros(N, "y");
    size_t n = N;
    tt_backend_prepare_begin(be);
    TH_OK(tt_launch_kernel(be, "no_such_program", "k", NULL, 1, &n, NULL,
                           TT_ARGS(tt_arg_mem(tt_mem_of(y)))));
    TH_OK(tt_backend_prepare_end(be));
    tt_status s = tt_launch_kernel(be, "no_such_program", "k", NULL, 1, &n, NULL,
                                   TT_ARGS(tt_arg_mem(tt_mem_of(y))));
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT(s && strstr(tt_status_message(s), "no_such_program") != NULL);
    tt_status_free(s);
    tt_buffer_free(y);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"preparing runs nothing; _end builds each kernel once", test_prepare_runs_nothing_then_builds},
        {"a build that fails ahead fails at its launch", test_failed_build_reported_at_launch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("prepare", tests, TH_EVERY);
}
