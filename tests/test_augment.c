/* Augmentation of one crop (data/augment.h): the spec, the draws, the warp's
 * source map and sampling, and the colour transforms, each against a
 * plain formula. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "data/augment.h"
#include "harness.h"

static const char *specs[] = {
    "none",
    "default",
    "flip,rot90",
    "affine",
    "affine:p=1:shift=0.1:scale=0.2:rotate=30,grid:steps=4,elastic:alpha=4:spacing=16",
    "default,gamma:range=0.3,hsv:hue=20:sat=0.5,noise:std=0.05,blur:p=0.5:sigma=2",
    "brightness:0.25,contrast:0.3",
};

/* Each spec parses, formats, and parses back to the same configuration. */
static void test_spec(void)
{
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        tt_augment_config a, b;
        char text[512];
        TH_OK(tt_augment_parse(specs[i], &a));
        tt_augment_format(&a, text, sizeof text);
        TH_OK(tt_augment_parse(text, &b));
        if (memcmp(&a, &b, sizeof a) != 0) printf("\n  '%s' -> '%s' differs", specs[i], text);
        CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    }
    tt_augment_config c, d = tt_augment_defaults();
    TH_OK(tt_augment_parse("default", &c));
    CU_ASSERT(memcmp(&c, &d, sizeof c) == 0);
    TH_OK(tt_augment_parse("affine:rotate=30", &c));
    CU_ASSERT(c.affine_p == 0.5f && c.rotate == 30.0f && c.shift == 0.0625f && !c.flips);
    TH_OK(tt_augment_parse("brightness:0.25", &c));
    CU_ASSERT(c.brightness == 0.25f && c.contrast == 0.0f);
    char text[64];
    TH_OK(tt_augment_parse("none", &c));
    CU_ASSERT_STRING_EQUAL(tt_augment_format(&c, text, sizeof text), "none");
    struct { const char *spec, *says; } bad[] = {
        {"flipp", "unknown transform 'flipp'"},
        {"affine:angle=3", "'angle' is not one of its keys (p, shift, scale, rotate)"},
        {"affine:rotate=400", "rotate '400' is not a number from 0 to 180"},
        {"noise:std=x", "std 'x' is not a number"},
        {"flip:q=1", "flip: 'q' is not one of its keys (p)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tt_status s = tt_augment_parse(bad[i].spec, &c);
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
        if (s && !strstr(tt_status_message(s), bad[i].says))
            printf("\n  '%s': '%s' lacks '%s'", bad[i].spec, tt_status_message(s), bad[i].says);
        CU_ASSERT(s && strstr(tt_status_message(s), bad[i].says) != NULL);
        tt_status_free(s);
    }
}

/* The draws: the default's flips, turns and jitter from the first five
 * draws as they always were, and one transform's setting moves no other's
 * draw. */
static void test_draws(void)
{
    tt_augment_config all, fewer, plain = tt_augment_defaults();
    TH_OK(tt_augment_parse(specs[5], &all));
    all.affine_p = all.grid_p = all.elastic_p = 1;
    fewer = all;
    fewer.gamma_p = 0; /* gamma off: the others as before */
    for (uint64_t k = 0; k < 50; k++) {
        tt_rng r1 = tt_rng_from(3, 1, k), r2 = r1, r3 = r1, ref = r1;
        tt_augment_params a, b, p;
        tt_augment_draw(&all, 1, &r1, &a);
        tt_augment_draw(&fewer, 1, &r2, &b);
        tt_augment_draw(&plain, 1, &r3, &p);
        CU_ASSERT(r1.state == r2.state && r2.state == r3.state); /* the same count */
        CU_ASSERT(b.gamma == 1.0f);
        b.gamma = a.gamma;
        /* the members, not the tail padding (a struct copy leaves it unspecified) */
        CU_ASSERT(memcmp(&a, &b, offsetof(tt_augment_params, blur) + sizeof a.blur) == 0);
        double fh = tt_rng_uniform(&ref), fv = tt_rng_uniform(&ref), turn = tt_rng_uniform(&ref);
        double br = tt_rng_uniform(&ref), co = tt_rng_uniform(&ref);
        CU_ASSERT(p.flip_h == (fh < 0.5) && p.flip_v == (fv < 0.5));
        CU_ASSERT_EQUAL(p.quarter_turns, (int)(turn * 4.0) & 3);
        CU_ASSERT_EQUAL(p.brightness, (float)((2.0 * br - 1.0) * 0.1f));
        CU_ASSERT_EQUAL(p.contrast, (float)(1.0 + (2.0 * co - 1.0) * 0.1f));
        CU_ASSERT(!tt_augment_warps(&p) && tt_augment_warps(&a));
    }
    /* each transform's probability: 0 never, the default's 1/2 for flips */
    tt_augment_config none_p;
    TH_OK(tt_augment_parse("flip:p=0,rot90:p=0,brightness:0.3:p=0,contrast:range=0.3:p=0", &none_p));
    int flips = 0;
    for (uint64_t k = 0; k < 200; k++) {
        tt_rng r1 = tt_rng_from(9, 2, k), r2 = r1;
        tt_augment_params a, b;
        tt_augment_draw(&none_p, 1, &r1, &a);
        CU_ASSERT(!a.flip_h && !a.flip_v && !a.quarter_turns && a.brightness == 0 && a.contrast == 1);
        tt_augment_draw(&plain, 1, &r2, &b);
        flips += b.flip_h;
    }
    printf("\n  p=0 for each: never drawn in 200 crops; the default flipped %d of 200", flips);
    CU_ASSERT(flips > 70 && flips < 130);
}

