/* lavapipe (Mesa's gallivm) ends the loops of a shader invocation once they
 * have run 65535 iterations together, silently: blas/gemm summed at most
 * that much of k, so a convolution's weight gradient at a 256 x 256 tile
 * (k = H x W = 65536) came out wrong.  vk_blas.c runs a long k as launches
 * over slices of it; checked here against double-precision C for k past
 * the limit, every transposition, alpha and beta, and a batch of two; and
 * every other sum the host splits under TT_LOOP_BUDGET (docs/backend.md,
 * "loops"), past the limit. */
#include <math.h>
#include <stdlib.h>

#include "ops/conv2d.h"
#include "ops/conv_algo.h"
#include "ops/convt_tiles.h"
#include "ops/util.h"
#include "test_vulkan.h"

/* op(X)[i][p] of a row-major X stored transposed or not, leading dimension ld */
static double at(const float *x, int trans, size_t ld, size_t i, size_t p)
{
    return trans ? x[p * ld + i] : x[i * ld + p];
}

/* A device buffer holding n floats of v. */
static tt_buffer *upload(tt_backend *be, const float *v, size_t n, const char *name)
{
    tt_buffer *b = alloc(be, n * 4, name);
    TH_OK(tt_write(be, tt_mem_of(b), v, n * 4));
    return b;
}

static void check_gemm(int trans_a, int trans_b, size_t k, size_t batch)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const size_t m = 5, n = 11;
    size_t lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
    size_t sa = m * k, sb = k * n, sc = m * n; /* per batch entry */
    float *a = malloc(sa * batch * 4), *b = malloc(sb * batch * 4), *c = malloc(sc * batch * 4);
    float *got = malloc(sc * batch * 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a && b && c && got);
    uint64_t seed = 9;
    th_fill_uniform(a, sa * batch, -1, 1, &seed);
    th_fill_uniform(b, sb * batch, 0, 1, &seed); /* one sign: a sum that grows with k */
    th_fill_uniform(c, sc * batch, -1, 1, &seed);
    tt_buffer *A = upload(be, a, sa * batch, "a"), *B = upload(be, b, sb * batch, "b"),
              *C = upload(be, c, sc * batch, "c");
    const float alpha = 2.0f, beta = 0.5f;
    tt_gemm g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                 .alpha = alpha, .beta = beta,
                 .a = tt_mem_of(A), .lda = lda, .stride_a = sa,
                 .b = tt_mem_of(B), .ldb = ldb, .stride_b = sb,
                 .c = tt_mem_of(C), .ldc = ldc, .stride_c = sc, .batch = batch};
    TH_OK(tt_gemm_run(be, &g));
    TH_OK(tt_read(be, got, tt_mem_of(C), sc * batch * 4));
    double worst = 0;
    for (size_t e = 0; e < batch; e++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double sum = 0, scale = 0;
                for (size_t p = 0; p < k; p++) {
                    double t = at(a + e * sa, trans_a, lda, i, p) *
                               at(b + e * sb, trans_b, ldb, p, j);
                    sum += t, scale += fabs(t);
                }
                double want = alpha * sum + beta * c[e * sc + i * ldc + j];
                double err = fabs(got[e * sc + i * ldc + j] - want) / (alpha * scale + 1);
                worst = err > worst ? err : worst;
            }
    printf("\n    k %zu, trans %d%d, batch %zu: worst error %.1e of the sum of |terms|", k,
           trans_a, trans_b, batch, worst);
    CU_ASSERT(worst < 1e-5);
    free(a), free(b), free(c), free(got);
    tt_buffer_free(A), tt_buffer_free(B), tt_buffer_free(C);
    no_messages();
}

static void test_gemm_long_k(void)
{
    check_gemm(0, 1, 65536, 1);  /* a weight gradient at a 256 x 256 tile */
    check_gemm(0, 0, 100003, 1);
    check_gemm(1, 0, 70001, 2);
    check_gemm(1, 1, 32769, 1);
}

/* relative error of got against a double-precision want, against the sum of |terms| */
static double rel_err(double got, double want, double scale) { return fabs(got - want) / (scale + 1); }

