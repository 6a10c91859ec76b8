/* Dropout and drop-path with masks regenerated from (seed, index)
 * (ops/dropout.h): the device's results equal the plain-C reference
 * (tests/ref_dropout.c) bit for bit, forward and backward, at offsets
 * behind poison, on odd, prime and 1-element sizes; the kept fraction is
 * near 1 - p; the same seed gives the same mask on a later call, another
 * seed another; backward is the forward's transpose (finite differences);
 * p = 0 is the identity; in place works; p outside [0, 1) and bad sizes are
 * errors naming the op and the value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/dropout.h"
#include "ref_dropout.h"

/* Finite differences of L = sum(dy * dropout(x)) in double, a linear
 * function: exact up to rounding of values of size 1 over 2h. */
#define GRAD_H 1e-3
#define GRAD_TOL 1e-9
#define ERR_FLOOR 0.1

static const uint64_t seeds[] = {1, 0x123456789abcdef0ull, UINT64_MAX};
static const float probabilities[] = {0.1f, 0.5f, 0.75f};

static size_t count_differ(const float *a, const float *b, size_t n)
{
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    return differ;
}

/* The op under test: dropout when group is 0, else drop-path with
 * per_sample = group. */
static tt_status forward(tt_mem out, tt_mem inp, float p, uint64_t seed, size_t n, size_t group)
{
    if (group == 0) return tt_dropout_forward(th_backend(), out, inp, p, seed, n);
    return tt_drop_path_forward(th_backend(), out, inp, p, seed, n / group, group);
}

static tt_status backward(tt_mem dinp, tt_mem dout, float p, uint64_t seed, size_t n,
                          size_t group)
{
    if (group == 0) return tt_dropout_backward(th_backend(), dinp, dout, p, seed, n);
    return tt_drop_path_backward(th_backend(), dinp, dout, p, seed, n / group, group);
}

/* Forward into NaNs and backward into a non-zero dinp, twice, at offsets
 * behind poison: the reference's bits.  Returns how many differ. */
static size_t check_bits(size_t n, size_t group, float p, uint64_t seed)
{
    uint64_t state = 3 + n + (uint64_t)(p * 100) + (seed & 0xff);
    size_t ref_group = group ? group : 1;
    float *x = th_random_floats(n, -2, 2, &state), *dy = th_random_floats(n, -1, 1, &state);
    float *dx = th_random_floats(n, -1, 1, &state), *nan_out = malloc(n * sizeof *nan_out);
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    CU_ASSERT_FATAL(nan_out && want && got);
    for (size_t i = 0; i < n; i++) nan_out[i] = NAN;
    th_pool pool = {.pad = 3};
    tt_mem mx = th_pool_put(&pool, x, n, "drop.x"), my = th_pool_put(&pool, nan_out, n, "drop.y");
    tt_mem mdy = th_pool_put(&pool, dy, n, "drop.dy"), mdx = th_pool_put(&pool, dx, n, "drop.dx");

    TH_OK(forward(my, mx, p, seed, n, group));
    th_get(got, my, n);
    ref_dropout_forward(want, x, p, seed, n, ref_group);
    size_t differ = count_differ(got, want, n);
    for (int times = 0; times < 2; times++) {
        TH_OK(backward(mdx, mdy, p, seed, n, group));
        ref_dropout_backward(dx, dy, p, seed, n, ref_group);
    }
    th_get(got, mdx, n);
    differ += count_differ(got, dx, n);
    CU_ASSERT_EQUAL(differ, 0);
    if (differ)
        printf("\n  %s n %zu group %zu p %g seed %llx: %zu differ", group ? "drop_path" : "dropout",
               n, group, (double)p, (unsigned long long)seed, differ);
    th_pool_free(&pool);
    free(x), free(dy), free(dx), free(nan_out), free(want), free(got);
    return differ;
}

/* The library's hash is the header's statement (the reference writes it
 * out again), and a few values are pinned (computed a third time, in
 * Python, from the header's statement): a change of the function would
 * change the masks a resumed run draws. */
