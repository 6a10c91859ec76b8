/* 16-bit storage (core/precision.h, ops/cast.h): the C conversions against
 * an independent float64 rounding and exhaustively over all 2^16 patterns
 * of each format, then the device's pack and unpack bit for bit against
 * them on odd sizes, at both halves of a 32-bit word, with the neighbours
 * of the tensor untouched, the in-place round equal to the two, and refused
 * arguments. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "core/status.h"
#include "harness.h"
#include "ops/cast.h"

static uint32_t bits_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
static float float_of(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* |x| rounded to nearest even on a grid of 2^(e - mantissa_bits) with e
 * the binade (at least min_exponent), in double; INFINITY at or past
 * `overflow`.  The independent reference of both formats. */
static double rounded(double x, int mantissa_bits, int min_exponent, double overflow)
{
    double magnitude = fabs(x);
    if (magnitude >= overflow) return copysign(INFINITY, x);
    if (magnitude == 0) return x;
    int e = ilogb(magnitude);
    if (e < min_exponent) e = min_exponent;
    double ulp = ldexp(1.0, e - mantissa_bits);
    return copysign(nearbyint(magnitude / ulp) * ulp, x);
}

/* Values of every binade from far below fp16's subnormals to past its
 * range, ties (the float halfway between two halves), and random bits. */