/* The bias gradient sums a channel's batch x plane in one invocation
 * (conv_bias_backward_w8, /8) or one work-group of 64 (conv_bias_backward,
 * /64), as `w8` forces. */
static void check_bias(tt_variant_force w8, size_t batch, size_t channels, size_t plane)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    be->forced.w8 = w8;
    size_t n = batch * channels * plane;
    float *dout = malloc(n * 4), *dbias = malloc(channels * 4), *got = malloc(channels * 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dout && dbias && got);
    uint64_t seed = 5;
    th_fill_uniform(dout, n, 0, 1, &seed); /* one sign: a sum that grows with the plane */
    th_fill_uniform(dbias, channels, -1, 1, &seed);
    tt_buffer *D = upload(be, dout, n, "dout"), *B = upload(be, dbias, channels, "dbias");
    TH_OK(tt_conv_bias_backward(be, tt_mem_of(B), tt_mem_of(D), batch, channels, plane));
    TH_OK(tt_read(be, got, tt_mem_of(B), channels * 4));
    double worst = 0;
    for (size_t c = 0; c < channels; c++) {
        double sum = dbias[c], scale = fabs(dbias[c]);
        for (size_t i = 0; i < batch; i++)
            for (size_t p = 0; p < plane; p++) {
                double t = dout[(i * channels + c) * plane + p];
                sum += t, scale += fabs(t);
            }
        double err = rel_err(got[c], sum, scale);
        worst = err > worst ? err : worst;
    }
    printf("\n    bias gradient (%s), batch %zu x plane %zu: worst error %.1e",
           w8 == TT_VARIANT_ON ? "w8" : "work-group", batch, plane, worst);
    CU_ASSERT(worst < 1e-5);
    be->forced.w8 = TT_VARIANT_DEVICE;
    free(dout), free(dbias), free(got);
    tt_buffer_free(D), tt_buffer_free(B);
    no_messages();
}

static void test_bias_long_plane(void)
{
    check_bias(TT_VARIANT_ON, 1, 3, 1 << 20); /* slices of one plane */
    check_bias(TT_VARIANT_ON, 9, 2, 100003);  /* several images a launch */
    check_bias(TT_VARIANT_ON, 3, 2, 300001);  /* slices of each plane, a tail */
    check_bias(TT_VARIANT_OFF, 2, 1, 2500007); /* past 65535 x 64 */
}

/* The DIRECT weight gradient of one channel pair, a k x k kernel (padding
 * k / 2): conv_direct_backward_weight, whose invocation sums every image's
 * rows (direct_w8's kernels are OpenCL's alone). */
static void check_direct_weight(int k, int batch, int h, int w)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv2d_desc d = {.batch = batch, .in_channels = 1, .in_h = h, .in_w = w,
                        .out_channels = 1, .kernel_h = k, .kernel_w = k, .stride_h = 1,
                        .stride_w = 1, .pad_h = k / 2, .pad_w = k / 2, .dilation_h = 1,
                        .dilation_w = 1, .groups = 1, .algo = TT_CONV_ALGO_DIRECT};
    int pad = k / 2;
    size_t n = (size_t)batch * h * w;
    uint64_t seed = 7;
    float *x = th_random_floats(n, 0, 1, &seed), *dy = th_random_floats(n, 0, 1, &seed);
    float *wt = th_random_floats(9, -1, 1, &seed), *got = malloc(36);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    size_t taps = (size_t)(k * k); /* at most 9 */
    tt_buffer *X = upload(be, x, n, "inp"), *DY = upload(be, dy, n, "dout"),
              *DX = alloc(be, n * 4, "dinp"), *W = upload(be, wt, taps, "weight"),
              *DW = alloc(be, taps * 4, "dweight");
    TH_OK(tt_fill(be, tt_mem_of(DW), 0, taps));
    tt_mem none = {0};
    TH_OK(tt_conv2d_backward(be, tt_mem_of(DX), tt_mem_of(DW), none, tt_mem_of(DY),
                             tt_mem_of(X), tt_mem_of(W), &d, none));
    TH_OK(tt_read(be, got, tt_mem_of(DW), taps * 4));
    double worst = 0;
    for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) {
            double sum = 0;
            for (int i = 0; i < batch; i++)
                for (int y = 0; y < h; y++)
                    for (int c = 0; c < w; c++) {
                        int iy = y - pad + ky, ix = c - pad + kx;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                        sum += (double)dy[((size_t)i * h + y) * w + c] *
                               x[((size_t)i * h + iy) * w + ix];
                    }
            double err = rel_err(got[ky * k + kx], sum, sum); /* terms all positive */
            worst = err > worst ? err : worst;
        }
    printf("\n    %dx%d weight gradient, %d x %d x %d: worst error %.1e", k, k, batch, h, w,
           worst);
    CU_ASSERT(worst < 1e-5);
    free(x), free(dy), free(wt), free(got);
    tt_buffer_free(X), tt_buffer_free(DY), tt_buffer_free(DX), tt_buffer_free(W),
        tt_buffer_free(DW);
    no_messages();
}