/* The source map against its formula: identity, a shift, a quarter turn
 * about the centre, a zoom; the grid keeps the ends and is monotonic;
 * elastic with alpha 0 is the identity. */
static void test_source_map(void)
{
    enum { W = 9, H = 7 };
    float sx[W * H], sy[W * H];
    tt_augment_params p = tt_augment_identity();
    p.affine = 1;
    tt_augment_source_map(&p, W, H, sx, sy);
    for (int i = 0; i < W * H; i++) CU_ASSERT(sx[i] == i % W && sy[i] == i / W);
    p.dx = 0.25f, p.dy = -1.0f / 7;
    tt_augment_source_map(&p, W, H, sx, sy);
    for (int i = 0; i < W * H; i++)
        CU_ASSERT(fabsf(sx[i] - (i % W - 2.25f)) < 1e-5f && fabsf(sy[i] - (i / W + 1.0f)) < 1e-5f);
    p = tt_augment_identity();
    p.affine = 1, p.angle = (float)(3.14159265358979323846 / 2), p.zoom = 2;
    tt_augment_source_map(&p, W, H, sx, sy);
    /* out = c + 2 R(90)(s - c): s = c + R(-90)(out - c) / 2 */
    for (int i = 0; i < W * H; i++) {
        float ox = i % W - 4.0f, oy = i / W - 3.0f;
        CU_ASSERT(fabsf(sx[i] - (4.0f + 0.5f * oy)) < 1e-5f);
        CU_ASSERT(fabsf(sy[i] - (3.0f - 0.5f * ox)) < 1e-5f);
    }
    p = tt_augment_identity();
    p.grid = 1, p.grid_steps = 3, p.grid_limit = 0.5f, p.warp_seed = 42;
    tt_augment_source_map(&p, W, H, sx, sy);
    CU_ASSERT(sx[0] == 0 && sy[0] == 0);
    CU_ASSERT(fabsf(sx[W - 1] - (W - 1)) < 1e-4f && fabsf(sy[(H - 1) * W] - (H - 1)) < 1e-4f);
    int moved = 0;
    for (int x = 1; x < W; x++) {
        CU_ASSERT(sx[x] > sx[x - 1]);
        moved += fabsf(sx[x] - x) > 1e-3f;
    }
    CU_ASSERT(moved > 0);
    p = tt_augment_identity();
    p.elastic = 1, p.elastic_alpha = 0, p.elastic_spacing = 4, p.warp_seed = 7;
    tt_augment_source_map(&p, W, H, sx, sy);
    for (int i = 0; i < W * H; i++) CU_ASSERT(sx[i] == i % W && sy[i] == i / W);
    p.elastic_alpha = 3;
    tt_augment_source_map(&p, W, H, sx, sy);
    float most = 0;
    for (int i = 0; i < W * H; i++) {
        float d = fmaxf(fabsf(sx[i] - i % W), fabsf(sy[i] - i / W));
        most = d > most ? d : most;
    }
    CU_ASSERT(most > 0.1f && most <= 3.0f + 1e-5f);
}

/* Sampling: whole pixels copy, half pixels average, outside is 0 for the
 * image and ignore (255) for every mask plane. */
