/* The Vulkan backend's GEMM, im2col and col2im (src/backend/vulkan/vk_blas.c,
 * shaders/blas/) on lavapipe with validation on: against a double-precision
 * C reference and against the OpenCL backend (CLBlast), for the four
 * transpose cases, alpha/beta (beta 0 ignores NaN in C), offsets, leading
 * dimensions larger than the matrix, batched strides, sizes on both sides
 * of the shaders' blocks and a k long enough to need several launches, with
 * each shader variant; the range check of tt_gemm_run on both backends;
 * im2col and col2im with padding, stride and dilation; the im2col
 * convolution (forward and backward, shaders/conv/) against OpenCL.  Also prints the GEMM's
 * GFLOP/s on both backends (a figure, not a check). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/conv2d.h"
#include "ops/util.h"
#include "test_vulkan.h"

enum { PAD = 7 };

/* ---- GEMM ------------------------------------------------------------- */

typedef struct gemm_case {
    int ta, tb;
    size_t m, n, k;
    float alpha, beta;
    size_t extra_ld;     /* leading dimensions this much above the matrix */
    size_t off;          /* floats before A, 2 off before B, 3 off before C */
    size_t batch;        /* 1: one GEMM */
    size_t extra_stride; /* floats between batch members */
} gemm_case;

/* The gemm of a case, with its sizes in floats. */
typedef struct gemm_shape {
    tt_gemm g;
    size_t na, nb, nc; /* floats of each buffer */
} gemm_shape;

static gemm_shape shape_of(const gemm_case *c)
{
    gemm_shape s;
    tt_gemm *g = &s.g;
    memset(&s, 0, sizeof s);
    g->trans_a = c->ta, g->trans_b = c->tb;
    g->m = c->m, g->n = c->n, g->k = c->k, g->alpha = c->alpha, g->beta = c->beta;
    g->lda = (c->ta ? c->m : c->k) + c->extra_ld;
    g->ldb = (c->tb ? c->k : c->n) + c->extra_ld;
    g->ldc = c->n + c->extra_ld;
    size_t rows_a = c->ta ? c->k : c->m, rows_b = c->tb ? c->n : c->k;
    g->stride_a = rows_a * g->lda + c->extra_stride;
    g->stride_b = rows_b * g->ldb + c->extra_stride;
    g->stride_c = c->m * g->ldc + c->extra_stride;
    g->batch = c->batch;
    s.na = c->off + g->stride_a * c->batch + PAD;
    s.nb = 2 * c->off + g->stride_b * c->batch + PAD;
    s.nc = 3 * c->off + g->stride_c * c->batch + PAD;
    return s;
}

/* Runs the case on `be` over copies of the inputs; returns C (malloc'd). */
static float *run_gemm(tt_backend *be, const gemm_case *c, const float *a, const float *b,
                       const float *c0)
{
    gemm_shape s = shape_of(c);
    tt_buffer *ba = alloc(be, s.na * 4, "a"), *bb = alloc(be, s.nb * 4, "b"),
              *bc = alloc(be, s.nc * 4, "c");
    TH_OK(tt_write(be, tt_mem_of(ba), a, s.na * 4));
    TH_OK(tt_write(be, tt_mem_of(bb), b, s.nb * 4));
    TH_OK(tt_write(be, tt_mem_of(bc), c0, s.nc * 4));
    s.g.a = tt_mem_f32(tt_mem_of(ba), c->off);
    s.g.b = tt_mem_f32(tt_mem_of(bb), 2 * c->off);
    s.g.c = tt_mem_f32(tt_mem_of(bc), 3 * c->off);
    TH_OK(tt_gemm_run(be, &s.g));
    float *got = malloc(s.nc * 4);
    CU_ASSERT_FATAL(got != NULL);
    TH_OK(tt_read(be, got, tt_mem_of(bc), s.nc * 4));
    tt_buffer_free(ba), tt_buffer_free(bb), tt_buffer_free(bc);
    return got;
}

/* The reference in double, and per element of C the bound on a float
 * result: each product and sum rounds once (k + 1 roundings of the sum of
 * |terms|, doubled for a different summation order), and the scaling by
 * alpha and beta once each.  `inside` marks the elements the GEMM writes. */
