/* The residual add (ops/add.h), out = [relu](a + b): forward and backward
 * against a plain-C reference bit for bit (one float addition each) on odd
 * and large sizes, finite-difference gradients, backward adding twice, in
 * place (forward out = a, b or both; backward da or db at dout's place),
 * absent gradients, refused aliasing, and torch's relu(a + b) forward and
 * backward when torch is there.  Every tensor sits PAD floats into its
 * buffer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/add.h"
#include "ref_norm.h" /* ref_norm_torch_run */

enum { PAD = 5 };

/* 65535 work-groups of 64 is lavapipe's most in x: the largest size here is
 * past it, so Vulkan folds the launch into rows (tt_global_id). */
static const size_t sizes[] = {1, 7, 64, 1000, 33 * 65 + 1, 65535 * 64 + 77};
enum { SIZE_COUNT = sizeof sizes / sizeof sizes[0] };

/* The reference, in float as the device computes it. */
static float ref_forward(float a, float b, int relu)
{
    float v = a + b;
    return relu && v < 0.0f ? 0.0f : v;
}
static float ref_grad(float dout, float out, int relu) { return relu && !(out > 0.0f) ? 0.0f : dout; }

/* a, b uniform in [-2, 2), every 9th b = -a (an exact zero sum: the ReLU's
 * mask is 0 there, as torch's). */
static void make_inputs(float *a, float *b, size_t n, uint64_t *seed)
{
    th_fill_uniform(a, n, -2, 2, seed);
    th_fill_uniform(b, n, -2, 2, seed);
    for (size_t i = 0; i < n; i += 9) b[i] = -a[i];
}

static size_t differing(const float *x, const float *y, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += memcmp(&x[i], &y[i], sizeof *x) != 0;
    return count;
}

/* Forward, then backward twice into non-zero da and db: every value the
 * reference's bits. */
static void test_reference(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int s = 0; s < SIZE_COUNT; s++)
        for (int relu = 0; relu < 2; relu++) {
            size_t n = sizes[s];
            uint64_t seed = 40 + 2 * (uint64_t)s + (uint64_t)relu;
            float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
            float *dout = th_random_floats(n, -1, 1, &seed), *da0 = th_random_floats(n, -1, 1, &seed);
            float *db0 = th_random_floats(n, -1, 1, &seed), *got = malloc(n * sizeof *got);
            float *want = malloc(n * sizeof *want), *g = malloc(n * sizeof *g);
            CU_ASSERT_FATAL(a && b && got && want && g);
            make_inputs(a, b, n, &seed);
            th_pool pool = {.pad = PAD};
            tt_mem ma = th_pool_put(&pool, a, n, "add.a"), mb = th_pool_put(&pool, b, n, "add.b");
            tt_mem mo = th_pool_put(&pool, NULL, n, "add.out"), mdo = th_pool_put(&pool, dout, n, "add.dout");
            tt_mem mda = th_pool_put(&pool, da0, n, "add.da"), mdb = th_pool_put(&pool, db0, n, "add.db");
            TH_OK(tt_add_forward(be, mo, ma, mb, relu, n));
            th_get(got, mo, n);
            size_t zeros = 0;
            for (size_t i = 0; i < n; i++) {
                want[i] = ref_forward(a[i], b[i], relu);
                g[i] = ref_grad(dout[i], want[i], relu);
                zeros += want[i] == 0.0f;
            }
            size_t bad_out = differing(got, want, n);
            TH_OK(tt_add_backward(be, mda, mdb, mdo, mo, relu, n));
            for (size_t i = 0; i < n; i++) want[i] = da0[i] + g[i];
            th_get(got, mda, n);
            size_t bad_da = differing(got, want, n);
            for (size_t i = 0; i < n; i++) want[i] = db0[i] + g[i];
            th_get(got, mdb, n);
            size_t bad_db = differing(got, want, n);
            TH_OK(tt_add_backward(be, mda, mdb, mdo, mo, relu, n));
            for (size_t i = 0; i < n; i++) want[i] = (da0[i] + g[i]) + g[i];
            th_get(got, mda, n);
            size_t bad_twice = differing(got, want, n);
            printf("\n  add%s n=%zu: values unlike the reference: out %zu, da %zu, db %zu, "
                   "da after two backwards %zu (out zeros %zu)",
                   relu ? "+relu" : "", n, bad_out, bad_da, bad_db, bad_twice, zeros);
            CU_ASSERT_EQUAL(bad_out, 0);
            CU_ASSERT_EQUAL(bad_da, 0);
            CU_ASSERT_EQUAL(bad_db, 0);
            CU_ASSERT_EQUAL(bad_twice, 0);
            if (relu && n >= 64) CU_ASSERT(zeros > n / 4 && zeros < 3 * n / 4); /* the mask bites */
            th_pool_free(&pool);
            free(a), free(b), free(dout), free(da0), free(db0), free(got), free(want), free(g);
        }
}