static void test_hash(void)
{
    size_t differ = 0, keep_differ = 0;
    for (uint32_t k = 0; k < 4096; k++) {
        uint64_t seed = seeds[k % 3] + (uint64_t)k * 0x9e3779b97f4a7c15ull;
        uint32_t index = k * 2654435761u;
        differ += tt_dropout_hash(seed, index) != ref_dropout_hash(seed, index);
        float p = probabilities[k % 3];
        keep_differ += tt_dropout_keep(seed, index, p) != ref_dropout_keep(seed, index, p);
    }
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT_EQUAL(keep_differ, 0);
    const struct {
        uint64_t seed;
        uint32_t index, hash;
    } pinned[] = {
        {0, 0, 0x7bf3123au},
        {1, 0, 0xd55d8e2eu},
        {0x123456789abcdef0ull, 12345, 0xb829f0a1u},
        {UINT64_MAX, UINT32_MAX, 0x6d7b4217u},
    };
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint32_t h = ref_dropout_hash(pinned[i].seed, pinned[i].index);
        if (h != pinned[i].hash) printf("\n  pinned %zu: hash 0x%08x", i, h);
        CU_ASSERT_EQUAL(h, pinned[i].hash);
    }
}

/* Dropout on 1, 5, 7, 17 (primes and 1), 13 x 17 and 2 x 3 x 13 x 17
 * elements, for each p and seed. */
static void test_dropout_bits(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    const size_t sizes[] = {1, 5, 7, 17, 13 * 17, 2 * 3 * 13 * 17};
    size_t differ = 0, cases = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < 3; k++, cases++)
            differ += check_bits(sizes[s], 0, probabilities[k], seeds[(s + k) % 3]);
    printf("\n  dropout: %zu cases, %zu values differ from the reference", cases, differ);
}

/* Drop-path on batches 1 to 3 of 1, 5, 7, 13 x 17 and 3 x 13 x 17
 * elements: the reference's bits, and every sample kept whole or dropped
 * whole. */
static void test_drop_path_bits(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    const size_t per_sample[] = {1, 5, 7, 13 * 17, 3 * 13 * 17};
    size_t differ = 0, cases = 0;
    for (size_t s = 0; s < sizeof per_sample / sizeof per_sample[0]; s++)
        for (size_t batch = 1; batch <= 3; batch++, cases++)
            differ += check_bits(batch * per_sample[s], per_sample[s],
                                 probabilities[(s + batch) % 3], seeds[(s + batch) % 3]);
    printf("\n  drop_path: %zu cases, %zu values differ from the reference", cases, differ);

    /* whole samples: 64 samples of 7 ones, p 0.5 */
    size_t batch = 64, each = 7, n = batch * each;
    float *ones = malloc(n * sizeof *ones), *got = malloc(n * sizeof *got);
    CU_ASSERT_FATAL(ones && got);
    for (size_t i = 0; i < n; i++) ones[i] = 1;
    tt_buffer *bx = th_upload(ones, n, "dp.x"), *by = th_zeros(n, "dp.y");
    TH_OK(tt_drop_path_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), 0.5f, 99, batch, each));
    th_download(got, by, n);
    size_t split = 0, kept = 0;
    for (size_t b = 0; b < batch; b++) {
        for (size_t j = 1; j < each; j++) split += got[b * each + j] != got[b * each];
        kept += got[b * each] == 2.0f;
        CU_ASSERT(got[b * each] == 0.0f || got[b * each] == 2.0f);
    }
    printf(", %zu of %zu samples kept, %zu split", kept, batch, split);
    CU_ASSERT_EQUAL(split, 0);
    CU_ASSERT(kept > 0 && kept < batch);
    tt_buffer_free(bx), tt_buffer_free(by);
    free(ones), free(got);
}

/* The mask of a forward of ones: 1 where out is the scale. */
static void mask_of(const float *out, size_t n, float scale, unsigned char *mask)
{
    for (size_t i = 0; i < n; i++) mask[i] = out[i] == scale;
}

/* On 2^20 elements, the kept fraction is 1 - p within 6 standard
 * deviations (sqrt(p (1 - p) / n), under 5e-4); the backward of ones into
 * zeros applies the same mask; drop-path on 8192 samples likewise (its
 * deviation under 6e-3). */
