/* Max and average 2-D pooling: forward (and saved argmax) vs the double
 * reference, finite-difference gradients, backward adds, ties, odd sizes
 * (floor mode drops the trailing row/column), overlapping windows,
 * padding (ResNet's stem pool, 3x3 stride 2 pad 1) and the same against
 * PyTorch's nn.MaxPool2d / nn.AvgPool2d where /usr/bin/python3 has torch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ops/avg_pool2d.h"
#include "ops/max_pool2d.h"
#include "ops/util.h"
#include "ref_act.h"

/* Tolerances: max pooling copies floats (exact); average pooling sums at
 * most 9 floats of mixed sign and size up to 5, so near-zero means carry a
 * few float ulps of the summands (relative with a floor of 1e-3: 1e-5).
 * Gradients: dinp0 + numeric gradient in double; that sum of size-1 values
 * can cancel to near zero, where the float error is absolute: relative with
 * a floor of 0.1 (GRAD_FLOOR). */
#define MAX_FORWARD_TOL 0.0
#define AVG_FORWARD_TOL 1e-5
#define GRAD_TOL 1e-5
#define GRAD_FLOOR 0.1
#define GRAD_H 1e-3

typedef struct loss_ctx {
    int is_max;
    const tt_pool2d_desc *desc;
    const double *dy;
    double *y; /* scratch, out_count */
    size_t out_count;
} loss_ctx;

/* L = sum(dy * pool(x)) */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    if (c->is_max) ref_max_pool2d_forward(c->y, NULL, x, c->desc);
    else ref_avg_pool2d_forward(c->y, x, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

/* Values 0.015 apart in random order: no ties, and a 1e-3 step cannot
 * change which element of a window is the maximum. */
static void distinct_input(float *x, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.015 * ((double)i - n / 2.0));
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)th_uniform(seed, 0, (double)i);
        float t = x[i - 1];
        x[i - 1] = x[j], x[j] = t;
    }
}