/* L = sum(dout * [relu](a + b)) in double; x is a or b, perturbed in place. */
typedef struct add_loss {
    const double *a, *b, *dout;
    size_t n;
    int relu;
} add_loss;

static double add_loss_fn(const double *unused, void *ctx)
{
    (void)unused;
    const add_loss *l = ctx;
    double sum = 0;
    for (size_t i = 0; i < l->n; i++) {
        double v = l->a[i] + l->b[i];
        sum += l->dout[i] * (l->relu && v < 0 ? 0 : v);
    }
    return sum;
}

/* The increments of one backward vs central differences of the double
 * loss, with a + b kept 0.02 or more from the ReLU's kink. */
static void test_finite_differences(void)
{
    tt_backend *be = th_backend();
    enum { N = 2 * 3 * 5 * 7 };
    for (int relu = 0; relu < 2; relu++) {
        uint64_t seed = 77 + (uint64_t)relu;
        float a[N], b[N], da0[N], db0[N], da[N], db[N], dout[N];
        th_fill_uniform(b, N, -2, 2, &seed);
        th_fill_uniform(dout, N, -1, 1, &seed);
        th_fill_uniform(da0, N, -1, 1, &seed), th_fill_uniform(db0, N, -1, 1, &seed);
        for (int i = 0; i < N; i++) {
            double m = th_uniform(&seed, 0.02, 2.0);
            a[i] = (float)((th_uniform(&seed, 0, 1) < 0.5 ? -m : m) - b[i]);
        }
        th_pool pool = {.pad = PAD};
        tt_mem ma = th_pool_put(&pool, a, N, "add.a"), mb = th_pool_put(&pool, b, N, "add.b");
        tt_mem mo = th_pool_put(&pool, NULL, N, "add.out"), mdo = th_pool_put(&pool, dout, N, "add.dout");
        tt_mem mda = th_pool_put(&pool, da0, N, "add.da"), mdb = th_pool_put(&pool, db0, N, "add.db");
        TH_OK(tt_add_forward(be, mo, ma, mb, relu, N));
        TH_OK(tt_add_backward(be, mda, mdb, mdo, mo, relu, N));
        th_get(da, mda, N), th_get(db, mdb, N);
        double *ad = th_to_double(a, N), *bd = th_to_double(b, N), *dd = th_to_double(dout, N);
        double num_a[N], num_b[N];
        add_loss l = {ad, bd, dd, N, relu};
        th_numeric_grad(add_loss_fn, &l, ad, N, 1e-3, num_a);
        th_numeric_grad(add_loss_fn, &l, bd, N, 1e-3, num_b);
        double err = 0;
        int masked = 0;
        for (int i = 0; i < N; i++) {
            err = fmax(err, fabs((double)(da[i] - da0[i]) - num_a[i]));
            err = fmax(err, fabs((double)(db[i] - db0[i]) - num_b[i]));
            masked += num_a[i] == 0.0;
        }
        printf("\n  add%s: max |gradient - central difference| %.2e (%d of %d masked)",
               relu ? "+relu" : "", err, masked, N);
        CU_ASSERT(err < 1e-6); /* an increment of size 1 and the float sum's rounding */
        if (relu) CU_ASSERT(masked > N / 4 && masked < 3 * N / 4);
        th_pool_free(&pool);
        free(ad), free(bd), free(dd);
    }
}

/* In place gives the bits of out of place: forward out = a, out = b,
 * a = b = out; backward da or db at dout's place (written, not added),
 * the other still adding dout as it was; absent gradients and, without
 * the ReLU, an absent out. */