static void test_reference_rounding(void)
{
    CU_ASSERT_EQUAL_FATAL(fegetround(), FE_TONEAREST);
    uint64_t seed = 7;
    int checked = 0;
    for (int k = 0; k < 400000; k++) {
        float x;
        if (k % 2) {
            x = (float)ldexp(th_uniform(&seed, 1, 2), (int)th_uniform(&seed, -30, 18));
            if (k % 4 == 1) x = -x;
        } else {
            x = float_of((uint32_t)(th_uniform(&seed, 0, 4294967296.0)));
            if (isnan(x)) continue;
        }
        double want16 = rounded(x, 10, -14, 65520.0);
        double want_bf = rounded(x, 7, -126, ldexp(2.0 - ldexp(1, -8), 127));
        float got16 = tt_f16_to_f32(tt_f32_to_f16(x)), got_bf = tt_bf16_to_f32(tt_f32_to_bf16(x));
        if (!(got16 == want16 && signbit(got16) == signbit(x)) || !(got_bf == want_bf)) {
            CU_FAIL("a rounding differs from the float64 reference");
            fprintf(stderr, "x %.9g: fp16 %.9g want %.9g, bf16 %.9g want %.9g\n", x, got16,
                    want16, got_bf, want_bf);
            return;
        }
        checked++;
    }
    CU_ASSERT(checked > 300000);
    /* named cases: the largest half, the overflow edge, the smallest
     * subnormal and half of it (a tie to 0), ties to even both ways */
    CU_ASSERT_EQUAL(tt_f32_to_f16(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(tt_f32_to_f16(65519.996f), 0x7bff);
    CU_ASSERT_EQUAL(tt_f32_to_f16(65520.0f), 0x7c00);
    CU_ASSERT_EQUAL(tt_f32_to_f16(-1e30f), 0xfc00);
    CU_ASSERT_EQUAL(tt_f32_to_f16(0x1p-24f), 0x0001);
    CU_ASSERT_EQUAL(tt_f32_to_f16(0x1p-25f), 0x0000);
    CU_ASSERT_EQUAL(tt_f32_to_f16(0x1.8p-24f), 0x0002);
    CU_ASSERT_EQUAL(tt_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    CU_ASSERT_EQUAL(tt_f32_to_f16(1.0f + 0x3p-11f), 0x3c02);
    CU_ASSERT_EQUAL(tt_f32_to_f16(-0.0f), 0x8000);
    CU_ASSERT_EQUAL(tt_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    CU_ASSERT_EQUAL(tt_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82);
    CU_ASSERT_EQUAL(tt_f32_to_bf16(3.0e38f), 0x7f62);
    CU_ASSERT_EQUAL(tt_f32_to_bf16(FLT_MAX), 0x7f80);
    CU_ASSERT(isnan(tt_f16_to_f32(tt_f32_to_f16(NAN))));
    CU_ASSERT(isnan(tt_bf16_to_f32(tt_f32_to_bf16(-NAN))));
    CU_ASSERT_EQUAL(tt_f32_to_bf16(float_of(0x7f800001u)) & 0x7fc0, 0x7fc0); /* signalling: quiet */
}

/* Every 16-bit pattern widens exactly and narrows back to itself (a NaN to
 * a quiet NaN of the same sign). */
static void test_round_trip_exhaustive(void)
{
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        uint16_t h = (uint16_t)b;
        float x = tt_f16_to_f32(h), y = tt_bf16_to_f32(h);
        int nan16 = (h & 0x7c00) == 0x7c00 && (h & 0x3ff), nan_bf = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        if (nan16 ? !isnan(x) || (tt_f32_to_f16(x) & 0x8200) != (h & 0x8000) + 0x200
                  : tt_f32_to_f16(x) != h)
            bad++;
        if (nan_bf ? !isnan(y) || (tt_f32_to_bf16(y) & 0x8040) != (h & 0x8000) + 0x40
                   : tt_f32_to_bf16(y) != h)
            bad++;
        if (!nan16 && (h & 0x7c00) == 0 && x != ldexp((double)(h & 0x3ff), -24) * (h & 0x8000 ? -1 : 1))
            bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* n values for the device: random magnitudes over fp16's range and past
 * it, with specials sprinkled in. */
static float *device_inputs(size_t n, uint64_t *seed)
{
    static const float specials[] = {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, -0x1p-25f, INFINITY, -INFINITY, NAN, 1.0f + 0x1p-11f, 3.4e38f, 1e-40f};
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(ldexp(th_uniform(seed, -2, 2), (int)th_uniform(seed, -28, 20)));
    for (size_t i = 0; i < n; i += 5) x[i] = specials[(i / 5) % (sizeof specials / sizeof *specials)];
    return x;
}

/* Pack and unpack on the device at the 16-bit side's offsets 0 and 2 (mod
 * 4) against the C functions, bit for bit; the halves around the packed
 * tensor keep their guard bits. */
static void test_device(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const size_t sizes[] = {1, 2, 3, 64, 1001, 65535 * 2 * 64 + 77};
    tt_precision formats[2] = {TT_PRECISION_FP16, TT_PRECISION_BF16};
    uint64_t seed = 11;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int f = 0; f < 2; f++)
            for (int shift = 0; shift < 2; shift++) {
                size_t n = sizes[s], guard = 3; /* halves of guard on each side */
                float *x = device_inputs(n, &seed), *back = malloc(n * sizeof *back);
                size_t halves = n + 2 * guard + (size_t)shift;
                uint16_t *h = malloc(halves * sizeof *h);
                for (size_t i = 0; i < halves; i++) h[i] = (uint16_t)(0xa5a5u + i);
                tt_buffer *packed = NULL, *wide = NULL, *out = NULL;
                TH_OK(tt_buffer_alloc(be, halves * 2 + 16, TT_MEM_WORKSPACE, "test.packed", &packed));
                TH_OK(tt_buffer_alloc(be, n * 4 + 16, TT_MEM_WORKSPACE, "test.wide", &wide));
                TH_OK(tt_buffer_alloc(be, n * 4 + 16, TT_MEM_WORKSPACE, "test.back", &out));
                tt_mem pm = tt_mem_of(packed), place = tt_mem_at(pm, 2 * (guard + (size_t)shift));
                tt_mem wm = tt_mem_at(tt_mem_of(wide), 4), om = tt_mem_at(tt_mem_of(out), 8);
                TH_OK(tt_write(be, pm, h, halves * 2));
                TH_OK(tt_write(be, wm, x, n * 4));
                TH_OK(tt_cast_pack(be, place, wm, formats[f], n));
                TH_OK(tt_cast_unpack(be, om, place, formats[f], n));
                TH_OK(tt_cast_round(be, wm, formats[f], n)); /* in place: = unpacked */
                float *rounded_back = malloc(n * sizeof *rounded_back);
                TH_OK(tt_read(be, rounded_back, wm, n * 4));
                uint16_t *got = malloc(halves * sizeof *got);
                TH_OK(tt_read(be, got, pm, halves * 2));
                TH_OK(tt_read(be, back, om, n * 4));
                size_t wrong_bits = 0, wrong_back = 0, wrong_guard = 0;
                for (size_t i = 0; i < halves; i++) {
                    size_t e = i - guard - (size_t)shift;
                    if (i < guard + (size_t)shift || e >= n) {
                        wrong_guard += got[i] != h[i];
                        continue;
                    }
                    uint16_t want = f == 0 ? tt_f32_to_f16(x[e]) : tt_f32_to_bf16(x[e]);
                    float want_back = f == 0 ? tt_f16_to_f32(want) : tt_bf16_to_f32(want);
                    wrong_bits += got[i] != want;
                    wrong_back += bits_of(back[e]) != bits_of(want_back);
                    wrong_back += bits_of(rounded_back[e]) != bits_of(want_back);
                }
                if (wrong_bits || wrong_back || wrong_guard)
                    fprintf(stderr, "%s n %zu shift %d: %zu packed, %zu unpacked, %zu guard differ\n",
                            tt_precision_name(formats[f]), n, shift, wrong_bits, wrong_back,
                            wrong_guard);
                CU_ASSERT_EQUAL(wrong_bits + wrong_back + wrong_guard, 0);
                tt_buffer_free(packed);
                tt_buffer_free(wide);
                tt_buffer_free(out);
                free(x);
                free(back);
                free(rounded_back);
                free(h);
                free(got);
            }
}

/* The device against C on every 16-bit pattern: each unpacked, and packed
 * back from its value, from the ties halfway to its neighbour and from one
 * float ulp either side of them (4 x 2^16 values per format, at both halves
 * of a word): the vector code paths of every rounding case. */
static void test_device_exhaustive(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const size_t patterns = 65536, n = 4 * patterns;
    float *x = malloc(n * sizeof *x), *wide = malloc(patterns * sizeof *wide);
    uint16_t *h = malloc(n * sizeof *h), *all = malloc(patterns * sizeof *all);
    tt_buffer *buf = NULL;
    TH_OK(tt_buffer_alloc(be, n * 4 + n * 2 + patterns * 6 + 64, TT_MEM_WORKSPACE, "test.cast", &buf));
    tt_mem xs = tt_mem_of(buf), hs = tt_mem_at(xs, n * 4 + 2);
    tt_mem ps = tt_mem_at(hs, n * 2 + 2), ws = tt_mem_at(ps, patterns * 2 + 4); /* floats 4-aligned */
    for (int f = 0; f < 2; f++) {
        tt_precision p = f ? TT_PRECISION_BF16 : TT_PRECISION_FP16;
        float (*widen)(uint16_t) = f ? tt_bf16_to_f32 : tt_f16_to_f32;
        uint16_t (*narrow)(float) = f ? tt_f32_to_bf16 : tt_f32_to_f16;
        for (size_t k = 0; k < patterns; k++) {
            all[k] = (uint16_t)k;
            float v = widen((uint16_t)k), next = widen((uint16_t)(k + 1));
            float tie = isfinite(v) && isfinite(next) ? (float)(((double)v + next) / 2) : v;
            x[4 * k] = v, x[4 * k + 1] = tie;
            x[4 * k + 2] = nextafterf(tie, -INFINITY), x[4 * k + 3] = nextafterf(tie, INFINITY);
        }
        TH_OK(tt_write(be, xs, x, n * 4));
        TH_OK(tt_write(be, ps, all, patterns * 2));
        TH_OK(tt_cast_pack(be, hs, xs, p, n));
        TH_OK(tt_cast_unpack(be, ws, ps, p, patterns));
        TH_OK(tt_read(be, h, hs, n * 2));
        TH_OK(tt_read(be, wide, ws, patterns * 4));
        size_t wrong_pack = 0, wrong_unpack = 0;
        for (size_t i = 0; i < n; i++) {
            uint16_t want = narrow(x[i]);
            int nan = isnan(x[i]);
            wrong_pack += nan ? (h[i] & 0x8000) != (want & 0x8000) || !isnan(widen(h[i])) : h[i] != want;
        }
        for (size_t k = 0; k < patterns; k++) {
            float want = widen((uint16_t)k);
            wrong_unpack += isnan(want) ? !isnan(wide[k]) : bits_of(wide[k]) != bits_of(want);
        }
        if (wrong_pack || wrong_unpack)
            fprintf(stderr, "%s: %zu packed, %zu unpacked differ\n", tt_precision_name(p), wrong_pack,
                    wrong_unpack);
        CU_ASSERT_EQUAL(wrong_pack + wrong_unpack, 0);
    }
    tt_buffer_free(buf);
    free(x), free(wide), free(h), free(all);
}

static void test_refused(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *buf = NULL;
    TH_OK(tt_buffer_alloc(be, 4096, TT_MEM_WORKSPACE, "test.cast", &buf));
    tt_mem m = tt_mem_of(buf);
    tt_status st = tt_cast_pack(be, tt_mem_at(m, 2048), m, TT_PRECISION_FP32, 16);
    CU_ASSERT_PTR_NOT_NULL(st);
    tt_status_free(st);
    st = tt_cast_pack(be, tt_mem_at(m, 2049), m, TT_PRECISION_FP16, 16); /* odd byte */
    CU_ASSERT_PTR_NOT_NULL(st);
    tt_status_free(st);
    st = tt_cast_unpack(be, m, tt_mem_at(m, 32), TT_PRECISION_BF16, 16); /* overlap */
    CU_ASSERT_PTR_NOT_NULL(st);
    tt_status_free(st);
    st = tt_cast_unpack(be, m, tt_mem_at(m, 4000), TT_PRECISION_BF16, 100); /* past the end */
    CU_ASSERT_PTR_NOT_NULL(st);
    tt_status_free(st);
    tt_precision p = TT_PRECISION_FP32;
    st = tt_precision_parse("--precision", "half", &p);
    CU_ASSERT_PTR_NOT_NULL(st);
    CU_ASSERT(st && strstr(tt_status_message(st), "fp32|fp16|bf16|auto") != NULL);
    tt_status_free(st);
    TH_OK(tt_precision_parse("--precision", "BF16", &p));
    CU_ASSERT_EQUAL(p, TT_PRECISION_BF16);
    tt_buffer_free(buf);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"C conversions against float64 rounding", test_reference_rounding},
        {"every 16-bit pattern round trips", test_round_trip_exhaustive},
        {"device pack and unpack, bit for bit", test_device},
        {"device on every 16-bit pattern and its ties", test_device_exhaustive},
        {"refused arguments", test_refused},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("cast", tests, TH_EVERY);
}
