/* The DIRECT convolution (src/ops/conv_direct.c) on the Vulkan backend
 * (shaders/conv_direct/: opencl/conv_direct.cl's kernels but the w8 ones,
 * which are OpenCL's alone) on lavapipe
 * with validation on.  Each case runs conv2d (or conv_transpose2d, whose
 * DIRECT path runs these kernels where its kernel does not tile the
 * output) forward and backward with the algorithm forced to DIRECT, from
 * the same inputs on OpenCL and on Vulkan (vk_compare.h: odd offsets,
 * poison around every array), once per DIRECT row, and compares the output and the three gradients
 * with the double-precision reference: the forward of tests/ref_conv.c,
 * the gradients its central differences (the loss sum(dout * out) is
 * linear in each argument, so they are exact up to rounding), the
 * gradients added into non-zero starting values.  The bound of an element
 * is 2 (T + 2) 2^-24 sum|terms| (T the most terms any sum of the case
 * has; fma may round twice on Vulkan), the sum of |terms| from the same
 * reference run on absolute values; Vulkan and OpenCL must each be within
 * it and within twice it of each other.  Also: the program counts as
 * present on Vulkan, and AUTO there times DIRECT among its candidates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/conv2d.h"
#include "ops/conv_autotune.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "vk_compare.h"

/* ---- the cases ----------------------------------------------------------- */

typedef struct direct_case {
    const char *name;
    int transposed; /* conv_transpose2d (weight (Cin, Cout, kH, kW)) */
    int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, oph, opw;
    int with_bias;
    int accumulate; /* conv2d's adding forward (tt_conv2d_forward_add, no bias) */
} direct_case;