static void check_pool(int is_max, tt_pool2d_desc d)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 11 + (uint64_t)d.height * 31 + (uint64_t)d.kernel_h;
    int oh = tt_pool2d_out_h(&d), ow = tt_pool2d_out_w(&d);
    size_t n = (size_t)d.batch * d.channels * d.height * d.width;
    size_t m = (size_t)d.batch * d.channels * oh * ow;
    float *x = malloc(n * sizeof *x), *dx0 = malloc(n * sizeof *dx0);
    float *gotx = malloc(n * sizeof *gotx), *dy = malloc(m * sizeof *dy);
    float *goty = malloc(m * sizeof *goty);
    int *arg = malloc(m * sizeof *arg), *ref_arg = malloc(m * sizeof *ref_arg);
    double *wanty = malloc(m * sizeof *wanty), *wantx = malloc(n * sizeof *wantx);
    double *grad = malloc(n * sizeof *grad), *scratch = malloc(m * sizeof *scratch);
    CU_ASSERT_FATAL(x && dx0 && gotx && dy && goty && arg && ref_arg && wanty && wantx && grad &&
                    scratch);
    distinct_input(x, n, &seed);
    th_fill_uniform(dy, m, -1, 1, &seed);
    th_fill_uniform(dx0, n, -1, 1, &seed);
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);

    tt_buffer *bx = th_upload(x, n, "pool.x"), *by = th_zeros(m, "pool.y");
    tt_buffer *barg = th_zeros(m, "pool.argmax"); /* int32, same size as floats */
    tt_buffer *bdy = th_upload(dy, m, "pool.dy"), *bdx = th_upload(dx0, n, "pool.dx");

    /* forward */
    if (is_max) TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
    else TH_OK(tt_avg_pool2d_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
    th_download(goty, by, m);
    if (is_max) ref_max_pool2d_forward(wanty, ref_arg, xd, &d);
    else ref_avg_pool2d_forward(wanty, xd, &d);
    double fwd_err = th_max_rel_error(goty, wanty, m, 1e-3);
    int arg_mismatch = 0;
    if (is_max) {
        TH_OK(tt_read(be, arg, tt_mem_of(barg), m * sizeof *arg));
        for (size_t i = 0; i < m; i++) arg_mismatch += arg[i] != ref_arg[i];
    }

    /* backward vs central differences */
    loss_ctx ctx = {is_max, &d, dyd, scratch, m};
    th_numeric_grad(loss, &ctx, xd, n, GRAD_H, grad);
    if (is_max)
        TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    else TH_OK(tt_avg_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + grad[i];
    double grad_err = th_max_rel_error(gotx, wantx, n, GRAD_FLOOR);

    /* the analytic reference agrees with the numeric gradient */
    for (size_t i = 0; i < n; i++) wantx[i] = 0;
    if (is_max) ref_max_pool2d_backward(wantx, dyd, ref_arg, &d);
    else ref_avg_pool2d_backward(wantx, dyd, &d);
    double ref_err = 0;
    for (size_t i = 0; i < n; i++)
        ref_err = fmax(ref_err, fabs(wantx[i] - grad[i]) / (fabs(grad[i]) + 1e-3));

    /* twice adds twice */
    if (is_max)
        TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    else TH_OK(tt_avg_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + 2 * grad[i];
    double twice_err = th_max_rel_error(gotx, wantx, n, GRAD_FLOOR);

    /* without a kept argmax: the same values, and the backward that finds
     * the winners in the input gives the same bits, twice */
    int values_diff = 0, from_input_diff = 0;
    if (is_max) {
        float *y2 = malloc(m * sizeof *y2), *dx2 = malloc(n * sizeof *dx2);
        CU_ASSERT_FATAL(y2 && dx2);
        tt_buffer *by2 = th_zeros(m, "pool.y2"), *bdx2 = th_upload(dx0, n, "pool.dx2");
        TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by2), (tt_mem){0}, tt_mem_of(bx), &d));
        th_download(y2, by2, m);
        values_diff = memcmp(y2, goty, m * sizeof *y2) != 0;
        for (int k = 0; k < 2; k++)
            TH_OK(tt_max_pool2d_backward_from_input(be, tt_mem_of(bdx2), tt_mem_of(bdy),
                                                    tt_mem_of(bx), &d));
        th_download(dx2, bdx2, n);
        from_input_diff = memcmp(dx2, gotx, n * sizeof *dx2) != 0;
        tt_buffer_free(by2), tt_buffer_free(bdx2);
        free(y2), free(dx2);
    }

    printf("\n  %s (%d,%d,%d,%d) k%dx%d s%dx%d p%dx%d -> %dx%d: forward %.2e, argmax "
           "mismatches %d, grad vs numeric %.2e, ref vs numeric %.2e, twice %.2e",
           is_max ? "max" : "avg", d.batch, d.channels, d.height, d.width, d.kernel_h,
           d.kernel_w, d.stride_h, d.stride_w, d.pad_h, d.pad_w, oh, ow, fwd_err, arg_mismatch,
           grad_err, ref_err, twice_err);
    CU_ASSERT(fwd_err <= (is_max ? MAX_FORWARD_TOL : AVG_FORWARD_TOL));
    CU_ASSERT_EQUAL(arg_mismatch, 0);
    CU_ASSERT(grad_err < GRAD_TOL);
    CU_ASSERT(ref_err < GRAD_TOL);
    CU_ASSERT(twice_err < GRAD_TOL);
    CU_ASSERT_EQUAL(values_diff, 0);
    CU_ASSERT_EQUAL(from_input_diff, 0);

    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
    tt_buffer_free(bdx);
    free(x), free(dx0), free(gotx), free(dy), free(goty), free(arg), free(ref_arg);
    free(wanty), free(wantx), free(grad), free(scratch), free(xd), free(dyd);
}