static void test_in_place(void)
{
    tt_backend *be = th_backend();
    enum { N = 1001 };
    float a[N], b[N], dout[N], da0[N], db0[N], want[N], got[N], want_b[N];
    uint64_t seed = 5;
    make_inputs(a, b, N, &seed);
    th_fill_uniform(dout, N, -1, 1, &seed);
    th_fill_uniform(da0, N, -1, 1, &seed), th_fill_uniform(db0, N, -1, 1, &seed);
    for (int relu = 0; relu < 2; relu++) {
        th_pool pool = {.pad = PAD};
        tt_mem ma = th_pool_put(&pool, a, N, "add.a"), mb = th_pool_put(&pool, b, N, "add.b");
        tt_mem mo = th_pool_put(&pool, NULL, N, "add.out");
        TH_OK(tt_add_forward(be, mo, ma, mb, relu, N));
        th_get(want, mo, N);
        tt_mem ia = th_pool_put(&pool, a, N, "add.ia"), ib = th_pool_put(&pool, b, N, "add.ib");
        TH_OK(tt_add_forward(be, ia, ia, mb, relu, N));
        th_get(got, ia, N);
        CU_ASSERT_EQUAL(differing(got, want, N), 0);
        TH_OK(tt_add_forward(be, ib, ma, ib, relu, N));
        th_get(got, ib, N);
        CU_ASSERT_EQUAL(differing(got, want, N), 0);
        tt_mem both = th_pool_put(&pool, a, N, "add.both");
        TH_OK(tt_add_forward(be, both, both, both, relu, N));
        th_get(got, both, N);
        size_t bad = 0;
        for (int i = 0; i < N; i++) {
            float w = ref_forward(a[i], a[i], relu);
            bad += memcmp(&w, &got[i], sizeof w) != 0;
        }
        CU_ASSERT_EQUAL(bad, 0);

        /* backward out of place: the gradients g (into zeros) and db0 + g */
        tt_mem mdo = th_pool_put(&pool, dout, N, "add.dout");
        tt_mem za = th_pool_put(&pool, NULL, N, "add.za"), mdb = th_pool_put(&pool, db0, N, "add.db");
        TH_OK(tt_add_backward(be, za, mdb, mdo, mo, relu, N));
        th_get(want, za, N), th_get(want_b, mdb, N);
        /* da at dout's place: written with g; db adds as before */
        tt_mem d1 = th_pool_put(&pool, dout, N, "add.d1"), db1 = th_pool_put(&pool, db0, N, "add.db1");
        TH_OK(tt_add_backward(be, d1, db1, d1, mo, relu, N));
        th_get(got, d1, N);
        CU_ASSERT_EQUAL(differing(got, want, N), 0);
        th_get(got, db1, N);
        CU_ASSERT_EQUAL(differing(got, want_b, N), 0);
        /* db at dout's place, da absent */
        tt_mem d2 = th_pool_put(&pool, dout, N, "add.d2");
        TH_OK(tt_add_backward(be, (tt_mem){0}, d2, d2, mo, relu, N));
        th_get(got, d2, N);
        CU_ASSERT_EQUAL(differing(got, want, N), 0);
        /* da alone adds g; without the ReLU out may be absent */
        tt_mem da = th_pool_put(&pool, da0, N, "add.da1");
        TH_OK(tt_add_backward(be, da, (tt_mem){0}, mdo, relu ? mo : (tt_mem){0}, relu, N));
        th_get(got, da, N);
        bad = 0;
        for (int i = 0; i < N; i++) {
            float w = da0[i] + want[i];
            bad += memcmp(&w, &got[i], sizeof w) != 0;
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* no gradient wanted: nothing to do, even without dout */
        TH_OK(tt_add_backward(be, (tt_mem){0}, (tt_mem){0}, (tt_mem){0}, (tt_mem){0}, relu, N));
        th_pool_free(&pool);
    }
}

static void expect_error(tt_status s, const char *needle)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    if (!strstr(tt_status_message(s), needle))
        printf("\n  message '%s' lacks '%s'", tt_status_message(s), needle);
    CU_ASSERT(strstr(tt_status_message(s), needle) != NULL);
    tt_status_free(s);
}