static void reference(const gemm_case *c, const float *a, const float *b, const float *c0,
                      double *want, double *bound, char *inside)
{
    gemm_shape s = shape_of(c);
    const tt_gemm *g = &s.g;
    const double eps = ldexp(1.0, -24);
    for (size_t i = 0; i < s.nc; i++) want[i] = c0[i], bound[i] = 0, inside[i] = 0;
    for (size_t q = 0; q < c->batch; q++) {
        const float *A = a + c->off + q * g->stride_a, *B = b + 2 * c->off + q * g->stride_b;
        size_t c_at = 3 * c->off + q * g->stride_c;
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++) {
                double sum = 0, mag = 0;
                for (size_t p = 0; p < c->k; p++) {
                    double x = c->ta ? A[p * g->lda + i] : A[i * g->lda + p];
                    double y = c->tb ? B[j * g->ldb + p] : B[p * g->ldb + j];
                    sum += x * y, mag += fabs(x * y);
                }
                size_t at = c_at + i * g->ldc + j;
                double old = c->beta == 0 ? 0 : c->beta * (double)c0[at];
                want[at] = c->alpha * sum + old;
                bound[at] = 2 * (c->k + 2) * eps * fabs(c->alpha) * mag + 2 * eps * fabs(old) +
                            1e-30;
                inside[at] = 1;
            }
    }
}

/* Elements outside the matrices must keep their bits (NaN included). */
static int within(const float *got, const float *c0, const double *want, const double *bound,
                  const char *inside, size_t n, double scale, double *worst)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!inside[i]) {
            ok &= memcmp(&got[i], &c0[i], 4) == 0;
            continue;
        }
        double err = fabs((double)got[i] - want[i]);
        if (!(err <= scale * bound[i])) ok = 0;
        else if (err / bound[i] > *worst) *worst = err / bound[i];
    }
    return ok;
}

/* The variants of the Vulkan GEMM (the backend's forced.gemm), the
 * device's choice first. */
static const tt_gemm_force variants[] = {TT_GEMM_DEVICE, TT_GEMM_REGISTERS, TT_GEMM_TILED,
                                         TT_GEMM_SPLIT_K};
static const char *const variant_names[] = {"default", "registers", "tiled", "split_k"};
enum { VARIANTS = sizeof variants / sizeof variants[0] };