static void test_sample(void)
{
    enum { WW = 4, WH = 3 };
    uint8_t win[WW * WH * 3], masks[2 * WW * WH];
    for (int i = 0; i < WW * WH; i++) {
        win[3 * i] = (uint8_t)(10 * i), win[3 * i + 1] = 7, win[3 * i + 2] = (uint8_t)(250 - i);
        masks[i] = (uint8_t)(i % 3), masks[WW * WH + i] = (uint8_t)(i % 2);
    }
    /* three points: pixel (1, 1) of the window at (-1, -1), between (0, 0)
     * and (1, 0), and far outside */
    float sx[3] = {0.0f, -0.5f, 50.0f}, sy[3] = {0.0f, -1.0f, 0.0f};
    uint8_t rgb[9], out[6];
    tt_augment_sample(sx, sy, 3, 1, -1, -1, WW, WH, win, masks, 2, rgb, out);
    CU_ASSERT(rgb[0] == 50 && rgb[1] == 7 && rgb[2] == 245);
    CU_ASSERT(out[0] == 5 % 3 && out[3] == 5 % 2);
    CU_ASSERT_EQUAL(rgb[3], 5); /* (0 + 10) / 2 */
    CU_ASSERT(rgb[6] == 0 && rgb[7] == 0 && rgb[8] == 0);
    CU_ASSERT(out[2] == 255 && out[5] == 255);
}

/* Colour against formulas; masks untouched. */
static void test_colour(void)
{
    uint8_t scratch[64 * 64 * 3], mask[1] = {3};
    tt_augment_params p = tt_augment_identity();
    p.gamma = 2.0f;
    uint8_t px[3] = {0, 128, 255};
    tt_augment_apply(&p, 1, 1, px, mask, 1, scratch);
    CU_ASSERT(px[0] == 0 && px[1] == (uint8_t)lround(255 * pow(128 / 255.0, 2)) && px[2] == 255);
    p = tt_augment_identity();
    p.hue = 120;
    uint8_t red[3] = {255, 0, 0};
    tt_augment_apply(&p, 1, 1, red, mask, 1, scratch);
    CU_ASSERT(red[0] == 0 && red[1] == 255 && red[2] == 0);
    p = tt_augment_identity();
    p.saturation = 0;
    uint8_t c[3] = {200, 100, 50};
    tt_augment_apply(&p, 1, 1, c, mask, 1, scratch);
    CU_ASSERT(c[0] == 200 && c[1] == 200 && c[2] == 200); /* the value, max(r, g, b) */
    enum { N = 64 };
    uint8_t img[N * N * 3];
    memset(img, 90, sizeof img);
    p = tt_augment_identity();
    p.blur = 2.5f;
    tt_augment_apply(&p, N, N, img, mask, 1, scratch);
    int flat = 1;
    for (size_t i = 0; i < sizeof img; i++) flat &= img[i] == 90;
    CU_ASSERT(flat);
    img[(N / 2 * N + N / 2) * 3] = 255; /* a point spreads, symmetrically */
    tt_augment_apply(&p, N, N, img, mask, 1, scratch);
    CU_ASSERT(img[(N / 2 * N + N / 2) * 3] < 255 && img[(N / 2 * N + N / 2 + 1) * 3] > 90);
    CU_ASSERT_EQUAL(img[(N / 2 * N + N / 2 + 1) * 3], img[(N / 2 * N + N / 2 - 1) * 3]);
    memset(img, 128, sizeof img);
    p = tt_augment_identity();
    p.noise = 0.05f, p.noise_seed = 9;
    tt_augment_apply(&p, N, N, img, mask, 1, scratch);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < sizeof img; i++) sum += img[i] - 128.0, sq += (img[i] - 128.0) * (img[i] - 128.0);
    double mean = sum / sizeof img, sd = sqrt(sq / sizeof img - mean * mean);
    printf("\n  noise 0.05: mean %+.3f, sd %.3f (want 0, %.3f)", mean, sd, 0.05 * 255);
    CU_ASSERT(fabs(mean) < 0.3 && fabs(sd - 0.05 * 255) < 0.4);
    CU_ASSERT_EQUAL(mask[0], 3);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"spec: parse, format, parse back; errors name the part", test_spec},
        {"draws: a fixed count, the default's as before", test_draws},
        {"source map: affine, grid, elastic against formulas", test_source_map},
        {"sampling: bilinear image, nearest masks, outside ignored", test_sample},
        {"colour: gamma, hue, saturation, blur, noise", test_colour},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("augment", tests, TH_HOST);
}