static void test_kept_fraction(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    size_t n = (size_t)1 << 20;
    float *ones = malloc(n * sizeof *ones), *got = malloc(n * sizeof *got);
    unsigned char *fwd = malloc(n), *bwd = malloc(n);
    CU_ASSERT_FATAL(ones && got && fwd && bwd);
    for (size_t i = 0; i < n; i++) ones[i] = 1;
    tt_buffer *bx = th_upload(ones, n, "kf.x"), *by = th_zeros(n, "kf.y");
    const float ps[] = {0.2f, 0.5f, 0.9f};
    for (size_t k = 0; k < 3; k++) {
        float p = ps[k], scale = ref_dropout_scale(p);
        TH_OK(tt_dropout_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), p, 1000 + k, n));
        th_download(got, by, n);
        mask_of(got, n, scale, fwd);
        size_t kept = 0, zero = 0;
        for (size_t i = 0; i < n; i++) kept += fwd[i], zero += got[i] == 0.0f;
        CU_ASSERT_EQUAL(kept + zero, n); /* nothing but 0 and the scale */
        double frac = (double)kept / n, sigma = sqrt(p * (1.0 - p) / n);
        printf("\n  dropout p %.1f: kept %.5f (1 - p = %.1f, sigma %.1e)", (double)p, frac,
               1.0 - p, sigma);
        CU_ASSERT(fabs(frac - (1.0 - p)) < 6 * sigma);

        tt_buffer_free(by);
        by = th_zeros(n, "kf.y");
        TH_OK(tt_dropout_backward(th_backend(), tt_mem_of(by), tt_mem_of(bx), p, 1000 + k, n));
        th_download(got, by, n);
        mask_of(got, n, scale, bwd);
        CU_ASSERT(memcmp(fwd, bwd, n) == 0);
    }
    size_t batch = 8192, each = 3, m = batch * each;
    float p = 0.3f, scale = ref_dropout_scale(p);
    TH_OK(tt_drop_path_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), p, 7, batch, each));
    th_download(got, by, m);
    size_t kept = 0;
    for (size_t b = 0; b < batch; b++) kept += got[b * each] == scale;
    double frac = (double)kept / batch, sigma = sqrt(p * (1.0 - p) / batch);
    printf("\n  drop_path p %.1f: kept %.4f of %zu samples (sigma %.1e)", (double)p, frac, batch,
           sigma);
    CU_ASSERT(fabs(frac - (1.0 - p)) < 6 * sigma);
    tt_buffer_free(bx), tt_buffer_free(by);
    free(ones), free(got), free(fwd), free(bwd);
}

/* A second call with the same seed (after other launches, as a resumed
 * run's step) gives the same bits; seed + 1, and a seed that differs only
 * in its high 32 bits, give other masks: they differ where one keeps and
 * the other drops, about 2 p (1 - p) of the elements (p = 0.5: half). */
static void test_seeds(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    size_t n = 4096;
    uint64_t state = 11, seed = 0x0123456789abcdefull;
    float *x = th_random_floats(n, 0.5f, 2, &state); /* no zeros: out is 0 only where dropped */
    float *first = malloc(n * sizeof *first), *again = malloc(n * sizeof *again);
    float *other = malloc(n * sizeof *other);
    CU_ASSERT_FATAL(first && again && other);
    tt_buffer *bx = th_upload(x, n, "seed.x"), *by = th_zeros(n, "seed.y");
    TH_OK(tt_dropout_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), 0.5f, seed, n));
    th_download(first, by, n);
    TH_OK(tt_dropout_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), 0.5f, seed + 7, n));
    TH_OK(tt_dropout_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), 0.5f, seed, n));
    th_download(again, by, n);
    CU_ASSERT_EQUAL(count_differ(first, again, n), 0);
    const uint64_t others[] = {seed + 1, seed ^ (1ull << 40)};
    for (size_t k = 0; k < 2; k++) {
        TH_OK(tt_dropout_forward(th_backend(), tt_mem_of(by), tt_mem_of(bx), 0.5f, others[k], n));
        th_download(other, by, n);
        size_t flips = 0;
        for (size_t i = 0; i < n; i++) flips += (first[i] == 0.0f) != (other[i] == 0.0f);
        printf("\n  seed %llx vs %llx: %zu of %zu decisions differ",
               (unsigned long long)seed, (unsigned long long)others[k], flips, n);
        CU_ASSERT(flips > n * 4 / 10 && flips < n * 6 / 10);
    }
    tt_buffer_free(bx), tt_buffer_free(by);
    free(x), free(first), free(again), free(other);
}

