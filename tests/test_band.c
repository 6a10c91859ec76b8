/* Row bands (ops/band.h): gather from fp32, fp16 and bf16 tensors against
 * the rows of the tensor as stored, zeros past its edges; scatter back,
 * rounded, with the rows outside the band untouched; the group and batch
 * norms' band apply against the rows of their whole apply, bit for bit;
 * refused arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "core/status.h"
#include "harness.h"
#include "ops/band.h"
#include "ops/batch_norm.h"
#include "ops/group_norm.h"

#define PAD 24

static const tt_precision kinds[] = {TT_PRECISION_FP32, TT_PRECISION_FP16, TT_PRECISION_BF16};

/* Bands of an H-row tensor: the top, the middle, the bottom, all of it,
 * a halo wider than the band. */
typedef struct band_case {
    int first, rows, halo;
} band_case;
static const band_case bands[] = {{0, 3, 1}, {4, 3, 1}, {8, 3, 1}, {0, 11, 1}, {5, 1, 2}, {0, 11, 0}};

static uint16_t half_bits(float x, tt_precision p)
{
    return p == TT_PRECISION_FP16 ? tt_f32_to_f16(x) : tt_f32_to_bf16(x);
}

/* The tensor x (rounded as stored) on the device as `p`. */
static tt_mem put(th_pool *pool, float *x, size_t n, tt_precision p, int odd)
{
    if (p == TT_PRECISION_FP32) return th_pool_put(pool, x, n, "band.x");
    return th_pool_put_16(pool, x, n, p, odd, "band.x");
}

/* How many floats of the band at m (b's layout) differ, bit for bit, from
 * the rows of `tensor` (planes x H x W floats) the band holds: zeros past
 * the tensor's edges, or in the whole halo with zero_halo. */
static int band_differs(tt_mem m, const float *tensor, const tt_band *b)
{
    size_t nb = tt_band_floats(b);
    float *got = malloc(nb * sizeof *got);
    th_get(got, m, nb);
    int bad = 0, len = b->rows + 2 * b->halo;
    for (int p = 0; p < b->planes; p++)
        for (int r = 0; r < len; r++)
            for (int i = 0; i < b->width; i++) {
                int row = b->first - b->halo + r;
                int zero = row < 0 || row >= b->height ||
                           (b->zero_halo && (r < b->halo || r >= b->halo + b->rows));
                float want = zero ? 0.0f : tensor[((size_t)p * b->height + row) * b->width + i];
                bad += memcmp(&got[((size_t)p * len + r) * b->width + i], &want, sizeof want) != 0;
            }
    free(got);
    return bad;
}

static void test_gather(void)
{
    const int planes = 6, h = 11;
    for (int k = 0; k < 3; k++)
        for (int w = 9; w <= 10; w++)
            for (int odd = 0; odd < (kinds[k] == TT_PRECISION_FP32 ? 1 : 2); odd++) {
                size_t n = (size_t)planes * h * w;
                uint64_t seed = 10 + k * 4 + w + odd;
                float *x = th_random_floats(n, -3, 3, &seed);
                th_pool pool = {.pad = PAD};
                tt_mem mx = put(&pool, x, n, kinds[k], odd); /* x now holds what is stored */
                for (size_t c = 0; c < 2 * sizeof bands / sizeof *bands; c++) {
                    size_t bc = c % (sizeof bands / sizeof *bands);
                    int zero = c >= sizeof bands / sizeof *bands; /* zero_halo */
                    tt_band b = {planes, h, w, bands[bc].first, bands[bc].rows, bands[bc].halo, zero};
                    size_t nb = tt_band_floats(&b);
                    tt_mem mb = th_pool_put(&pool, NULL, nb, "band.b");
                    TH_OK(tt_band_gather(th_backend(), mb, mx, kinds[k], &b));
                    CU_ASSERT_EQUAL(band_differs(mb, x, &b), 0);
                }
                th_pool_free(&pool);
                free(x);
            }
}

/* The tensor's raw bytes (n elements of `p`). */
static void *raw(tt_mem m, size_t n, tt_precision p)
{
    size_t floats = p == TT_PRECISION_FP32 ? n : (n + 1) / 2;
    float *host = malloc(floats * sizeof *host);
    th_get(host, m, floats);
    return host;
}