static void test_direct_weight_rows(void)
{
    check_direct_weight(3, 1, 600, 300);  /* 600 rows of 300 columns */
    check_direct_weight(3, 8, 1024, 128); /* 8192 rows of 128 */
    check_direct_weight(1, 1, 600, 1000); /* 600 rows of 1000 */
    check_direct_weight(1, 2, 15000, 256); /* 30000 rows of one work-group's step */
}

/* The weight gradient of a 2x2 stride-2 transposed convolution (the UNet's
 * up-sampling), one channel pair: a work-group sums every image's rows. */
static void check_convt_weight(size_t batch, size_t h, size_t w)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_convt_tiles g = {.batch = batch, .cin = 1, .h = h, .w = w, .cout = 1, .kh = 2, .kw = 2};
    size_t n = batch * h * w, nd = 4 * n;
    uint64_t seed = 3;
    float *x = th_random_floats(n, 0, 1, &seed), *dy = th_random_floats(nd, 0, 1, &seed);
    float *dw = th_random_floats(4, -1, 1, &seed), *got = malloc(16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    tt_buffer *X = upload(be, x, n, "inp"), *DY = upload(be, dy, nd, "dout"),
              *DW = upload(be, dw, 4, "dweight");
    TH_OK(tt_convt_tiles_backward_weight(be, tt_mem_of(DW), tt_mem_of(DY), tt_mem_of(X), &g));
    TH_OK(tt_read(be, got, tt_mem_of(DW), 16));
    double worst = 0;
    for (int t = 0; t < 4; t++) {
        double sum = dw[t], scale = fabs(dw[t]);
        for (size_t i = 0; i < batch; i++)
            for (size_t y = 0; y < h; y++)
                for (size_t c = 0; c < w; c++) {
                    double v = (double)x[(i * h + y) * w + c] *
                               dy[((i * 2 * h) + 2 * y + t / 2) * 2 * w + 2 * c + t % 2];
                    sum += v, scale += fabs(v);
                }
        double err = rel_err(got[t], sum, scale);
        worst = err > worst ? err : worst;
    }
    printf("\n    2x2 transposed weight gradient, %zu x %zu x %zu: worst error %.1e", batch, h, w,
           worst);
    CU_ASSERT(worst < 1e-5);
    free(x), free(dy), free(dw), free(got);
    tt_buffer_free(X), tt_buffer_free(DY), tt_buffer_free(DW);
    no_messages();
}

/* The work-group kernel (the 8-wide one is OpenCL's alone: convt_tiles_w8) */
static void test_convt_weight_rows(void)
{
    check_convt_weight(2, 300, 1000); /* 600 rows of 1000 */
    check_convt_weight(3, 250, 803);  /* three images, a ragged last work-group step */
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"GEMM with k past lavapipe's 65535 loop iterations", test_gemm_long_k},
        {"conv bias gradient past the loop limit", test_bias_long_plane},
        {"DIRECT weight gradient past the loop limit", test_direct_weight_rows},
        {"2x2 transposed weight gradient past the loop limit", test_convt_weight_rows},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_loop_limit", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    return rc;
}