static void test_gemm(void)
{
    /* the edges of the shaders' blocks (4, 8, 16, 64) from both sides; 12 x 20:
     * half blocks; k 70000: several launches on lavapipe (its loop limit) */
    static const size_t sizes[][3] = {
        {1, 1, 1},   {17, 33, 9},  {64, 64, 64}, {5, 3, 70},  {12, 20, 8},  {7, 63, 65},
        {65, 129, 7}, {129, 1, 63}, {63, 65, 129}, {1, 129, 65}, {3, 5, 70000},
    };
    static const struct { float alpha, beta; size_t extra_ld, off, batch, extra_stride; } forms[] = {
        {1, 0, 0, 0, 1, 0},   {0.5f, 0, 3, 5, 1, 0}, {-1.5f, 0.75f, 0, 1, 1, 0},
        {2, 1, 4, 3, 3, 11},  {1, 0, 0, 0, 4, 0},   {1, 0.5f, 4, 4, 2, 8},
    };
    tt_backend *be = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    uint64_t seed = 11;
    int cases = 0, failures = 0;
    double worst_c = 0, worst_cl = 0;
    for (int t = 0; t < 4; t++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
                gemm_case c = {t & 1, t >> 1, sizes[z][0], sizes[z][1], sizes[z][2],
                               forms[f].alpha, forms[f].beta, forms[f].extra_ld, forms[f].off,
                               forms[f].batch, forms[f].extra_stride};
                if (c.k > 1000 && (c.batch > 1 || c.off == 0)) continue; /* the long k: 2 forms */
                gemm_shape s = shape_of(&c);
                float *a = th_random_floats(s.na, -1, 1, &seed);
                float *b = th_random_floats(s.nb, -1, 1, &seed);
                float *c0 = th_random_floats(s.nc, -1, 1, &seed);
                if (c.beta == 0)
                    for (size_t i = 0; i < s.nc; i++) c0[i] = NAN; /* must be ignored */
                double *want = malloc(s.nc * sizeof *want), *bound = malloc(s.nc * sizeof *bound);
                double *as_cl = malloc(s.nc * sizeof *as_cl);
                char *inside = malloc(s.nc);
                CU_ASSERT_FATAL(want && bound && inside && as_cl);
                reference(&c, a, b, c0, want, bound, inside);
                float *got_cl = run_gemm(cl, &c, a, b, c0);
                for (size_t i = 0; i < s.nc; i++) as_cl[i] = got_cl[i];
                for (int v = 0; v < VARIANTS; v++) {
                    be->forced.gemm = variants[v];
                    float *got = run_gemm(be, &c, a, b, c0);
                    int ok_c = within(got, c0, want, bound, inside, s.nc, 1, &worst_c);
                    /* against OpenCL: both within the bound of the exact result */
                    int ok_cl = within(got, c0, as_cl, bound, inside, s.nc, 2, &worst_cl);
                    if (!ok_c || !ok_cl) {
                        printf("\n    gemm %s: ta=%d tb=%d %zux%zux%zu alpha %g beta %g ld+%zu "
                               "off %zu batch %zu: differs from %s\n",
                               variant_names[v], c.ta, c.tb, c.m, c.n, c.k,
                               c.alpha, c.beta, c.extra_ld, c.off, c.batch, ok_c ? "OpenCL" : "C");
                        failures++;
                    }
                    cases++;
                    free(got);
                }
                be->forced.gemm = TT_GEMM_DEVICE;
                free(a), free(b), free(c0), free(want), free(bound), free(inside), free(got_cl),
                    free(as_cl);
            }
    /* offsets of whole floats only, as CLBlast */
    tt_buffer *x = alloc(be, 64, "x");
    tt_gemm bad = {0, 0, 1, 1, 1, 1, 0, tt_mem_at(tt_mem_of(x), 2), 1, 0, tt_mem_of(x), 1, 0,
                   tt_mem_of(x), 1, 0, 1};
    expect_error(tt_gemm_run(be, &bad), TT_ERR_INVALID_ARGUMENT, "GEMM", "whole floats");
    tt_buffer_free(x);
    CU_ASSERT_EQUAL(failures, 0);
    printf("\n    gemm: %d cases (%d variants); worst error %.2f of the bound against C, %.2f of "
           "twice it against OpenCL\n", cases, VARIANTS, worst_c, worst_cl / 2);
    no_messages();
}

/* tt_gemm_run's range check, on both backends: operands that fit to the
 * float run; one float less, or a leading dimension below the row, is
 * TT_ERR_INVALID_ARGUMENT naming the operand. */