static const tt_pool2d_desc cases[] = {
    {1, 3, 7, 9, 2, 2, 2, 2, 0, 0},  /* odd sizes: 3x4, last row and column dropped */
    {2, 5, 5, 3, 2, 2, 2, 2, 0, 0},  /* batch 2, 5 channels: 2x1 */
    {2, 3, 2, 2, 2, 2, 2, 2, 0, 0},  /* one window: 1x1 */
    {2, 3, 7, 9, 3, 3, 2, 2, 0, 0},  /* overlapping windows: 3x4 */
    {1, 5, 5, 3, 3, 2, 1, 2, 0, 0},  /* rectangular kernel and stride: 3x1 */
    {1, 3, 1, 1, 1, 1, 1, 1, 0, 0},  /* 1x1 image, 1x1 window */
    {2, 2, 5, 35, 2, 2, 2, 2, 0, 0}, /* 2x17: two whole 8-wide blocks, a ragged one, odd width */
    {1, 2, 4, 32, 2, 2, 2, 2, 0, 0}, /* 2x16: whole blocks only */
    /* padded: ResNet's stem pool, 3x3 stride 2 pad 1, overlapping windows */
    {1, 3, 7, 9, 3, 3, 2, 2, 1, 1},  /* odd sizes: 4x5, the last windows end on the padding */
    {2, 3, 8, 10, 3, 3, 2, 2, 1, 1}, /* even sizes, batch 2: 4x5, the last row of padding unused */
    {2, 2, 1, 1, 3, 3, 2, 2, 1, 1},  /* a 1x1 image is one window, mostly padding: 1x1 */
    {1, 2, 5, 6, 3, 3, 1, 1, 1, 1},  /* stride 1 keeps the size: 5x6 */
    {1, 2, 6, 7, 2, 2, 2, 2, 1, 1},  /* 2x2 stride 2 pad 1 (not the 2x2 kernels): 4x4 */
    {1, 2, 7, 6, 3, 2, 3, 2, 1, 1},  /* stride = kernel, padded (not the tiles kernel): 3x4 */
    {1, 1, 9, 7, 5, 3, 2, 2, 2, 1},  /* pad 2 of a 5-high window, pad 1 of a 3-wide: 5x4 */
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

/* ResNet's stem pool (3x3 stride 2 pad 1) wide enough for the 8-wide
 * forward's vectors (CPUs): 5x20, blocks at x0 = 0 (the left padding) and
 * 8, a ragged one, the top padding, a last row past the plane; 5x17, the
 * last row's padding unused, odd width; 9x11: each of the backward's four
 * phases (oy, ox mod 2) has several rows and columns of outputs, in odd
 * counts. */
static const tt_pool2d_desc stem_cases[] = {
    {2, 2, 9, 40, 3, 3, 2, 2, 1, 1},
    {1, 3, 10, 33, 3, 3, 2, 2, 1, 1},
    {2, 3, 17, 21, 3, 3, 2, 2, 1, 1},
};
enum { STEM_CASE_COUNT = sizeof stem_cases / sizeof stem_cases[0] };

static void test_max_pool(void)
{
    for (int i = 0; i < CASE_COUNT; i++) check_pool(1, cases[i]);
    for (int i = 0; i < STEM_CASE_COUNT; i++) check_pool(1, stem_cases[i]);
    /* the 2x2 stride-2 and the stem's cases once more through the generic
     * kernels (CPUs run their own 8-wide ones above) */
    th_backend()->forced.w8 = TT_VARIANT_OFF;
    for (int i = 0; i < CASE_COUNT; i++)
        if (cases[i].kernel_h == 2 && cases[i].stride_h == 2) check_pool(1, cases[i]);
    for (int i = 0; i < STEM_CASE_COUNT; i++) check_pool(1, stem_cases[i]);
    th_backend()->forced.w8 = TT_VARIANT_DEVICE;
}

static void test_avg_pool(void)
{
    for (int i = 0; i < CASE_COUNT; i++) check_pool(0, cases[i]);
}

/* Padded 3x3 stride 2 windows overlap and reach into the padding; inputs
 * of a few levels tie often.  The winners are the reference's (the first
 * maximum in row-major order, padding never), a window of -infinity gives
 * its first place in the image, and the backward sums small integers
 * (exact in float) over overlapping windows: both equal the reference's. */
static void check_padded_ties(int batch, int height, int width)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_pool2d_desc d = tt_pool2d_square_padded(batch, 2, height, width, 3, 2, 1);
    int oh = tt_pool2d_out_h(&d), ow = tt_pool2d_out_w(&d);
    size_t n = (size_t)batch * 2 * height * width, m = (size_t)batch * 2 * oh * ow;
    float *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y), *dy = malloc(m * sizeof *dy);
    float *dx = malloc(n * sizeof *dx), *dx2 = malloc(n * sizeof *dx2);
    int *arg = malloc(m * sizeof *arg), *want_arg = malloc(m * sizeof *want_arg);
    double *xd = malloc(n * sizeof *xd), *want_y = malloc(m * sizeof *want_y);
    double *want_dx = calloc(n, sizeof *want_dx), *dyd = malloc(m * sizeof *dyd);
    CU_ASSERT_FATAL(x && y && dy && dx && dx2 && arg && want_arg && xd && want_y && want_dx && dyd);
    uint64_t seed = 5 + (uint64_t)height;
    for (size_t i = 0; i < n; i++) x[i] = (float)(int)th_uniform(&seed, 0, 3); /* 0, 1, 2 */
    /* the top-left 2x2 of the first plane: the first window's whole image part */
    x[0] = x[1] = x[width] = x[width + 1] = -INFINITY;
    for (size_t i = 0; i < n; i++) xd[i] = x[i];
    for (size_t o = 0; o < m; o++) dy[o] = (float)(1 + o % 7), dyd[o] = dy[o];
    ref_max_pool2d_forward(want_y, want_arg, xd, &d);
    ref_max_pool2d_backward(want_dx, dyd, want_arg, &d);

    tt_buffer *bx = th_upload(x, n, "pties.x"), *by = th_zeros(m, "pties.y");
    tt_buffer *barg = th_zeros(m, "pties.argmax"), *bdy = th_upload(dy, m, "pties.dy");
    tt_buffer *bdx = th_zeros(n, "pties.dx");
    TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
    th_download(y, by, m);
    TH_OK(tt_read(be, arg, tt_mem_of(barg), m * sizeof *arg));
    TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    th_download(dx, bdx, n);
    TH_OK(tt_fill(be, tt_mem_of(bdx), 0.0f, n));
    TH_OK(tt_max_pool2d_backward_from_input(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(bx), &d));
    th_download(dx2, bdx, n);
    int arg_diff = 0, y_diff = 0, dx_diff = 0, shared = 0;
    for (size_t o = 0; o < m; o++) {
        arg_diff += arg[o] != want_arg[o];
        y_diff += y[o] != (float)want_y[o];
    }
    for (size_t i = 0; i < n; i++) {
        dx_diff += dx[i] != (float)want_dx[i] || dx2[i] != dx[i];
        shared += want_dx[i] > 7; /* more than one window's gradient */
    }
    printf("\n  max ties (%d,2,%d,%d) k3 s2 p1 -> %dx%d: argmax mismatches %d, values %d, "
           "gradients %d (%d elements won several windows); first window's argmax %d",
           batch, height, width, oh, ow, arg_diff, y_diff, dx_diff, shared, arg[0]);
    CU_ASSERT_EQUAL(arg[0], 0);
    CU_ASSERT(y[0] == -INFINITY);
    CU_ASSERT_EQUAL(arg_diff, 0);
    CU_ASSERT_EQUAL(y_diff, 0);
    CU_ASSERT_EQUAL(dx_diff, 0);
    CU_ASSERT(shared > 0);
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
    tt_buffer_free(bdx);
    free(x), free(y), free(dy), free(dx), free(dx2), free(arg), free(want_arg), free(xd);
    free(want_y), free(want_dx), free(dyd);
}