static void test_scatter(void)
{
    const int planes = 5, h = 11, w = 8;
    size_t n = (size_t)planes * h * w;
    for (int k = 0; k < 3; k++)
        for (size_t c = 0; c < sizeof bands / sizeof *bands; c++) {
            tt_band b = {planes, h, w, bands[c].first, bands[c].rows, bands[c].halo, 0};
            size_t nb = tt_band_floats(&b);
            uint64_t seed = 40 + k * 10 + c;
            float *x = th_random_floats(n, -3, 3, &seed), *v = th_random_floats(nb, -50, 50, &seed);
            th_pool pool = {.pad = PAD};
            tt_mem mx = put(&pool, x, n, kinds[k], 0), mv = th_pool_put(&pool, v, nb, "band.v");
            unsigned char *before = raw(mx, n, kinds[k]);
            TH_OK(tt_band_scatter(th_backend(), mx, kinds[k], mv, &b));
            unsigned char *after = raw(mx, n, kinds[k]);
            size_t es = kinds[k] == TT_PRECISION_FP32 ? 4 : 2;
            int bad = 0, len = b.rows + 2 * b.halo;
            for (int p = 0; p < planes; p++)
                for (int row = 0; row < h; row++)
                    for (int i = 0; i < w; i++) {
                        size_t at = ((size_t)p * h + row) * w + i;
                        const unsigned char *got = after + at * es;
                        if (row < b.first || row >= b.first + b.rows) {
                            bad += memcmp(got, before + at * es, es) != 0;
                            continue;
                        }
                        float src = v[((size_t)p * len + row - b.first + b.halo) * w + i];
                        if (es == 4) {
                            bad += memcmp(got, &src, 4) != 0;
                        } else {
                            uint16_t want = half_bits(src, kinds[k]);
                            bad += memcmp(got, &want, 2) != 0;
                        }
                    }
            CU_ASSERT_EQUAL(bad, 0);
            free(before), free(after), free(x), free(v);
            th_pool_free(&pool);
        }
}

/* The norm's band apply equals the rows of its whole apply_saved. */
static void norm_case(int batch_norm, tt_precision p)
{
    const int nn = 2, c = 4, h = 11, w = 10, planes = nn * c;
    size_t n = (size_t)planes * h * w;
    uint64_t seed = 70 + batch_norm * 3 + (int)p;
    float *x = th_random_floats(n, -2, 2, &seed), *wb = th_random_floats(2 * c, -1, 1, &seed);
    th_pool pool = {.pad = PAD};
    tt_backend *be = th_backend();
    tt_mem mx = put(&pool, x, n, p, 1), mw = th_pool_put(&pool, wb, c, "band.w");
    tt_mem mbias = th_pool_put(&pool, wb + c, c, "band.bias");
    tt_mem full = th_pool_put(&pool, NULL, n, "band.full"), y = th_pool_put(&pool, NULL, n, "band.y");
    tt_group_norm_desc gd = tt_group_norm_desc_make(nn, c, h, w, 2);
    tt_batch_norm_desc bd = tt_batch_norm_desc_make(nn, c, h, w);
    gd.relu = bd.relu = 1;
    gd.input_precision = bd.input_precision = p;
    tt_batch_norm_state st = {.weight = mw, .bias = mbias};
    size_t ns = batch_norm ? tt_batch_norm_saved_floats(&bd) : tt_group_norm_saved_floats(&gd);
    tt_mem saved = th_pool_put(&pool, NULL, ns, "band.saved");
    if (batch_norm) {
        TH_OK(tt_batch_norm_forward(be, y, saved, mx, &st, &bd, 1));
        TH_OK(tt_batch_norm_apply_saved(be, full, mx, saved, &st, &bd));
    } else {
        TH_OK(tt_group_norm_forward(be, y, saved, mx, mw, mbias, &gd));
        TH_OK(tt_group_norm_apply_saved(be, full, mx, saved, mw, mbias, &gd));
    }
    /* the statistics alone (no output) are the same */
    tt_mem again = th_pool_put(&pool, NULL, ns, "band.saved2");
    if (batch_norm)
        TH_OK(tt_batch_norm_forward(be, (tt_mem){0}, again, mx, &st, &bd, 1));
    else
        TH_OK(tt_group_norm_forward(be, (tt_mem){0}, again, mx, mw, mbias, &gd));
    CU_ASSERT(th_same_bits(saved, again, batch_norm ? 2 * (size_t)c : 2 * (size_t)nn * 2));
    float *whole = malloc(n * sizeof *whole);
    th_get(whole, full, n);
    for (size_t k = 0; k < sizeof bands / sizeof *bands; k++) {
        tt_band b = {planes, h, w, bands[k].first, bands[k].rows, bands[k].halo, 0};
        size_t nb = tt_band_floats(&b);
        tt_mem mb = th_pool_put(&pool, NULL, nb, "band.b");
        if (batch_norm)
            TH_OK(tt_batch_norm_apply_saved_band(be, mb, mx, saved, &st, &bd, &b));
        else
            TH_OK(tt_group_norm_apply_saved_band(be, mb, mx, saved, mw, mbias, &gd, &b));
        CU_ASSERT_EQUAL(band_differs(mb, whole, &b), 0);
    }
    free(whole), free(x), free(wb);
    th_pool_free(&pool);
}