static const direct_case cases[] = {
    /* the UNet's 3x3, W a multiple of 8 */
    {"3x3 s1 p1 8x16 3->5, bias", 0, 2, 3, 8, 16, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},
    /* odd sizes: the kernels' edges */
    {"3x3 s1 p1 7x9 4->6, adding", 0, 1, 4, 7, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1},
    /* 17 input channels and 41 columns: blocks of channels and work-groups
     * of columns cut short */
    {"3x3 s1 p1 3x41 17->2, bias", 0, 1, 17, 3, 41, 2, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},
    {"1x1 6x5 4->3, bias", 0, 2, 4, 6, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0},
    {"3x3 s2 p1 9x7 3->4", 0, 1, 3, 9, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0},
    /* a ragged block of 16 output channels, uneven padding and dilation */
    {"3x2 p(2,1) d(1,2) 7x11 5->17, adding", 0, 1, 5, 7, 11, 17, 3, 2, 1, 1, 2, 1, 1, 2, 0, 0,
     0, 1},
    {"transposed 3x3 s2 p1 op1 5x4 3->2, bias", 1, 1, 3, 5, 4, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1,
     0},
    /* its input gradient is the 3x3 forward kernel */
    {"transposed 3x3 s1 p1 6x8 4->3", 1, 2, 4, 6, 8, 3, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

/* The DIRECT rows, so that every kernel of the program runs: direct
 * (forward, backward data and weight), direct_tiled (the tiled forward),
 * direct_w8 (OpenCL's 8-wide three against Vulkan's scalar shaders: Vulkan
 * has no direct_w8). */
typedef struct config {
    const char *name;
    tt_conv_algo algo;
} config;

static const config configs[] = {{"direct", TT_CONV_ALGO_DIRECT},
                                 {"direct_tiled", TT_CONV_ALGO_DIRECT_TILED},
                                 {"direct_w8", TT_CONV_ALGO_DIRECT_W8}};
enum { CONFIG_COUNT = sizeof configs / sizeof configs[0] };

/* A case under a config: what direct_op runs. */
typedef struct run {
    const direct_case *c;
    tt_conv_algo algo;
} run;

/* The row `r` runs as on `be`: on Vulkan direct stands in for direct_w8. */
static tt_conv_algo algo_on(const tt_backend *be, const run *r)
{
    if (r->algo == TT_CONV_ALGO_DIRECT_W8 && be->kernels_of == TT_BACKEND_VULKAN)
        return TT_CONV_ALGO_DIRECT;
    return r->algo;
}

static tt_conv2d_desc conv_desc(const direct_case *c)
{
    return (tt_conv2d_desc){.batch = c->n, .in_channels = c->cin, .in_h = c->h, .in_w = c->w,
                            .out_channels = c->cout, .kernel_h = c->kh, .kernel_w = c->kw,
                            .stride_h = c->sh, .stride_w = c->sw, .pad_h = c->ph, .pad_w = c->pw,
                            .dilation_h = c->dh, .dilation_w = c->dw, .groups = 1,
                            .algo = TT_CONV_ALGO_DIRECT};
}

static tt_conv_transpose2d_desc convt_desc(const direct_case *c)
{
    return (tt_conv_transpose2d_desc){
        .batch = c->n, .in_channels = c->cin, .in_h = c->h, .in_w = c->w,
        .out_channels = c->cout, .kernel_h = c->kh, .kernel_w = c->kw, .stride_h = c->sh,
        .stride_w = c->sw, .pad_h = c->ph, .pad_w = c->pw, .output_pad_h = c->oph,
        .output_pad_w = c->opw, .dilation_h = c->dh, .dilation_w = c->dw, .groups = 1,
        .algo = TT_CONV_ALGO_DIRECT};
}

/* The arrays of a case, in run_on's order. */
enum { OUT, INP, WEIGHT, BIAS, DOUT, DINP, DWEIGHT, DBIAS, ARRAYS };
static const char *const array_names[ARRAYS] = {"out",  "inp",  "weight",  "bias",
                                                "dout", "dinp", "dweight", "dbias"};

static void sizes_of(const direct_case *c, size_t n[ARRAYS], size_t *terms)
{
    size_t oh, ow;
    if (c->transposed) {
        tt_conv_transpose2d_desc d = convt_desc(c);
        TH_OK(tt_conv_transpose2d_check(&d));
        oh = (size_t)tt_conv_transpose2d_out_h(&d), ow = (size_t)tt_conv_transpose2d_out_w(&d);
    } else {
        tt_conv2d_desc d = conv_desc(c);
        TH_OK(tt_conv2d_check(&d));
        oh = (size_t)tt_conv2d_out_h(&d), ow = (size_t)tt_conv2d_out_w(&d);
    }
    n[OUT] = n[DOUT] = (size_t)c->n * c->cout * oh * ow;
    n[INP] = n[DINP] = (size_t)c->n * c->cin * c->h * c->w;
    n[WEIGHT] = n[DWEIGHT] = (size_t)c->cout * c->cin * c->kh * c->kw;
    n[BIAS] = n[DBIAS] = (size_t)c->cout;
    /* the most terms of any sum: an output over its inputs and taps, an
     * input gradient over the outputs and taps, a weight's or a bias's over
     * the positions; plus the starting value and the bias */
    size_t taps = (size_t)c->kh * c->kw, most = (size_t)c->cin * taps;
    if ((size_t)c->cout * taps > most) most = (size_t)c->cout * taps;
    if ((size_t)c->n * oh * ow > most) most = (size_t)c->n * oh * ow;
    if ((size_t)c->n * c->h * c->w > most) most = (size_t)c->n * c->h * c->w;
    *terms = most + 2;
}

/* Forward (adding when the case does) and the backward adding into
 * dinp, dweight and dbias. */
static void direct_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const run *r = ctx;
    const direct_case *c = r->c;
    tt_mem none = {0};
    tt_mem bias = c->with_bias ? m[BIAS] : none, dbias = c->with_bias ? m[DBIAS] : none;
    if (c->transposed) {
        tt_conv_transpose2d_desc d = convt_desc(c);
        d.algo = algo_on(be, r);
        TH_OK(tt_conv_transpose2d_forward(be, m[OUT], m[INP], m[WEIGHT], bias, &d, none));
        TH_OK(tt_conv_transpose2d_backward(be, m[DINP], m[DWEIGHT], dbias, m[DOUT], m[INP],
                                           m[WEIGHT], &d, none));
        return;
    }
    tt_conv2d_desc d = conv_desc(c);
    d.algo = algo_on(be, r);
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) /* no fallback to im2col */
        CU_ASSERT_EQUAL(tt_conv2d_algo_for(&d, (tt_conv_dir)dir), d.algo);
    if (c->accumulate) TH_OK(tt_conv2d_forward_add(be, m[OUT], m[INP], m[WEIGHT], &d, none));
    else TH_OK(tt_conv2d_forward(be, m[OUT], m[INP], m[WEIGHT], bias, &d, none));
    TH_OK(tt_conv2d_backward(be, m[DINP], m[DWEIGHT], dbias, m[DOUT], m[INP], m[WEIGHT], &d, none));
}

/* ---- the reference ------------------------------------------------------- */

/* The case's forward in double over given arrays, and the loss
 * sum(dout * forward) whose central differences are the gradients. */