typedef struct loss_ctx {
    const double *dy;
    size_t n, group;
    float p;
    uint64_t seed;
} loss_ctx;

/* L = sum(dy * dropout(x)), in double, with the reference's mask. */
static double loss(const double *x, void *opaque)
{
    const loss_ctx *c = opaque;
    double scale = ref_dropout_scale(c->p), sum = 0;
    for (size_t i = 0; i < c->n; i++)
        if (ref_dropout_keep(c->seed, (uint32_t)(i / c->group), c->p))
            sum += c->dy[i] * x[i] * scale;
    return sum;
}

/* Backward is the forward's transpose: the device's backward into zeros
 * against central differences of L = sum(dy * forward(x)) (the forward in
 * double with the reference's mask), for dropout (group 0) and drop-path
 * (7 samples of 13 elements); and the device's forward agrees with that
 * mask (a forward of ones is the scale exactly where it keeps). */
static void test_transpose(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    const size_t n = 91, groups[] = {0, 13};
    for (size_t g = 0; g < 2; g++) {
        uint64_t state = 5 + g, seed = 42 + g;
        float p = 0.4f;
        float *x = th_random_floats(n, -2, 2, &state), *dy = th_random_floats(n, -1, 1, &state);
        float *got = malloc(n * sizeof *got);
        double *numeric = malloc(n * sizeof *numeric);
        CU_ASSERT_FATAL(got && numeric);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);
        loss_ctx ctx = {dyd, n, groups[g] ? groups[g] : 1, p, seed};
        th_numeric_grad(loss, &ctx, xd, n, GRAD_H, numeric);
        tt_buffer *bdy = th_upload(dy, n, "tr.dy"), *bdx = th_zeros(n, "tr.dx");
        TH_OK(backward(tt_mem_of(bdx), tt_mem_of(bdy), p, seed, n, groups[g]));
        th_download(got, bdx, n);
        double err = th_max_rel_error(got, numeric, n, ERR_FLOOR);
        /* the device computes dy * scale in float: one rounding */
        printf("\n  %s: backward vs central differences %.2e", groups[g] ? "drop_path" : "dropout",
               err);
        CU_ASSERT(err < 1e-6);
        size_t dropped = 0;
        for (size_t i = 0; i < n; i++) dropped += numeric[i] == 0.0;
        CU_ASSERT(dropped > 0 && dropped < n);
        tt_buffer_free(bdy), tt_buffer_free(bdx);
        free(x), free(dy), free(got), free(numeric), free(xd), free(dyd);
    }
}

/* p = 0 keeps everything with scale 1: the forward gives the input's bits
 * (negative zero, tiny and huge values included), the backward adds dout
 * (one float addition). */
static void test_p_zero(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    const float x[7] = {-0.0f, 1e-40f, -3.5f, 3e38f, 1.0f / 3, -7e-3f, 12345.678f};
    float dx[7] = {1, 2, 3, 4, 5, 6, 7}, got[7];
    for (size_t group = 0; group <= 7; group += 7) {
        tt_buffer *bx = th_upload(x, 7, "p0.x"), *by = th_zeros(7, "p0.y");
        tt_buffer *bdx = th_upload(dx, 7, "p0.dx");
        TH_OK(forward(tt_mem_of(by), tt_mem_of(bx), 0.0f, 5, 7, group));
        th_download(got, by, 7);
        CU_ASSERT_EQUAL(count_differ(got, x, 7), 0);
        TH_OK(backward(tt_mem_of(bdx), tt_mem_of(bx), 0.0f, 5, 7, group));
        th_download(got, bdx, 7);
        float want[7];
        for (int i = 0; i < 7; i++) want[i] = dx[i] + x[i];
        CU_ASSERT_EQUAL(count_differ(got, want, 7), 0);
        tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdx);
    }
}