static void test_max_pool_padded_ties(void)
{
    check_padded_ties(1, 7, 9);
    check_padded_ties(2, 8, 10);
    check_padded_ties(2, 6, 5);
    check_padded_ties(2, 9, 40); /* the 8-wide forward's vectors (CPUs) */
}

/* Ties keep the first maximum in row-major window order (PyTorch); NaN wins.
 * The 4x6 pattern below three times side by side (a 4x18 plane, 2x9
 * windows), so CPUs meet it in their 8-wide kernels and lane by lane. */
static void test_max_pool_ties(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    /* one 4x6 pattern, three 2x2 windows per row pair */
    const float pattern[24] = {
        1, 1, 0, 2, 5, 4,      /* windows: all ones | 2 at (0,3) vs (1,2) | NaN at (1,5) */
        1, 1, 2, 0, 3, NAN,
        -1, -1, 7, 7, -INFINITY, -INFINITY, /* -1 ties | 7 ties | all -inf */
        -1, -1, 7, 7, -INFINITY, -INFINITY,
    };
    const int pattern_arg[6] = {0, 3, 11, 12, 14, 16};
    enum { REPEAT = 3, W = 6 * REPEAT, IN = 4 * W, OUT = 2 * 3 * REPEAT };
    float x[IN], y[OUT];
    int want_arg[OUT], arg[OUT];
    for (int i = 0; i < IN; i++) x[i] = pattern[(i / W) * 6 + i % 6];
    for (int o = 0; o < OUT; o++) { /* window o = (oy, ox): pattern window oy 3 + ox % 3 */
        int oy = o / (3 * REPEAT), ox = o % (3 * REPEAT), at = pattern_arg[oy * 3 + ox % 3];
        want_arg[o] = at / 6 * W + at % 6 + 6 * (ox / 3);
    }
    tt_pool2d_desc d = tt_pool2d_square(1, 1, 4, W, 2, 2);
    tt_buffer *bx = th_upload(x, IN, "ties.x"), *by = th_zeros(OUT, "ties.y");
    tt_buffer *barg = th_zeros(OUT, "ties.argmax");
    TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
    th_download(y, by, OUT);
    TH_OK(tt_read(be, arg, tt_mem_of(barg), sizeof arg));
    for (int o = 0; o < OUT; o++) {
        CU_ASSERT_EQUAL(arg[o], want_arg[o]);
        float v = x[want_arg[o]];
        CU_ASSERT(isnan(v) ? isnan(y[o]) : y[o] == v);
    }
    /* backward sends each gradient to exactly that element */
    float dy[OUT], dx[IN];
    for (int o = 0; o < OUT; o++) dy[o] = (float)(o + 1);
    tt_buffer *bdy = th_upload(dy, OUT, "ties.dy"), *bdx = th_zeros(IN, "ties.dx");
    TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    th_download(dx, bdx, IN);
    for (int i = 0; i < IN; i++) {
        float want = 0;
        for (int o = 0; o < OUT; o++)
            if (want_arg[o] == i) want = dy[o];
        CU_ASSERT_EQUAL(dx[i], want);
    }
    /* and so does the backward that finds the winners in the input */
    float dx2[IN];
    TH_OK(tt_fill(be, tt_mem_of(bdx), 0.0f, IN));
    TH_OK(tt_max_pool2d_backward_from_input(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(bx), &d));
    th_download(dx2, bdx, IN);
    CU_ASSERT(memcmp(dx, dx2, sizeof dx) == 0);
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
    tt_buffer_free(bdx);
}

