/*
 * Postprocessing: thresholds, small-component removal (4 and 8
 * connectivity, against a union-find reference on random masks, and a
 * 2000x2000 serpentine that would overflow a recursive fill), nearest and
 * area resizing, RLE of predicted masks decoding back to the same
 * masks, and the logits-to-mask rule validation and predict share.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "data/rle.h"
#include "infer/components_stream.h"
#include "infer/postprocess.h"

static void test_threshold(void)
{
    const float p[5] = {0.2f, 0.5f, 0.50001f, 0.9f, -1.0f};
    uint8_t m[5];
    tt_pp_threshold(p, 5, 0.5f, m);
    const uint8_t want[5] = {0, 0, 1, 1, 0};
    CU_ASSERT_EQUAL(memcmp(m, want, 5), 0);
}

/* Logits to masks against masks written out by hand: multi-label thresholds
 * the sigmoid and clears small components per class; class index takes the
 * argmax and sends small components of classes >= 1 to 0. */
static void test_predict_to_masks(void)
{
    enum { W = 4, H = 3, N = W * H };
    /* class 0: a 3-pixel blob (kept) and a lone pixel (removed at min_size 2);
     * class 1: a 2-pixel run (kept); logit 0 is probability 0.5, not above
     * the threshold */
    float multi[2 * N] = {
        3, 3, -3, -3,
        3, -3, -3, 2,
        -3, -3, -3, -3,
        0, 1, 1, 0,
        -1, 0, 0, 0,
        0, 0, 0, 0,
    };
    const uint8_t want_multi[2 * N] = {
        1, 1, 0, 0,
        1, 0, 0, 0,
        0, 0, 0, 0,
        0, 1, 1, 0,
        0, 0, 0, 0,
        0, 0, 0, 0,
    };
    uint8_t masks[2 * N];
    tt_mask_rule rule = {.multi_label = 1, .threshold = 0.5f, .min_size = 2};
    TH_OK(tt_predict_to_masks(multi, 2, W, H, &rule, masks));
    CU_ASSERT_EQUAL(memcmp(masks, want_multi, sizeof want_multi), 0);
    CU_ASSERT(fabsf(multi[0] - 1.0f / (1.0f + expf(-3.0f))) < 1e-6f); /* probabilities in place */

    /* three classes; class 2 wins one lone pixel (removed) and a 2-pixel run (kept) */
    float logits[3 * N] = {
        5, 0, 0, 0,
        0, 0, 0, 0,
        0, 0, 0, 0,
        0, 5, 5, 5,
        5, 5, 0, 0,
        5, 5, 5, 5,
        0, 0, 0, 0,
        0, 0, 5, 5,
        0, 0, 0, 0,
    };
    logits[N + 4] = 0, logits[2 * N + 4] = 6; /* (0,1): a lone class-2 pixel among class 1 */
    const uint8_t want_index[N] = {
        0, 1, 1, 1,
        0, 1, 2, 2,
        1, 1, 1, 1,
    };
    rule = (tt_mask_rule){.multi_label = 0, .threshold = 0.5f, .min_size = 2};
    TH_OK(tt_predict_to_masks(logits, 3, W, H, &rule, masks));
    CU_ASSERT_EQUAL(memcmp(masks, want_index, sizeof want_index), 0);
}