/* out = inp, the same place: the reference's bits, for both ops. */
static void test_in_place(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    size_t n = 3 * 221;
    for (size_t group = 0; group <= 221; group += 221) {
        uint64_t state = 17 + group;
        float *x = th_random_floats(n, -2, 2, &state), *want = malloc(n * sizeof *want);
        float *got = malloc(n * sizeof *got);
        CU_ASSERT_FATAL(want && got);
        th_pool pool = {.pad = 5};
        tt_mem m = th_pool_put(&pool, x, n, "inplace.x");
        TH_OK(forward(m, m, 0.5f, 1234, n, group));
        th_get(got, m, n);
        ref_dropout_forward(want, x, 0.5f, 1234, n, group ? group : 1);
        CU_ASSERT_EQUAL(count_differ(got, want, n), 0);
        th_pool_free(&pool);
        free(x), free(want), free(got);
    }
}

/* Checks that s has `code` and every one of the NULL-ended `texts` in its
 * message, and frees it. */
static void expect_error(tt_status s, tt_code code, const char *texts[])
{
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    for (int i = 0; texts[i]; i++) {
        int found = s && strstr(tt_status_message(s), texts[i]) != NULL;
        if (!found)
            printf("\n  wanted \"%s\" in: %s", texts[i], s ? tt_status_message(s) : "(no error)");
        CU_ASSERT(found);
    }
    tt_status_free(s);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(16, "derr.a"), *b = th_zeros(16, "derr.b");
    tt_mem ma = tt_mem_of(a), mb = tt_mem_of(b);
    /* p outside [0, 1), each op naming itself and the value */
    expect_error(tt_dropout_forward(be, ma, mb, 1.0f, 1, 16), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"dropout forward", "p = 1 ", "[0, 1)", NULL});
    expect_error(tt_dropout_backward(be, ma, mb, -0.25f, 1, 16), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"dropout backward", "p = -0.25", NULL});
    expect_error(tt_drop_path_forward(be, ma, mb, 1.5f, 1, 2, 8), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"drop_path forward", "p = 1.5", NULL});
    expect_error(tt_drop_path_backward(be, ma, mb, NAN, 1, 2, 8), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"drop_path backward", "p = nan", NULL});
    /* sizes */
    expect_error(tt_dropout_forward(be, ma, mb, 0.5f, 1, 0), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"dropout forward", "n = 0", NULL});
    expect_error(tt_drop_path_forward(be, ma, mb, 0.5f, 1, 0, 8), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"drop_path forward", "batch 0", NULL});
    expect_error(tt_drop_path_backward(be, ma, mb, 0.5f, 1, 1u << 20, 1u << 12), TT_ERR_UNSUPPORTED,
                 (const char *[]){"drop_path backward", NULL});
    /* tensors too small, named */
    expect_error(tt_dropout_forward(be, ma, mb, 0.5f, 1, 17), TT_ERR_INVALID_ARGUMENT,
                 (const char *[]){"dropout forward", "out", "derr.a", NULL});
    expect_error(tt_drop_path_backward(be, ma, tt_mem_f32(mb, 1), 0.5f, 1, 2, 8),
                 TT_ERR_INVALID_ARGUMENT, (const char *[]){"drop_path backward", "dout", NULL});
    tt_buffer_free(a), tt_buffer_free(b);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"the hash is the header's, pinned", test_hash},
        {"dropout: the reference's bits, odd sizes", test_dropout_bits},
        {"drop_path: the reference's bits, whole samples", test_drop_path_bits},
        {"kept fraction near 1 - p; backward's mask is forward's", test_kept_fraction},
        {"same seed same mask, another seed another", test_seeds},
        {"backward is the forward's transpose", test_transpose},
        {"p = 0 is the identity", test_p_zero},
        {"in place", test_in_place},
        {"errors name the op and the value", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("dropout", tests, TH_EVERY);
}