/* ---- PyTorch cross-check ------------------------------------------------ */

/* Reads x and dy (float32, concatenated) from argv[1]; writes, as float32,
 * nn.MaxPool2d(k, s, p)'s output, indices and input gradient, then
 * nn.AvgPool2d(k, s, p)'s (count_include_pad, the default) output and input
 * gradient, to argv[2]; exits 3 without torch. */
static const char *torch_pool_script =
    "import sys\n"
    "try:\n"
    "    import numpy as np, torch\n"
    "except Exception:\n"
    "    sys.exit(3)\n"
    "src, dst = sys.argv[1], sys.argv[2]\n"
    "n, c, h, w, k, s, p = (int(v) for v in sys.argv[3:10])\n"
    "d = np.fromfile(src, dtype=np.float32)\n"
    "x = torch.tensor(d[:n * c * h * w]).reshape(n, c, h, w)\n"
    "mp = torch.nn.MaxPool2d(k, s, p, return_indices=True)\n"
    "ap = torch.nn.AvgPool2d(k, s, p)\n"
    "xm = x.clone().requires_grad_(); y, idx = mp(xm)\n"
    "dy = torch.tensor(d[n * c * h * w:]).reshape(y.shape)\n"
    "(y * dy).sum().backward()\n"
    "xa = x.clone().requires_grad_(); ya = ap(xa)\n"
    "(ya * dy).sum().backward()\n"
    "parts = [y.detach(), idx.float(), xm.grad, ya.detach(), xa.grad]\n"
    "np.concatenate([t.numpy().ravel() for t in parts]).astype(np.float32).tofile(dst)\n";

/* Runs torch_pool_script on x (N, C, H, W) and dy; fills `torch` (3 m + 2
 * n floats).  Returns 0 when compared, 1 when skipped (printed why). */