typedef struct reference {
    const direct_case *c;
    double *inp, *weight, *bias, *dout, *out; /* out: scratch */
    size_t n_out;
} reference;

static void ref_forward(const reference *r)
{
    const direct_case *c = r->c;
    const double *bias = c->with_bias ? r->bias : NULL;
    if (c->transposed) {
        tt_conv_transpose2d_desc d = convt_desc(c);
        ref_conv_transpose2d_forward(r->out, r->inp, r->weight, bias, &d);
    } else {
        tt_conv2d_desc d = conv_desc(c);
        ref_conv2d_forward(r->out, r->inp, r->weight, bias, &d);
    }
}

static double ref_loss(const double *x, void *ctx)
{
    (void)x; /* one of r's arrays, perturbed in place */
    reference *r = ctx;
    ref_forward(r);
    double sum = 0;
    for (size_t i = 0; i < r->n_out; i++) sum += r->dout[i] * r->out[i];
    return sum;
}

/* want[k] and mag[k] (the sum of |terms|) of every array k after the op,
 * from the inputs `in`; the inputs' own arrays are copied unchanged. */
static void reference_of(const direct_case *c, const size_t n[ARRAYS], float *const in[ARRAYS],
                         double *want[ARRAYS], double *mag[ARRAYS])
{
    for (int k = 0; k < ARRAYS; k++) {
        want[k] = calloc(n[k] + 1, sizeof(double));
        mag[k] = calloc(n[k] + 1, sizeof(double));
        CU_ASSERT_FATAL(want[k] && mag[k]);
    }
    for (int pass = 0; pass < 2; pass++) { /* the values, then the absolute values */
        double *d[ARRAYS], **into = pass ? mag : want;
        for (int k = 0; k < ARRAYS; k++) {
            d[k] = th_to_double(in[k], n[k]);
            if (pass)
                for (size_t i = 0; i < n[k]; i++) d[k][i] = fabs(d[k][i]);
        }
        double *out = malloc(n[OUT] * sizeof *out);
        CU_ASSERT_FATAL(out != NULL);
        reference r = {c, d[INP], d[WEIGHT], d[BIAS], d[DOUT], out, n[OUT]};
        ref_forward(&r);
        for (size_t i = 0; i < n[OUT]; i++) into[OUT][i] = (c->accumulate ? d[OUT][i] : 0) + out[i];
        static const int grads[][2] = {{INP, DINP}, {WEIGHT, DWEIGHT}, {BIAS, DBIAS}};
        for (int g = 0; g < 3; g++) {
            int x = grads[g][0], dx = grads[g][1];
            if (x == BIAS && !c->with_bias) {
                for (size_t i = 0; i < n[dx]; i++) into[dx][i] = d[dx][i]; /* untouched */
                continue;
            }
            th_numeric_grad(ref_loss, &r, d[x], n[x], 1e-2, into[dx]);
            for (size_t i = 0; i < n[dx]; i++) into[dx][i] += d[dx][i];
        }
        for (int k = INP; k <= DOUT; k++) /* inputs stay as they were */
            for (size_t i = 0; i < n[k]; i++) into[k][i] = d[k][i];
        free(out);
        for (int k = 0; k < ARRAYS; k++) free(d[k]);
    }
}

/* ---- the comparison ------------------------------------------------------ */

typedef struct tally {
    int runs, failures;
    double worst; /* Vulkan's largest error as a share of its bound */
} tally;

static int compare(const direct_case *c, const config *f, const op_io *cl, const op_io *vk,
                   double *const want[ARRAYS], double *const mag[ARRAYS], size_t terms, tally *t)
{
    const double eps = ldexp(1.0, -24);
    int ok = 1;
    for (int k = 0; k < ARRAYS; k++) {
        size_t bad = 0;
        for (size_t i = 0; i < vk->n[k]; i++) {
            double bound = 2.0 * (double)terms * eps * mag[k][i] + 1e-9;
            double v = vk->out[k][i], o = cl->out[k][i];
            double e_vk = fabs(v - want[k][i]), e_cl = fabs(o - want[k][i]);
            if (!(e_vk <= bound && e_cl <= bound && fabs(v - o) <= 2 * bound)) bad++;
            else if (e_vk / bound > t->worst) t->worst = e_vk / bound;
        }
        if (bad)
            printf("\n    %s, %s: %zu of %zu %s outside the bound", c->name, f->name, bad,
                   vk->n[k], array_names[k]);
        ok &= bad == 0;
    }
    t->runs++;
    t->failures += !ok;
    return ok;
}