static void test_norm_band(void)
{
    for (int bn = 0; bn < 2; bn++)
        for (int k = 0; k < 3; k++) norm_case(bn, kinds[k]);
}

/* Batch norm's eval apply (running statistics) into a band: the rows of
 * the eval forward's output. */
static void test_batch_norm_eval_band(void)
{
    const int nn = 2, c = 3, h = 9, w = 6, planes = nn * c;
    size_t n = (size_t)planes * h * w;
    uint64_t seed = 91;
    float *x = th_random_floats(n, -2, 2, &seed), *p = th_random_floats(4 * c, 0.5f, 1.5f, &seed);
    th_pool pool = {.pad = PAD};
    tt_backend *be = th_backend();
    tt_mem mx = put(&pool, x, n, TT_PRECISION_BF16, 1);
    tt_batch_norm_state st = {th_pool_put(&pool, p, c, "band.w"), th_pool_put(&pool, p + c, c, "band.b"),
                              th_pool_put(&pool, p + 2 * c, c, "band.rm"),
                              th_pool_put(&pool, p + 3 * c, c, "band.rv"), 0};
    tt_batch_norm_desc bd = tt_batch_norm_desc_make(nn, c, h, w);
    bd.relu = 1;
    bd.input_precision = TT_PRECISION_BF16;
    tt_mem full = th_pool_put(&pool, NULL, n, "band.full");
    TH_OK(tt_batch_norm_forward(be, full, (tt_mem){0}, mx, &st, &bd, 0));
    tt_band b = {planes, h, w, 3, 4, 1, 0};
    size_t nb = tt_band_floats(&b);
    tt_mem mb = th_pool_put(&pool, NULL, nb, "band.b");
    TH_OK(tt_batch_norm_apply_saved_band(be, mb, mx, (tt_mem){0}, &st, &bd, &b));
    float *whole = malloc(n * sizeof *whole);
    th_get(whole, full, n);
    CU_ASSERT_EQUAL(band_differs(mb, whole, &b), 0);
    free(whole), free(x), free(p);
    th_pool_free(&pool);
}

static void refused(tt_status st, const char *words)
{
    CU_ASSERT_PTR_NOT_NULL(st);
    CU_ASSERT(st && strstr(tt_status_message(st), words) != NULL);
    tt_status_free(st);
}

static void test_refused(void)
{
    th_pool pool = {.pad = PAD};
    tt_mem m = th_pool_put(&pool, NULL, 4096, "band.m"), t = th_pool_put(&pool, NULL, 4096, "band.t");
    tt_backend *be = th_backend();
    tt_band outside = {2, 8, 8, 6, 3, 1, 0};
    refused(tt_band_gather(be, m, t, TT_PRECISION_FP32, &outside), "outside");
    tt_band odd = {2, 8, 7, 0, 3, 1, 0};
    refused(tt_band_scatter(be, t, TT_PRECISION_FP16, m, &odd), "even");
    tt_band ok = {2, 8, 8, 0, 3, 1, 0};
    refused(tt_band_scatter(be, tt_mem_at(t, 2), TT_PRECISION_BF16, m, &ok), "multiple of 4");
    refused(tt_band_gather(be, m, t, TT_PRECISION_AUTO, &ok), "not a storage");
    tt_band big = {64, 64, 64, 0, 64, 1, 0};
    refused(tt_band_gather(be, m, t, TT_PRECISION_FP32, &big), "band");
    th_pool_free(&pool);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"gather from fp32, fp16 and bf16, zeros past the edges (or in the whole halo)", test_gather},
        {"scatter, rounded, the other rows untouched", test_scatter},
        {"norm band apply equals the whole apply's rows; statistics alone", test_norm_band},
        {"batch norm's eval apply into a band", test_batch_norm_eval_band},
        {"refused arguments", test_refused},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("band", tests, TH_EVERY);
}