static int run_torch_pool(const tt_pool2d_desc *d, const float *x, size_t n, const float *dy,
                          size_t m, float *torch)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("\n  torch cross-check skipped: no /usr/bin/python3");
        return 1;
    }
    char src[] = "/tmp/tt_pool_torch_in_XXXXXX", dst[] = "/tmp/tt_pool_torch_out_XXXXXX";
    char script[] = "/tmp/tt_pool_torch_py_XXXXXX";
    int fd_src = mkstemp(src), fd_dst = mkstemp(dst), fd_py = mkstemp(script);
    CU_ASSERT_FATAL(fd_src >= 0 && fd_dst >= 0 && fd_py >= 0);
    close(fd_dst);
    size_t len = strlen(torch_pool_script);
    CU_ASSERT_FATAL(write(fd_py, torch_pool_script, len) == (ssize_t)len);
    close(fd_py);
    FILE *f = fdopen(fd_src, "wb");
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT_FATAL(fwrite(x, sizeof *x, n, f) == n && fwrite(dy, sizeof *dy, m, f) == m);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, TH_PYTHON " %s %s %s %d %d %d %d %d %d %d", script, src, dst,
             d->batch, d->channels, d->height, d->width, d->kernel_h, d->stride_h, d->pad_h);
    int rc = system(cmd);
    size_t want = 3 * m + 2 * n, got = 0;
    if (rc == 0) {
        f = fopen(dst, "rb");
        CU_ASSERT_FATAL(f != NULL);
        got = fread(torch, sizeof *torch, want, f);
        fclose(f);
    }
    unlink(src), unlink(dst), unlink(script);
    if (rc != 0 && WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
        printf("\n  torch cross-check skipped: /usr/bin/python3 has no torch");
        return 1;
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(got, want);
    return 0;
}

/* nn.MaxPool2d(k, s, p) and nn.AvgPool2d(k, s, p) against ours, inputs on
 * a grid of 0.25 (ties).  Max: the same floats and indices, and input
 * gradients equal to float rounding (PyTorch adds each output's gradient
 * to its winner in output order, as our gather does: measured 0).  Avg:
 * sums of at most 9 terms in a different order (1e-5 relative, floor 0.1). */