static void test_direct_cases(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(vulkan());
    uint64_t seed = 23;
    tally t = {0, 0, 0};
    for (int s = 0; s < CASE_COUNT; s++) {
        const direct_case *c = &cases[s];
        size_t n[ARRAYS], terms;
        sizes_of(c, n, &terms);
        float *in[ARRAYS];
        for (int k = 0; k < ARRAYS; k++) in[k] = random_floats(n[k], &seed);
        double *want[ARRAYS], *mag[ARRAYS];
        reference_of(c, n, in, want, mag);
        for (int f = 0; f < CONFIG_COUNT; f++) {
            op_io cl = {.count = ARRAYS}, vk;
            for (int k = 0; k < ARRAYS; k++) cl.n[k] = n[k], cl.in[k] = in[k];
            run r = {c, configs[f].algo};
            run_both(&cl, &vk, direct_op, &r);
            compare(c, &configs[f], &cl, &vk, want, mag, terms, &t);
            io_free(&cl), io_free(&vk);
        }
        for (int k = 0; k < ARRAYS; k++) free(in[k]), free(want[k]), free(mag[k]);
    }
    CU_ASSERT_EQUAL(t.failures, 0);
    printf("\n    DIRECT on Vulkan and OpenCL: %d runs (%d cases x 3 rows), output and "
           "gradients within 2 (T + 2) 2^-24 sum|terms| of the reference and its central "
           "differences; Vulkan's worst error %.3f of that bound",
           t.runs, CASE_COUNT, t.worst);
    no_messages();
}

/* ---- the program on Vulkan ----------------------------------------------- */

/* Every kernel is there, so the program counts as present and the
 * dispatch offers DIRECT on Vulkan: an AUTO conv2d times it along with
 * im2col + GEMM (3 runs a candidate), in a fresh find-db. */
static void test_direct_present(void)
{
    tt_backend *vk = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(vk);
    CU_ASSERT(tt_backend_has_program(vk, "conv_direct"));
    char dir[] = "/tmp/tt_vk_direct_XXXXXX", path[1024], old_cache[1024] = "";
    const char *cache = getenv("TT_CACHE_DIR");
    if (cache) snprintf(old_cache, sizeof old_cache, "%s", cache);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    th_setenv("TT_CACHE_DIR", dir);
    th_setenv("TT_CONV_ALGO", NULL);
    tt_conv_autotune_reset();
    /* 1x1: no Winograd */
    direct_case c = {"AUTO 1x1 5x7 3->4", 0, 1, 3, 5, 7, 4, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0};
    size_t n[ARRAYS], terms;
    sizes_of(&c, n, &terms);
    uint64_t seed = 5;
    tt_buffer *buf[ARRAYS];
    for (int k = 0; k <= BIAS; k++) {
        float *host = random_floats(n[k], &seed);
        buf[k] = alloc(vk, n[k] * 4, array_names[k]);
        TH_OK(tt_write(vk, tt_mem_of(buf[k]), host, n[k] * 4));
        free(host);
    }
    tt_conv2d_desc d = conv_desc(&c);
    d.algo = TT_CONV_ALGO_AUTO;
    TH_OK(tt_conv2d_forward(vk, tt_mem_of(buf[OUT]), tt_mem_of(buf[INP]), tt_mem_of(buf[WEIGHT]),
                            tt_mem_of(buf[BIAS]), &d, (tt_mem){0}));
    TH_OK(tt_finish(vk));
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1);
    /* im2col + GEMM and DIRECT at least, 3 runs each, but for the runs a
     * candidate sat out when its first timed run was past twice the
     * best's (and 5 ms: a loaded host can make it so) */
    CU_ASSERT(s.runs + s.pruned >= 6);
    tt_conv_algo pick = tt_conv2d_algo_on(vk, &d, TT_CONV_DIR_FORWARD);
    printf("\n    AUTO on Vulkan timed %llu runs (%llu sat out), picked %s",
           (unsigned long long)s.runs, (unsigned long long)s.pruned, tt_conv_algo_name(pick));
    for (int k = 0; k <= BIAS; k++) tt_buffer_free(buf[k]);
    if (!tt_conv_find_db_path(vk, path, sizeof path)) unlink(path);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/find-db", dir);
    rmdir(sub);
    rmdir(dir);
    th_setenv("TT_CACHE_DIR", cache ? old_cache : NULL);
    tt_conv_autotune_reset();
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"DIRECT conv2d and conv_transpose2d: Vulkan = OpenCL = reference", test_direct_cases},
        {"conv_direct is present on Vulkan; AUTO times DIRECT", test_direct_present},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_conv_direct", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}