static int find(int *parent, int i)
{
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

/* Union-find reference of component removal. */
static void reference_remove(uint8_t *mask, int w, int h, int min_size, int connectivity)
{
    int n = w * h, *parent = malloc((size_t)n * sizeof *parent);
    int *size = calloc((size_t)n, sizeof *size);
    for (int i = 0; i < n; i++) parent[i] = i;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (!mask[y * w + x]) continue;
            int nb[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
            for (int k = 0; k < (connectivity == 8 ? 4 : 2); k++) {
                int ny = y + nb[k][0], nx = x + nb[k][1];
                if (ny < h && nx >= 0 && nx < w && mask[ny * w + nx])
                    parent[find(parent, y * w + x)] = find(parent, ny * w + nx);
            }
        }
    for (int i = 0; i < n; i++)
        if (mask[i]) size[find(parent, i)]++;
    for (int i = 0; i < n; i++)
        if (mask[i]) mask[i] = size[find(parent, i)] >= min_size;
    free(parent);
    free(size);
}

static void test_remove_small(void)
{
    /* two diagonal pixels: one component in 8-connectivity, two in 4 */
    uint8_t m[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
    size_t kept;
    TH_OK(tt_pp_remove_small(m, 3, 3, 2, 8, &kept));
    CU_ASSERT_EQUAL(kept, 2);
    CU_ASSERT(m[0] == 1 && m[4] == 1);
    TH_OK(tt_pp_remove_small(m, 3, 3, 2, 4, &kept));
    CU_ASSERT_EQUAL(kept, 0);
    CU_ASSERT(m[0] == 0 && m[4] == 0);
    tt_status s = tt_pp_remove_small(m, 3, 3, 2, 6, NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);

    uint64_t rng = 5;
    int mismatches = 0;
    for (int trial = 0; trial < 40; trial++) {
        int w = 1 + trial * 3 % 67, h = 1 + trial * 7 % 53, conn = trial % 2 ? 8 : 4;
        int min_size = trial % 9;
        double density = th_uniform(&rng, 0.2, 0.7);
        uint8_t *a = malloc((size_t)w * h), *b = malloc((size_t)w * h);
        for (int i = 0; i < w * h; i++) a[i] = b[i] = th_uniform(&rng, 0, 1) < density ? 255 : 0;
        TH_OK(tt_pp_remove_small(a, w, h, min_size, conn, NULL));
        reference_remove(b, w, h, min_size, conn);
        for (int i = 0; i < w * h; i++) b[i] = b[i] != 0;
        mismatches += memcmp(a, b, (size_t)w * h) != 0;
        free(a);
        free(b);
    }
    printf("\n  random masks differing from the union-find reference: %d of 40", mismatches);
    CU_ASSERT_EQUAL(mismatches, 0);
}

/* A serpentine of ~2M pixels: one component, deep for any recursion. */
static void test_big_component(void)
{
    int w = 2000, h = 2000;
    uint8_t *m = calloc((size_t)w * h, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    size_t want = 0;
    for (int y = 0; y < h; y += 2) {
        memset(m + (size_t)y * w, 1, (size_t)w);
        want += w;
        if (y + 1 < h) {
            m[(size_t)(y + 1) * w + ((y / 2) % 2 ? 0 : w - 1)] = 1;
            want++;
        }
    }
    size_t kept, ones = 0;
    TH_OK(tt_pp_remove_small(m, w, h, (int)want, 8, &kept));
    for (size_t i = 0; i < (size_t)w * h; i++) ones += m[i];
    CU_ASSERT_EQUAL(kept, want);
    CU_ASSERT_EQUAL(ones, want);
    printf("\n  serpentine kept %zu of %zu pixels", kept, want);
    TH_OK(tt_pp_remove_small(m, w, h, (int)want + 1, 4, &kept)); /* one pixel short: all goes */
    CU_ASSERT_EQUAL(kept, 0);
    CU_ASSERT_EQUAL(m[0], 0);
    free(m);
}

static void test_resize(void)
{
    uint8_t src[16], dst[4], up[16];
    for (int i = 0; i < 16; i++) src[i] = (uint8_t)i;
    tt_pp_resize_nearest(src, 4, 4, dst, 2, 2);
    CU_ASSERT(dst[0] == 5 && dst[1] == 7 && dst[2] == 13 && dst[3] == 15);
    tt_pp_resize_nearest(dst, 2, 2, up, 4, 4);
    CU_ASSERT(up[0] == 5 && up[1] == 5 && up[2] == 7 && up[3] == 7 && up[15] == 15 && up[8] == 13);
    /* 1400x2100 -> 350x525 keeps every 4th pixel, offset 2 (Kaggle clouds sizes) */
    int sw = 2100, sh = 1400, dw = 525, dh = 350;
    uint8_t *big = malloc((size_t)sw * sh), *small = malloc((size_t)dw * dh);
    for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++) big[(size_t)y * sw + x] = (uint8_t)((x / 4 + y / 4) % 2);
    tt_pp_resize_nearest(big, sw, sh, small, dw, dh);
    int bad = 0;
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++) bad += small[(size_t)y * dw + x] != (uint8_t)((x + y) % 2);
    CU_ASSERT_EQUAL(bad, 0);
    free(big);
    free(small);

    /* area: 4x4 -> 2x2 block means; mass kept on 7x5 -> 3x2; constants stay */
    float f[16], g[6], c35[35];
    for (int i = 0; i < 16; i++) f[i] = (float)i;
    TH_OK(tt_pp_resize_area(f, 4, 4, g, 2, 2));
    double worst = fabs(g[0] - 2.5) + fabs(g[1] - 4.5) + fabs(g[2] - 10.5) + fabs(g[3] - 12.5);
    double mass = 0, mass_out = 0;
    for (int i = 0; i < 35; i++) mass += c35[i] = (float)(i * i % 11);
    TH_OK(tt_pp_resize_area(c35, 7, 5, g, 3, 2));
    for (int i = 0; i < 6; i++) mass_out += g[i] * (35.0 / 6);
    worst = fmax(worst, fabs(mass_out - mass) / mass);
    for (int i = 0; i < 35; i++) c35[i] = 0.25f;
    TH_OK(tt_pp_resize_area(c35, 7, 5, g, 3, 2));
    for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(g[i] - 0.25));
    float one = 0.75f, nine[9];
    TH_OK(tt_pp_resize_area(&one, 1, 1, nine, 3, 3));
    for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(nine[i] - 0.75));
    printf("\n  area resize: max error %.2e (tol 1e-5)", worst);
    CU_ASSERT(worst < 1e-5);
}