static void check_torch_pool(int batch, int channels, int height, int width, int kernel,
                             int stride, int pad)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_pool2d_desc d = tt_pool2d_square_padded(batch, channels, height, width, kernel, stride, pad);
    int oh = tt_pool2d_out_h(&d), ow = tt_pool2d_out_w(&d);
    size_t n = (size_t)batch * channels * height * width, m = (size_t)batch * channels * oh * ow;
    float *x = malloc(n * sizeof *x), *dy = malloc(m * sizeof *dy);
    float *torch = malloc((3 * m + 2 * n) * sizeof *torch), *got = malloc((n + m) * sizeof *got);
    int *arg = malloc(m * sizeof *arg);
    CU_ASSERT_FATAL(x && dy && torch && got && arg);
    uint64_t seed = 77 + (uint64_t)height * width;
    th_fill_uniform(x, n, -2, 2, &seed);
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i] * 4) / 4;
    th_fill_uniform(dy, m, -1, 1, &seed);
    if (run_torch_pool(&d, x, n, dy, m, torch) == 0) {
        const float *t_y = torch, *t_idx = torch + m, *t_dx = torch + 2 * m;
        const float *t_ya = torch + 2 * m + n, *t_dxa = torch + 3 * m + n;
        tt_buffer *bx = th_upload(x, n, "torch.x"), *by = th_zeros(m, "torch.y");
        tt_buffer *barg = th_zeros(m, "torch.argmax"), *bdy = th_upload(dy, m, "torch.dy");
        tt_buffer *bdx = th_zeros(n, "torch.dx");
        TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
        TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
        th_download(got, by, m);
        TH_OK(tt_read(be, arg, tt_mem_of(barg), m * sizeof *arg));
        int y_diff = 0, idx_diff = 0;
        for (size_t o = 0; o < m; o++) {
            y_diff += got[o] != t_y[o];
            idx_diff += arg[o] != (int)t_idx[o];
        }
        th_download(got, bdx, n);
        double dx_err = th_max_rel_error_f(got, t_dx, n, 0.1);
        TH_OK(tt_fill(be, tt_mem_of(bdx), 0.0f, n));
        TH_OK(tt_avg_pool2d_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
        TH_OK(tt_avg_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
        th_download(got, by, m);
        double ya_err = th_max_rel_error_f(got, t_ya, m, 0.1);
        th_download(got, bdx, n);
        double dxa_err = th_max_rel_error_f(got, t_dxa, n, 0.1);
        printf("\n  vs torch (%d,%d,%d,%d) MaxPool2d(%d, %d, %d) -> %dx%d: values differ %d, "
               "indices differ %d, dinp %.2e; AvgPool2d: forward %.2e, dinp %.2e",
               batch, channels, height, width, kernel, stride, pad, oh, ow, y_diff, idx_diff,
               dx_err, ya_err, dxa_err);
        CU_ASSERT_EQUAL(y_diff, 0);
        CU_ASSERT_EQUAL(idx_diff, 0);
        CU_ASSERT(dx_err < 1e-6);
        CU_ASSERT(ya_err < 1e-5);
        CU_ASSERT(dxa_err < 1e-5);
        tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
        tt_buffer_free(bdx);
    }
    free(x), free(dy), free(torch), free(got), free(arg);
}

static void test_torch(void)
{
    check_torch_pool(2, 3, 9, 11, 3, 2, 1);  /* ResNet's stem pool, odd sizes */
    check_torch_pool(2, 3, 16, 12, 3, 2, 1); /* even sizes */
    check_torch_pool(1, 2, 7, 8, 2, 2, 0);   /* the UNet's pool, unpadded */
}

static void expect_error(tt_status s, tt_code code, const char *needle)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    CU_ASSERT(strstr(tt_status_message(s), needle) != NULL);
    tt_status_free(s);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(64, "perr.a"), *b = th_zeros(64, "perr.b"), *c = th_zeros(64, "perr.c");
    /* a 1x1 image cannot be pooled 2x2 (PyTorch refuses too) */
    tt_pool2d_desc tiny = tt_pool2d_square(1, 3, 1, 1, 2, 2);
    expect_error(tt_max_pool2d_forward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c), &tiny),
                 TT_ERR_INVALID_ARGUMENT, "(1, 3, 1, 1) is smaller than the 2x2 window");
    expect_error(tt_avg_pool2d_forward(be, tt_mem_of(a), tt_mem_of(c), &tiny),
                 TT_ERR_INVALID_ARGUMENT, "avg_pool2d");
    tt_pool2d_desc zero_stride = {1, 1, 4, 4, 2, 2, 0, 2, 0, 0};
    expect_error(tt_avg_pool2d_forward(be, tt_mem_of(a), tt_mem_of(c), &zero_stride),
                 TT_ERR_INVALID_ARGUMENT, "positive");
    /* PyTorch refuses a pad over half the window ("pad should be at most
     * half of effective kernel size"), and so do we */
    tt_pool2d_desc wide_pad = tt_pool2d_square_padded(1, 1, 8, 8, 3, 2, 2);
    expect_error(tt_max_pool2d_forward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c), &wide_pad),
                 TT_ERR_INVALID_ARGUMENT, "pad 2x2 with a 3x3 window");
    tt_pool2d_desc wide_pad_w = {1, 1, 8, 8, 2, 2, 2, 2, 1, 2};
    expect_error(tt_avg_pool2d_backward(be, tt_mem_of(a), tt_mem_of(b), &wide_pad_w),
                 TT_ERR_INVALID_ARGUMENT, "half the window (1x1 here)");
    tt_pool2d_desc negative_pad = {1, 1, 4, 4, 2, 2, 2, 2, -1, 0};
    expect_error(tt_max_pool2d_backward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c),
                                        &negative_pad),
                 TT_ERR_INVALID_ARGUMENT, "pad -1x0");
    /* an input larger than its buffer is refused before any launch */
    tt_pool2d_desc big = tt_pool2d_square(1, 5, 4, 4, 2, 2);
    expect_error(tt_max_pool2d_forward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c), &big),
                 TT_ERR_INVALID_ARGUMENT, "perr.c");
    tt_buffer_free(a), tt_buffer_free(b), tt_buffer_free(c);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"max_pool2d forward, argmax, gradient, twice, without argmax", test_max_pool},
        {"avg_pool2d forward, gradient, twice", test_avg_pool},
        {"max_pool2d ties, NaN and -inf", test_max_pool_ties},
        {"max_pool2d 3x3 stride 2 pad 1: ties, -inf, overlapping gradients",
         test_max_pool_padded_ties},
        {"max_pool2d and avg_pool2d vs PyTorch (padded)", test_torch},
        {"errors name the problem", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("pool", tests, TH_EVERY);
}