static void test_gemm_ranges(void)
{
    tt_backend *backends[2] = {vulkan(), th_backend()};
    CU_ASSERT_PTR_NOT_NULL_FATAL(backends[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(backends[1]);
    static const char *const names[3] = {"A (", "B (", "C ("};
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < 4; t++) {
            tt_backend *be = backends[k];
            /* batch 2 at an offset of 3 floats, leading dimensions 1 above the rows */
            gemm_case c = {t & 1, t >> 1, 3, 5, 7, 1, 0, 1, 3, 2, 2};
            gemm_shape s = shape_of(&c);
            size_t rows[3] = {c.ta ? c.k : c.m, c.tb ? c.n : c.k, c.m};
            size_t cols[3] = {c.ta ? c.m : c.k, c.tb ? c.k : c.n, c.n};
            size_t ld[3] = {s.g.lda, s.g.ldb, s.g.ldc};
            size_t stride[3] = {s.g.stride_a, s.g.stride_b, s.g.stride_c};
            size_t need[3]; /* floats from the buffer's start to the last element, inclusive */
            tt_buffer *exact[3], *short_[3];
            for (int o = 0; o < 3; o++) {
                need[o] = c.off + (c.batch - 1) * stride[o] + (rows[o] - 1) * ld[o] + cols[o];
                exact[o] = alloc(be, need[o] * 4, "exact");
                short_[o] = alloc(be, (need[o] - 1) * 4, "short");
                TH_OK(tt_fill(be, tt_mem_of(exact[o]), 0.5f, need[o]));
            }
            tt_gemm g = s.g;
            g.a = tt_mem_f32(tt_mem_of(exact[0]), c.off);
            g.b = tt_mem_f32(tt_mem_of(exact[1]), c.off);
            g.c = tt_mem_f32(tt_mem_of(exact[2]), c.off);
            TH_OK(tt_gemm_run(be, &g));
            float last;
            TH_OK(tt_read(be, &last, tt_mem_f32(tt_mem_of(exact[2]), need[2] - 1), 4));
            CU_ASSERT_DOUBLE_EQUAL(last, 7 * 0.25, 1e-6); /* C's last element: k products */
            for (int o = 0; o < 3; o++) {
                tt_gemm h = g;
                tt_mem *m = o == 0 ? &h.a : o == 1 ? &h.b : &h.c;
                *m = tt_mem_f32(tt_mem_of(short_[o]), c.off);
                expect_error(tt_gemm_run(be, &h), TT_ERR_INVALID_ARGUMENT, "GEMM", names[o]);
                h = g;
                size_t *l = o == 0 ? &h.lda : o == 1 ? &h.ldb : &h.ldc;
                *l = cols[o] - 1;
                expect_error(tt_gemm_run(be, &h), TT_ERR_INVALID_ARGUMENT, names[o],
                             "leading dimension is below");
            }
            for (int o = 0; o < 3; o++) tt_buffer_free(exact[o]), tt_buffer_free(short_[o]);
        }
    no_messages();
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* GFLOP/s of an n^3 GEMM on `be` (best of `reps` after one warm-up). */
static double gflops(tt_backend *be, size_t n, int reps)
{
    uint64_t seed = 3;
    float *host = th_random_floats(n * n, -1, 1, &seed);
    tt_buffer *a = alloc(be, n * n * 4, "a"), *b = alloc(be, n * n * 4, "b"),
              *c = alloc(be, n * n * 4, "c");
    TH_OK(tt_write(be, tt_mem_of(a), host, n * n * 4));
    TH_OK(tt_write(be, tt_mem_of(b), host, n * n * 4));
    tt_gemm g = {0, 0, n, n, n, 1, 0, tt_mem_of(a), n, 0, tt_mem_of(b), n, 0, tt_mem_of(c), n, 0, 1};
    double best = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = seconds();
        TH_OK(tt_gemm_run(be, &g));
        TH_OK(tt_finish(be));
        double dt = seconds() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    tt_buffer_free(a), tt_buffer_free(b), tt_buffer_free(c);
    free(host);
    return 2.0 * n * n * n / best * 1e-9;
}

static void test_gemm_speed(void)
{
    const char *env = getenv("TT_TEST_GEMM_SIZE");
    size_t n = env ? (size_t)atoi(env) : 256;
    tt_backend *be = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    double v = gflops(be, n, 3), o = gflops(cl, n, 3);
    printf("\n    gemm %zu^3: vulkan %.2f GFLOP/s, opencl %.2f GFLOP/s (ratio %.3f)\n", n, v, o,
           v / o);
    no_messages();
}

/* ---- im2col, col2im ---------------------------------------------------- */

static size_t out_size(size_t in, size_t k, size_t pad, size_t stride, size_t dilation)
{
    return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

/* col[(c kh + i) kw + j][oy ow + ox] = im[c][oy s - p + i d][ox s - p + j d] or 0;
 * col2im is its adjoint, added into im. */
static void ref_im2col(const tt_im2col *g, const float *im, float *col, double *im_add,
                       const float *col_in)
{
    size_t oh = out_size(g->height, g->kernel_h, g->pad_h, g->stride_h, g->dilation_h);
    size_t ow = out_size(g->width, g->kernel_w, g->pad_w, g->stride_w, g->dilation_w);
    for (size_t c = 0; c < g->channels; c++)
        for (size_t i = 0; i < g->kernel_h; i++)
            for (size_t j = 0; j < g->kernel_w; j++)
                for (size_t oy = 0; oy < oh; oy++)
                    for (size_t ox = 0; ox < ow; ox++) {
                        size_t at = (((c * g->kernel_h + i) * g->kernel_w + j) * oh + oy) * ow + ox;
                        long y = (long)(oy * g->stride_h + i * g->dilation_h) - (long)g->pad_h;
                        long x = (long)(ox * g->stride_w + j * g->dilation_w) - (long)g->pad_w;
                        int in = y >= 0 && y < (long)g->height && x >= 0 && x < (long)g->width;
                        size_t pixel = (c * g->height + (size_t)y) * g->width + (size_t)x;
                        col[at] = in ? im[pixel] : 0.0f;
                        if (in) im_add[pixel] += col_in[at];
                    }
}

static void test_im2col(void)
{
    /* channels, h, w, kh, kw, pad h/w, stride h/w, dilation h/w */
    static const size_t shapes[][11] = {
        {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1},  {3, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1},
        {2, 9, 7, 3, 3, 1, 1, 2, 2, 1, 1},  {2, 11, 10, 3, 2, 2, 1, 1, 2, 2, 3},
        {5, 6, 13, 1, 1, 0, 0, 2, 3, 1, 1}, {4, 16, 16, 2, 2, 0, 0, 2, 2, 1, 1},
    };
    tt_backend *backends[2] = {vulkan(), th_backend()};
    CU_ASSERT_PTR_NOT_NULL_FATAL(backends[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(backends[1]);
    uint64_t seed = 5;
    int failures = 0;
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t *v = shapes[s];
        tt_im2col g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], {0}, {0}};
        size_t oh = out_size(g.height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h);
        size_t ow = out_size(g.width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w);
        size_t n_im = g.channels * g.height * g.width;
        size_t n_col = g.channels * g.kernel_h * g.kernel_w * oh * ow;
        size_t off = s; /* floats before each tensor */
        float *im = th_random_floats(off + n_im + PAD, -1, 1, &seed);
        float *col_in = th_random_floats(off + n_col + PAD, -1, 1, &seed);
        float *want_col = malloc(n_col * 4);
        double *want_im = malloc(n_im * sizeof *want_im), *bound = malloc(n_im * sizeof *bound);
        CU_ASSERT_FATAL(want_col && want_im && bound);
        for (size_t i = 0; i < n_im; i++) want_im[i] = 0;
        ref_im2col(&g, im + off, want_col, want_im, col_in + off);
        for (size_t i = 0; i < n_im; i++) { /* |sum| of at most kh kw + 1 terms */
            bound[i] = (double)(g.kernel_h * g.kernel_w + 1) * ldexp(1.0, -23) *
                           (fabs(want_im[i]) + fabs(im[off + i]) + 4.0) ;
            want_im[i] += im[off + i];
        }
        float *got[2][2];
        for (int k = 0; k < 2; k++) {
            tt_backend *be = backends[k];
            tt_buffer *bi = alloc(be, (off + n_im + PAD) * 4, "im"),
                      *bc = alloc(be, (off + n_col + PAD) * 4, "col");
            g.im = tt_mem_f32(tt_mem_of(bi), off), g.col = tt_mem_f32(tt_mem_of(bc), off);
            TH_OK(tt_write(be, tt_mem_of(bi), im, (off + n_im + PAD) * 4));
            TH_OK(tt_fill(be, tt_mem_of(bc), NAN, off + n_col + PAD));
            TH_OK(tt_im2col_run(be, &g));
            got[k][0] = malloc((off + n_col + PAD) * 4);
            got[k][1] = malloc((off + n_im + PAD) * 4);
            CU_ASSERT_FATAL(got[k][0] && got[k][1]);
            TH_OK(tt_read(be, got[k][0], tt_mem_of(bc), (off + n_col + PAD) * 4));
            TH_OK(tt_write(be, tt_mem_of(bc), col_in, (off + n_col + PAD) * 4));
            TH_OK(tt_col2im_run(be, &g));
            TH_OK(tt_read(be, got[k][1], tt_mem_of(bi), (off + n_im + PAD) * 4));
            tt_buffer_free(bi), tt_buffer_free(bc);
        }
        int ok = memcmp(got[0][0] + off, want_col, n_col * 4) == 0 &&
                 memcmp(got[0][0] + off, got[1][0] + off, n_col * 4) == 0;
        for (size_t i = 0; i < off; i++) ok &= isnan(got[0][0][i]) && im[i] == got[0][1][i];
        for (size_t i = 0; i < PAD; i++)
            ok &= isnan(got[0][0][off + n_col + i]) && im[off + n_im + i] == got[0][1][off + n_im + i];
        for (size_t i = 0; i < n_im; i++) {
            double e_c = fabs(got[0][1][off + i] - want_im[i]);
            double e_cl = fabs(got[0][1][off + i] - (double)got[1][1][off + i]);
            ok &= e_c <= bound[i] && e_cl <= 2 * bound[i];
            if (e_c / bound[i] > worst) worst = e_c / bound[i];
        }
        if (!ok) {
            printf("\n    im2col/col2im shape %zu differs\n", s);
            failures++;
        }
        for (int k = 0; k < 2; k++) free(got[k][0]), free(got[k][1]);
        free(im), free(col_in), free(want_col), free(want_im), free(bound);
    }
    CU_ASSERT_EQUAL(failures, 0);
    printf("\n    im2col bitwise equal to C and OpenCL; col2im worst error %.3f of its bound\n",
           worst);
    no_messages();
}

/* ---- the im2col convolution ------------------------------------------- */

/* The tensors of one convolution, forward and backward, on the host. */
typedef struct conv_data {
    size_t n[8];   /* floats of each: inp weight bias dout | out dinp dweight dbias */
    float *t[8];   /* inputs, then outputs; dinp, dweight, dbias start as given */
} conv_data;

/* Runs forward and backward of `d` on `be` from `in` (its first four
 * tensors and the starting gradients); fills `out`'s last four. */
static void run_conv(tt_backend *be, const tt_conv2d_desc *d, const conv_data *in, conv_data *out)
{
    tt_buffer *b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = alloc(be, in->n[i] * 4 + 12, "conv tensor");
        if (i != 4) TH_OK(tt_write(be, tt_mem_at(tt_mem_of(b[i]), 12), in->t[i], in->n[i] * 4));
    }
    tt_mem m[8];
    for (int i = 0; i < 8; i++) m[i] = tt_mem_at(tt_mem_of(b[i]), 12); /* at an offset */
    TH_OK(tt_conv2d_forward(be, m[4], m[0], m[1], m[2], d, (tt_mem){0}));
    TH_OK(tt_conv2d_backward(be, m[5], m[6], m[7], m[3], m[0], m[1], d, (tt_mem){0}));
    for (int i = 4; i < 8; i++) {
        out->n[i] = in->n[i];
        out->t[i] = malloc(in->n[i] * 4);
        CU_ASSERT_FATAL(out->t[i] != NULL);
        TH_OK(tt_read(be, out->t[i], m[i], in->n[i] * 4));
    }
    for (int i = 0; i < 8; i++) tt_buffer_free(b[i]);
}

static void test_conv_im2col(void)
{
    /* N, Cin, H, W, Cout, kh, kw, stride, pad, dilation, groups; plane 70 > the
     * work-group of conv_bias_backward */
    static const int shapes[][11] = {
        {2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1}, {1, 4, 10, 7, 5, 3, 3, 2, 1, 1, 1},
        {2, 2, 6, 6, 3, 1, 1, 1, 0, 1, 1}, {1, 3, 11, 11, 2, 3, 3, 1, 2, 2, 1},
        {1, 4, 8, 8, 6, 3, 3, 1, 1, 1, 2}, {3, 1, 5, 9, 2, 2, 3, 1, 0, 1, 1}, {2, 2, 10, 7, 3, 1, 1, 1, 0, 1, 1},
    };
    static const char *const names[] = {"out", "dinp", "dweight", "dbias"};
    tt_backend *vk = vulkan(), *cl = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(vk);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
    uint64_t seed = 19;
    int failures = 0;
    double worst = 0;
    /* CPUs: conv_bias_backward_w8; forced.w8 OFF: the work-group conv_bias_backward */
    for (size_t s = 0; s < 2 * sizeof shapes / sizeof shapes[0]; s++) {
        const int *v = shapes[s % (sizeof shapes / sizeof shapes[0])];
        vk->forced.w8 = cl->forced.w8 =
            s < sizeof shapes / sizeof shapes[0] ? TT_VARIANT_DEVICE : TT_VARIANT_OFF;
        tt_conv2d_desc d = {.batch = v[0], .in_channels = v[1], .in_h = v[2], .in_w = v[3],
                            .out_channels = v[4], .kernel_h = v[5], .kernel_w = v[6],
                            .stride_h = v[7], .stride_w = v[7], .pad_h = v[8], .pad_w = v[8],
                            .dilation_h = v[9], .dilation_w = v[9], .groups = v[10],
                            .algo = TT_CONV_ALGO_IM2COL_GEMM};
        TH_OK(tt_conv2d_check(&d));
        size_t oh = (size_t)tt_conv2d_out_h(&d), ow = (size_t)tt_conv2d_out_w(&d);
        size_t n_in = (size_t)d.batch * d.in_channels * d.in_h * d.in_w;
        size_t n_w = (size_t)d.out_channels * (d.in_channels / d.groups) * d.kernel_h * d.kernel_w;
        size_t n_out = (size_t)d.batch * d.out_channels * oh * ow;
        conv_data in = {{n_in, n_w, (size_t)d.out_channels, n_out, n_out, n_in, n_w,
                         (size_t)d.out_channels}, {0}}, absolute = in;
        conv_data got_vk = {{0}, {0}}, got_cl = {{0}, {0}}, mag = {{0}, {0}};
        for (int i = 0; i < 8; i++) {
            in.t[i] = th_random_floats(in.n[i], -1, 1, &seed);
            absolute.t[i] = malloc(in.n[i] * 4);
            CU_ASSERT_FATAL(absolute.t[i] != NULL);
            for (size_t j = 0; j < in.n[i]; j++) absolute.t[i][j] = fabsf(in.t[i][j]);
        }
        run_conv(vk, &d, &in, &got_vk);
        run_conv(cl, &d, &in, &got_cl);
        run_conv(cl, &d, &absolute, &mag); /* the sums of |terms| */
        /* the most terms any result sums (GEMM and im2col both accumulate) */
        size_t terms = (size_t)(d.in_channels / d.groups) * d.kernel_h * d.kernel_w + 1;
        size_t terms_dinp = (size_t)d.out_channels * d.kernel_h * d.kernel_w + 1;
        size_t terms_w = (size_t)d.batch * oh * ow + 1;
        if (terms_dinp > terms) terms = terms_dinp;
        if (terms_w > terms) terms = terms_w;
        double eps = ldexp(1.0, -24);
        int ok = 1;
        for (int i = 4; i < 8; i++) {
            int same = 1;
            for (size_t j = 0; j < in.n[i]; j++) {
                double err = fabs((double)got_vk.t[i][j] - got_cl.t[i][j]);
                double bound = 2.0 * (double)terms * eps * mag.t[i][j] * 1.001 + 1e-30;
                same &= err <= bound;
                if (err / bound > worst) worst = err / bound;
            }
            if (!same) printf("\n    conv shape %zu: %s differs from OpenCL\n", s, names[i - 4]);
            ok &= same;
        }
        failures += !ok;
        for (int i = 0; i < 8; i++) {
            free(in.t[i]), free(absolute.t[i]);
            if (i >= 4) free(got_vk.t[i]), free(got_cl.t[i]), free(mag.t[i]);
        }
    }
    vk->forced.w8 = cl->forced.w8 = TT_VARIANT_DEVICE;
    CU_ASSERT_EQUAL(failures, 0);
    printf("\n    im2col convolution forward and backward: %zu shapes (each with both bias "
           "kernels) within "
           "2 T 2^-24 sum|terms| of OpenCL (T the most terms of a sum), worst %.3f of it\n",
           sizeof shapes / sizeof shapes[0], worst);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"gemm against C and OpenCL", test_gemm},
        {"gemm operands must fit their buffers", test_gemm_ranges},
        {"gemm GFLOP/s", test_gemm_speed},
        {"im2col and col2im against C and OpenCL", test_im2col},
        {"im2col convolution against OpenCL", test_conv_im2col},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_blas", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