static void test_refused(void)
{
    tt_backend *be = th_backend();
    enum { N = 16 };
    tt_buffer *x = th_zeros(3 * N, "add.x"), *y = th_zeros(N, "add.y");
    tt_mem m0 = tt_mem_of(x), m1 = tt_mem_f32(m0, 1), m2 = tt_mem_f32(m0, 2 * N);
    tt_mem other = tt_mem_of(y);
    expect_error(tt_add_forward(be, m1, m0, m2, 0, N), "overlap without being the same place");
    expect_error(tt_add_forward(be, m0, m2, m1, 1, N), "overlap without being the same place");
    expect_error(tt_add_forward(be, other, m0, m2, 0, N + 1), "add.y");
    expect_error(tt_add_backward(be, m0, m0, other, (tt_mem){0}, 0, N), "da and db overlap");
    expect_error(tt_add_backward(be, m0, (tt_mem){0}, m1, (tt_mem){0}, 0, N),
                 "overlap without being the same place");
    expect_error(tt_add_backward(be, m0, (tt_mem){0}, other, (tt_mem){0}, 1, N), "pass out");
    expect_error(tt_add_backward(be, m0, (tt_mem){0}, other, m1, 1, N), "forward's output");
    expect_error(tt_add_backward(be, m0, (tt_mem){0}, (tt_mem){0}, m2, 0, N), "dout");
    tt_buffer_free(x), tt_buffer_free(y);
}

/* torch in float64: y = relu(a + b), (y * dout).sum().backward(). */
static void test_torch_cross_check(void)
{
    enum { N = 2, C = 3, H = 9, W = 11, n = N * C * H * W };
    uint64_t seed = 2026;
    float *in = malloc(3 * n * sizeof *in), *ref = malloc(3 * n * sizeof *ref);
    CU_ASSERT_FATAL(in && ref);
    float *a = in, *b = in + n, *dout = in + 2 * n;
    make_inputs(a, b, n, &seed);
    th_fill_uniform(dout, n, -1, 1, &seed);
    char body[800], why[256];
    snprintf(body, sizeof body,
             "n = %d\n"
             "t = torch.from_numpy(inp.astype(np.float64))\n"
             "a = t[:n].reshape(%d, %d, %d, %d).clone().requires_grad_()\n"
             "b = t[n:2 * n].reshape(a.shape).clone().requires_grad_()\n"
             "dout = t[2 * n:].reshape(a.shape)\n"
             "y = torch.relu(a + b)\n"
             "(y * dout).sum().backward()\n"
             "emit(y.detach(), a.grad, b.grad)\n",
             n, N, C, H, W);
    if (ref_norm_torch_run(body, in, 3 * n, ref, 3 * n, why, sizeof why)) {
        printf("\n  add torch cross-check skipped: %s", why);
        free(in), free(ref);
        return;
    }
    th_pool pool = {.pad = PAD};
    tt_mem ma = th_pool_put(&pool, a, n, "add.a"), mb = th_pool_put(&pool, b, n, "add.b");
    tt_mem mdo = th_pool_put(&pool, dout, n, "add.dout");
    tt_mem mda = th_pool_put(&pool, NULL, n, "add.da");
    tt_backend *be = th_backend();
    /* the ResNet way: out over the identity b, the identity's gradient at
     * dout's place */
    TH_OK(tt_add_forward(be, mb, ma, mb, 1, n));
    TH_OK(tt_add_backward(be, mda, mdo, mdo, mb, 1, n));
    float *got = malloc(3 * n * sizeof *got);
    CU_ASSERT_FATAL(got != NULL);
    th_get(got, mb, n), th_get(got + n, mda, n), th_get(got + 2 * n, mdo, n);
    double *want = th_to_double(ref, 3 * n);
    double ey = th_max_rel_error(got, want, n, 1e-6);
    double ea = th_max_rel_error(got + n, want + n, n, 1e-6);
    double eb = th_max_rel_error(got + 2 * n, want + 2 * n, n, 1e-6);
    size_t masked = 0;
    for (size_t i = 0; i < (size_t)n; i++) masked += want[n + i] == 0.0;
    printf("\n  add+relu vs torch (%d floats, %zu masked): max rel err y %.2e da %.2e db %.2e", n,
           masked, ey, ea, eb);
    CU_ASSERT(ey < 1e-6); /* torch adds in double, we in float: one rounding */
    CU_ASSERT(ea == 0.0); /* gradients are dout or 0, exactly */
    CU_ASSERT(eb == 0.0);
    CU_ASSERT(masked > 0);
    th_pool_free(&pool);
    free(in), free(ref), free(got), free(want);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward and backward vs reference, odd and large sizes", test_reference},
        {"finite differences, with and without ReLU", test_finite_differences},
        {"in place, absent gradients", test_in_place},
        {"aliasing and sizes refused", test_refused},
        {"cross-check with torch", test_torch_cross_check},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("add", tests, TH_EVERY);
}