static void test_rle_round_trip(void)
{
    int w = 37, h = 23;
    uint64_t rng = 9;
    float *probs = malloc((size_t)w * h * sizeof *probs);
    uint8_t *mask = malloc((size_t)w * h), *back = malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++) probs[i] = (float)th_uniform(&rng, 0, 1);
    tt_pp_threshold(probs, (size_t)w * h, 0.4f, mask);
    TH_OK(tt_pp_remove_small(mask, w, h, 3, 8, NULL));
    char *text = NULL;
    TH_OK(tt_rle_encode(mask, w, h, &text));
    TH_OK(tt_rle_decode(text, w, h, back));
    size_t ones = 0;
    for (int i = 0; i < w * h; i++) ones += mask[i] != 0;
    CU_ASSERT(ones > 0 && text[0] != '\0'); /* a mask with runs, not the empty case */
    CU_ASSERT_EQUAL(memcmp(mask, back, (size_t)w * h), 0);
    printf("\n  RLE round trip of a %dx%d mask with %zu pixels set: %zu characters", w, h, ones,
           strlen(text));
    free(text);
    free(probs);
    free(mask);
    free(back);
}

/* Blobby random masks (runs of every length, components crossing the
 * band boundaries, diagonal-only contacts) fed in uneven bands of rows:
 * the streamed filter equals tt_predict_to_masks's whole-image removal,
 * for class-index masks (per class minimums) and multi-label planes. */
static void test_components_stream(void)
{
    int w = 61, h = 47, classes = 3;
    size_t px = (size_t)w * h;
    uint64_t seed = 77;
    int checked = 0, wrong = 0, removed = 0;
    for (int trial = 0; trial < 12; trial++) {
        int multi = trial % 2, planes = multi ? classes : 1;
        /* logits: smooth-ish noise, so components have every size */
        float *logits = malloc((size_t)classes * px * sizeof *logits);
        for (int c = 0; c < classes; c++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    logits[(size_t)c * px + (size_t)y * w + x] =
                        (float)(th_uniform(&seed, -1, 1) + sin(x * (0.3 + 0.1 * c) + trial) *
                                cos(y * (0.25 + 0.05 * c)));
        int min_size[3] = {trial % 3 == 0 ? 5 : 0, 2 + trial, 9 - trial % 5};
        tt_mask_rule keep = {.multi_label = multi, .threshold = 0.5f};
        tt_mask_rule rule = keep;
        rule.class_min_size = min_size;
        float *copy = malloc((size_t)classes * px * sizeof *copy);
        uint8_t *want = malloc((size_t)classes * px), *planes_in = malloc((size_t)classes * px);
        uint8_t *stream = malloc((size_t)planes * px);
        memcpy(copy, logits, (size_t)classes * px * sizeof *copy);
        TH_OK(tt_predict_to_masks(copy, classes, w, h, &keep, planes_in)); /* nothing removed */
        memcpy(copy, logits, (size_t)classes * px * sizeof *copy);
        TH_OK(tt_predict_to_masks(copy, classes, w, h, &rule, want));
        for (size_t i = 0; i < (size_t)planes * px; i++) removed += (want[i] != 0) != (planes_in[i] != 0);
        for (int p = 0; p < planes; p++) /* planes to interleaved bands, as a raster holds them */
            for (size_t i = 0; i < px; i++) stream[i * planes + p] = planes_in[(size_t)p * px + i];
        tt_cc_stream *cc = NULL;
        TH_OK(tt_cc_stream_new(w, planes, !multi, &cc));
        for (int y = 0, step = 1; y < h; y += step, step = step % 7 + 2) {
            int rows = h - y < step ? h - y : step;
            TH_OK(tt_cc_stream_add(cc, rows, stream + (size_t)y * w * planes));
        }
        for (int y = 0, step = 5; y < h; y += step, step = step % 4 + 1) {
            int rows = h - y < step ? h - y : step;
            TH_OK(tt_cc_stream_filter(cc, rows, stream + (size_t)y * w * planes, min_size));
        }
        for (int p = 0; p < planes; p++)
            for (size_t i = 0; i < px; i++)
                wrong += (stream[i * planes + p] != 0) != (want[(size_t)p * px + i] != 0) ||
                         (!multi && stream[i] != want[i]);
        checked += (int)(planes * px);
        tt_cc_stream_free(cc);
        free(logits), free(copy), free(want), free(planes_in), free(stream);
    }
    printf("\n  12 masks of 61x47 (class index and multi-label) in uneven bands, %d pixels "
           "removed: %d of %d pixels off the whole-image removal", removed, wrong, checked);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(removed > 100);
    /* the second pass must see the rows of the first */
    tt_cc_stream *cc = NULL;
    uint8_t row[4] = {1, 1, 0, 1};
    int least[2] = {0, 3};
    TH_OK(tt_cc_stream_new(4, 1, 1, &cc));
    TH_OK(tt_cc_stream_add(cc, 1, row));
    TH_OK(tt_cc_stream_filter(cc, 1, row, least));
    CU_ASSERT(row[0] == 0 && row[1] == 0 && row[3] == 0);
    row[0] = row[1] = row[3] = 1;
    tt_status st = tt_cc_stream_filter(cc, 1, row, least);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(st);
    tt_cc_stream_free(cc);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"threshold", test_threshold},
        {"logits to masks, multi-label and class index", test_predict_to_masks},
        {"small components, 4 and 8 connectivity", test_remove_small},
        {"one component of 2M pixels", test_big_component},
        {"small components removed from a stream of rows", test_components_stream},
        {"nearest and area resize", test_resize},
        {"RLE of predicted masks round-trips", test_rle_round_trip},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("postprocess", tests, TH_HOST);
}
