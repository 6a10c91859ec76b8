/* The sampler and augmentation: determinism from the seed, exact resume
 * from a saved state, foreground oversampling, border padding, sorted
 * no-shuffle order, masks following the geometry, and the splits. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/augment.h"
#include "data/image.h"
#include "data/sampler.h"
#include "harness.h"
#include "ref_pixels.h"

static char dir[512];
#define TILE 64

/* Five items: 64x64 (the tile), 100x80, 50x40 (smaller), 130x97, 300x260;
 * class-index masks with 3 classes: mask = 1 where R > 128, plus a 4x4
 * square of class 2 (and one ignore pixel) in each; the big one has only the
 * square (foreground is rare there). */
static void make_source(rp_source *src, tt_mask_kind kind)
{
    int sizes[5][2] = {{64, 64}, {100, 80}, {50, 40}, {130, 97}, {300, 260}};
    int classes = 3, planes = kind == TT_MASK_CLASS_INDEX ? 1 : classes;
    rp_source_init(src, classes, kind);
    for (int i = 0; i < 5; i++) {
        int w = sizes[i][0], h = sizes[i][1];
        uint8_t *rgb = rp_make_rgb(w, h, (uint64_t)(i + 1));
        char path[PATH_MAX], name[32];
        snprintf(name, sizeof name, "item%d.png", i);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        CU_ASSERT_FATAL(rp_write_png(path, w, h, rgb));
        uint8_t *mask = calloc((size_t)planes * w * h, 1);
        for (int p = 0; p < w * h; p++) {
            int fg = i != 4 && rgb[3 * p] > 128;
            if (planes == 1) mask[p] = (uint8_t)fg;
            else mask[p] = (uint8_t)fg;
        }
        for (int y = h / 2; y < h / 2 + 4; y++)
            for (int x = w / 3; x < w / 3 + 4; x++) {
                if (planes == 1) mask[y * w + x] = 2;
                else mask[(size_t)2 * w * h + y * w + x] = 1;
            }
        rp_source_add(src, name, path, w, h, mask);
        free(mask);
        free(rgb);
    }
}

static tt_tilecache *open_cache(rp_source *src, const char *sub)
{
    char cdir[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/%s", dir, sub);
    tt_tilecache_config cfg = {.dir = cdir};
    tt_tilecache *cache = NULL;
    TH_OK(tt_tilecache_create(&cfg, &src->source, &cache));
    return cache;
}

static tt_sampler_config train_config(uint64_t seed)
{
    tt_sampler_config c = {TILE, TILE, 0.0, 2, 0, 0, seed, tt_augment_defaults(), 1};
    return c;
}

/* Draws n crops; returns a checksum of bytes and positions. */
static uint64_t draw(tt_sampler *s, int n, int planes, tt_crop_info *infos)
{
    uint8_t rgb[TILE * TILE * 3], masks[TILE * TILE * 3];
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int k = 0; k < n; k++) {
        tt_crop_info info;
        TH_OK(tt_sampler_next(s, rgb, masks, &info));
        if (infos) infos[k] = info;
        for (size_t i = 0; i < sizeof rgb; i++) h = (h ^ rgb[i]) * 0x100000001b3ULL;
        for (size_t i = 0; i < (size_t)TILE * TILE * planes; i++) h = (h ^ masks[i]) * 0x100000001b3ULL;
        h = (h ^ (uint64_t)(info.item * 1000003 + info.x0 * 1009 + info.y0)) * 0x100000001b3ULL;
    }
    return h;
}

static int all_items[5] = {0, 1, 2, 3, 4};

static void test_determinism(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c1");
    tt_sampler_config cfg = train_config(42);
    cfg.fg_fraction = 0.33;
    tt_sampler *a, *b, *c;
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &a));
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &b));
    cfg.seed = 43;
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &c));
    CU_ASSERT_EQUAL(tt_sampler_epoch_length(a), 10);
    uint64_t ha = draw(a, 25, 1, NULL), hb = draw(b, 25, 1, NULL), hc = draw(c, 25, 1, NULL);
    CU_ASSERT_EQUAL(ha, hb);
    CU_ASSERT_NOT_EQUAL(ha, hc);
    tt_sampler_state st;
    tt_sampler_get_state(a, &st);
    CU_ASSERT_EQUAL(st.epoch, 2);
    CU_ASSERT_EQUAL(st.position, 5);
    /* an epoch visits every item crops_per_image times */
    tt_crop_info infos[10];
    tt_sampler_state zero = {42, 0, 0};
    TH_OK(tt_sampler_set_state(b, &zero));
    draw(b, 10, 1, infos);
    int visits[5] = {0};
    for (int k = 0; k < 10; k++) visits[infos[k].item]++;
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(visits[i], 2);
    tt_sampler_destroy(a), tt_sampler_destroy(b), tt_sampler_destroy(c);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

static void test_resume(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c2");
    tt_sampler_config cfg = train_config(7);
    cfg.fg_fraction = 0.5;
    tt_sampler *a, *b;
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &a));
    draw(a, 7, 1, NULL);
    tt_sampler_state saved;
    tt_sampler_get_state(a, &saved);
    uint64_t continued = draw(a, 16, 1, NULL); /* crosses into the next epoch */
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &b));
    TH_OK(tt_sampler_set_state(b, &saved));
    uint64_t resumed = draw(b, 16, 1, NULL);
    CU_ASSERT_EQUAL(continued, resumed);
    /* a state from another seed is refused */
    tt_sampler_state other = saved;
    other.seed = 8;
    tt_status s = tt_sampler_set_state(b, &other);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    other = saved;
    other.position = 10;
    s = tt_sampler_set_state(b, &other);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_sampler_destroy(a), tt_sampler_destroy(b);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

/* On the 300x260 item, foreground is one 4x4 square: a random 64x64 crop
 * holds it about 7% of the time; with fg_fraction 0.33 about 0.33 + 0.67 *
 * 0.07 of crops should. */
static void test_foreground_oversampling(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c3");
    int big[1] = {4};
    double fractions[2] = {0.0, 0.33};
    double with_fg[2], centred[2];
    int n = 600;
    for (int f = 0; f < 2; f++) {
        tt_sampler_config cfg = train_config(11);
        cfg.fg_fraction = fractions[f];
        cfg.no_augment = 1;
        tt_sampler *s;
        TH_OK(tt_sampler_create(&cfg, cache, big, 1, &s));
        uint8_t rgb[TILE * TILE * 3], mask[TILE * TILE];
        int holds = 0, marked = 0, marked_without = 0;
        for (int k = 0; k < n; k++) {
            tt_crop_info info;
            TH_OK(tt_sampler_next(s, rgb, mask, &info));
            int fg = 0;
            for (int p = 0; p < TILE * TILE; p++) fg |= mask[p] == 2;
            holds += fg;
            marked += info.foreground;
            marked_without += info.foreground && !fg;
        }
        with_fg[f] = (double)holds / n;
        centred[f] = (double)marked / n;
        CU_ASSERT_EQUAL(marked_without, 0); /* a foreground crop always holds its pixel */
        tt_sampler_destroy(s);
    }
    printf("\n  fg_fraction 0: %.3f of crops hold foreground; 0.33: %.3f centred, %.3f hold foreground",
           with_fg[0], centred[1], with_fg[1]);
    CU_ASSERT(centred[0] == 0.0);
    CU_ASSERT(centred[1] > 0.33 - 0.06 && centred[1] < 0.33 + 0.06);
    CU_ASSERT(with_fg[0] < 0.15);
    CU_ASSERT(with_fg[1] > 0.30);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

static void test_border_padding(void)
{
    for (int kind = 0; kind < 2; kind++) {
        rp_source src;
        make_source(&src, kind ? TT_MASK_MULTI_LABEL : TT_MASK_CLASS_INDEX);
        tt_tilecache *cache = open_cache(&src, kind ? "c4m" : "c4");
        int small[1] = {2}; /* 50 x 40, inside a 64 x 64 crop */
        tt_sampler_config cfg = train_config(3);
        cfg.no_augment = 1;
        tt_sampler *s;
        TH_OK(tt_sampler_create(&cfg, cache, small, 1, &s));
        int planes = kind ? 3 : 1, bad = 0, offsets_seen = 0;
        uint8_t pad = kind ? 0 : 255;
        tt_image full;
        TH_OK(tt_image_load(src.paths[2], 0, &full));
        for (int k = 0; k < 20; k++) {
            uint8_t rgb[TILE * TILE * 3], mask[TILE * TILE * 3];
            tt_crop_info info;
            TH_OK(tt_sampler_next(s, rgb, mask, &info));
            CU_ASSERT(info.x0 <= 0 && info.x0 >= 50 - TILE && info.y0 <= 0 && info.y0 >= 40 - TILE);
            offsets_seen += info.x0 != 0 || info.y0 != 0;
            for (int y = 0; y < TILE; y++)
                for (int x = 0; x < TILE; x++) {
                    int sx = info.x0 + x, sy = info.y0 + y, inside = sx >= 0 && sy >= 0 && sx < 50 && sy < 40;
                    for (int c = 0; c < 3; c++)
                        bad += rgb[(y * TILE + x) * 3 + c] != (inside ? full.pixels[(sy * 50 + sx) * 3 + c] : 0);
                    for (int p = 0; p < planes; p++)
                        bad += mask[p * TILE * TILE + y * TILE + x] !=
                               (inside ? src.masks[2][p * 50 * 40 + sy * 50 + sx] : pad);
                }
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(offsets_seen > 0);
        tt_image_free(&full);
        tt_sampler_destroy(s);
        tt_tilecache_destroy(cache);
        rp_source_free(&src);
    }
}

static void test_no_shuffle_order(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c5");
    tt_sampler_config cfg = train_config(5);
    cfg.no_shuffle = 1;
    cfg.no_augment = 1;
    tt_sampler *s;
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &s));
    /* grids: 1x1, 2x2, 1x1, 3x2, 5x5 */
    CU_ASSERT_EQUAL_FATAL(tt_sampler_epoch_length(s), 1 + 4 + 1 + 6 + 25);
    int k = 0, bad = 0;
    for (int i = 0; i < 5; i++) {
        int gx = (src.widths[i] + TILE - 1) / TILE, gy = (src.heights[i] + TILE - 1) / TILE;
        for (int y = 0; y < gy; y++)
            for (int x = 0; x < gx; x++, k++) {
                uint8_t rgb[TILE * TILE * 3], mask[TILE * TILE];
                tt_crop_info info;
                TH_OK(tt_sampler_next(s, rgb, mask, &info));
                bad += info.item != i || info.x0 != x * TILE || info.y0 != y * TILE;
                if (i == 0) { /* the image equal to the tile comes whole */
                    tt_image full;
                    TH_OK(tt_image_load(src.paths[0], 0, &full));
                    CU_ASSERT(memcmp(rgb, full.pixels, sizeof rgb) == 0);
                    CU_ASSERT(memcmp(mask, src.masks[0], sizeof mask) == 0);
                    tt_image_free(&full);
                }
            }
    }
    CU_ASSERT_EQUAL(bad, 0);
    tt_sampler_state st;
    tt_sampler_get_state(s, &st);
    CU_ASSERT(st.epoch == 1 && st.position == 0);
    tt_sampler_destroy(s);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

/* Reference geometry on a 3x3 and a 2x3: numpy's rot90 (counter-clockwise)
 * and flips. */
static void test_augment_geometry(void)
{
    uint8_t scratch[64 * 3];
    uint8_t img[9 * 3], m[9];
    for (int i = 0; i < 9; i++) {
        m[i] = (uint8_t)i;
        img[3 * i] = img[3 * i + 1] = img[3 * i + 2] = (uint8_t)(10 * i);
    }
    tt_augment_params p = tt_augment_identity();
    p.quarter_turns = 1; /* np.rot90([[0,1,2],[3,4,5],[6,7,8]]) = [[2,5,8],[1,4,7],[0,3,6]] */
    tt_augment_apply(&p, 3, 3, img, m, 1, scratch);
    uint8_t rot[9] = {2, 5, 8, 1, 4, 7, 0, 3, 6};
    CU_ASSERT(memcmp(m, rot, 9) == 0);
    for (int i = 0; i < 9; i++) CU_ASSERT_EQUAL(img[3 * i], 10 * rot[i]);
    uint8_t m2[6] = {0, 1, 2, 3, 4, 5}, img2[18] = {0};
    p = tt_augment_identity();
    p.flip_h = 1; /* [[0,1,2],[3,4,5]] -> [[2,1,0],[5,4,3]] */
    tt_augment_apply(&p, 3, 2, img2, m2, 1, scratch);
    uint8_t fh[6] = {2, 1, 0, 5, 4, 3};
    CU_ASSERT(memcmp(m2, fh, 6) == 0);
    p = tt_augment_identity();
    p.flip_v = 1;
    tt_augment_apply(&p, 3, 2, img2, m2, 1, scratch);
    uint8_t fv[6] = {5, 4, 3, 2, 1, 0};
    CU_ASSERT(memcmp(m2, fv, 6) == 0);

    /* colour jitter: only the image changes, as the formula says */
    uint8_t px[3] = {0, 128, 255}, mm[1] = {7};
    p = tt_augment_identity();
    p.brightness = 0.1f;
    p.contrast = 1.2f;
    tt_augment_apply(&p, 1, 1, px, mm, 1, scratch);
    CU_ASSERT_EQUAL(px[0], 0);   /* ((0 - .5) * 1.2 + .6) * 255 = 0 */
    CU_ASSERT_EQUAL(px[1], 154); /* ((128/255-.5)*1.2+.6)*255 = 153.6 */
    CU_ASSERT_EQUAL(px[2], 255);
    CU_ASSERT_EQUAL(mm[0], 7);
}

/* Through the sampler: the mask of every item is (R > 128) (+ the class-2
 * square), so after any flip or turn the mask must still agree with the
 * augmented image wherever the square is absent. */
static void test_masks_follow_geometry(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c6");
    tt_sampler_config cfg = train_config(9);
    cfg.augment.brightness = cfg.augment.contrast = 0.0f; /* keep R comparable */
    int items[4] = {0, 1, 2, 3};
    tt_sampler *s;
    TH_OK(tt_sampler_create(&cfg, cache, items, 4, &s));
    int bad = 0, turned = 0, flipped = 0;
    for (int k = 0; k < 60; k++) {
        uint8_t rgb[TILE * TILE * 3], mask[TILE * TILE];
        tt_crop_info info;
        TH_OK(tt_sampler_next(s, rgb, mask, &info));
        turned += info.augment.quarter_turns != 0;
        flipped += info.augment.flip_h || info.augment.flip_v;
        for (int p = 0; p < TILE * TILE; p++) {
            if (mask[p] == 2 || mask[p] == 255) continue;
            bad += mask[p] != (rgb[3 * p] > 128);
        }
    }
    printf("\n  60 crops: %d turned, %d flipped, %d mask pixels off the image", turned, flipped, bad);
    CU_ASSERT(turned > 20 && flipped > 20);
    CU_ASSERT_EQUAL(bad, 0);
    tt_sampler_destroy(s);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

/* The warp through the sampler: every transform on, the mask still agrees
 * with the image (nearest against bilinear: off only where the image's
 * edge blends two sides), points from outside the image ignored (255) for
 * both mask kinds, and a resume mid-stream gives the same crops bit for
 * bit. */
static void test_warp(void)
{
    for (int kind = 0; kind < 2; kind++) {
        tt_mask_kind mk = kind ? TT_MASK_MULTI_LABEL : TT_MASK_CLASS_INDEX;
        int planes = kind ? 3 : 1;
        rp_source src;
        make_source(&src, mk);
        tt_tilecache *cache = open_cache(&src, kind ? "c10" : "c11");
        tt_sampler_config cfg = train_config(21);
        TH_OK(tt_augment_parse("affine:p=1:shift=0.2:scale=0.3:rotate=45,grid:p=0.5,"
                               "elastic:p=0.5:alpha=3:spacing=16", &cfg.augment));
        tt_sampler *s, *r;
        TH_OK(tt_sampler_create(&cfg, cache, all_items, 4, &s)); /* items with R > 128 masks */
        int bad = 0, judged = 0, ignored = 0;
        for (int k = 0; k < 40; k++) {
            uint8_t rgb[TILE * TILE * 3], mask[3 * TILE * TILE];
            tt_crop_info info;
            TH_OK(tt_sampler_next(s, rgb, mask, &info));
            CU_ASSERT(info.augment.affine);
            for (int p = 0; p < TILE * TILE; p++) {
                uint8_t m = mask[p];
                int square = kind ? mask[2 * TILE * TILE + p] == 1 : m == 2;
                if (m == 255) {
                    ignored++;
                    for (int q = 1; q < planes; q++) CU_ASSERT_EQUAL(mask[q * TILE * TILE + p], 255);
                    continue;
                }
                int r_ = rgb[3 * p];
                if (square || (r_ > 100 && r_ < 156)) continue; /* the square; a blended edge */
                judged++;
                bad += m != (r_ > 128);
            }
        }
        printf("\n  %s: 40 warped crops, %d pixels judged, %d off, %d ignored (outside the image)",
               kind ? "multi-label" : "class index", judged, bad, ignored);
        CU_ASSERT(judged > 40 * TILE * TILE / 4);
        CU_ASSERT(bad <= judged / 200);
        CU_ASSERT(ignored > 0);
        /* resume: 5 crops in, then 12 */
        TH_OK(tt_sampler_create(&cfg, cache, all_items, 4, &r));
        tt_sampler_destroy(s);
        TH_OK(tt_sampler_create(&cfg, cache, all_items, 4, &s));
        draw(s, 5, planes, NULL);
        tt_sampler_state saved;
        tt_sampler_get_state(s, &saved);
        uint64_t continued = draw(s, 12, planes, NULL);
        TH_OK(tt_sampler_set_state(r, &saved));
        CU_ASSERT_EQUAL(draw(r, 12, planes, NULL), continued);
        tt_sampler_destroy(s), tt_sampler_destroy(r);
        tt_tilecache_destroy(cache);
        rp_source_free(&src);
    }
}

static void test_splits(void)
{
    rp_source src;
    rp_source_init(&src, 2, TT_MASK_CLASS_INDEX);
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "img%02d.jpg", i);
        rp_source_add(&src, name, "/nonexistent", 1, 1, NULL);
    }
    int *train, *val, nt, nv;
    TH_OK(tt_split_fraction(&src.source, 0.2, 1, &train, &nt, &val, &nv));
    CU_ASSERT_EQUAL(nt, 8);
    CU_ASSERT_EQUAL(nv, 2);
    CU_ASSERT(val[0] < val[1]);
    int seen[10] = {0};
    for (int i = 0; i < nt; i++) seen[train[i]]++;
    for (int i = 0; i < nv; i++) seen[val[i]]++;
    for (int i = 0; i < 10; i++) CU_ASSERT_EQUAL(seen[i], 1);
    int *train2, *val2, nt2, nv2;
    TH_OK(tt_split_fraction(&src.source, 0.2, 1, &train2, &nt2, &val2, &nv2));
    CU_ASSERT(nv2 == 2 && val2[0] == val[0] && val2[1] == val[1]);
    free(train), free(val), free(train2), free(val2);
    tt_status s = tt_split_fraction(&src.source, 1.5, 1, &train, &nt, &val, &nv);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);

    char list[PATH_MAX];
    snprintf(list, sizeof list, "%s/val.txt", dir);
    FILE *f = fopen(list, "w");
    fputs("# validation\nimg03.jpg\n\n  img07  \r\n", f);
    fclose(f);
    TH_OK(tt_split_list(&src.source, list, &train, &nt, &val, &nv));
    CU_ASSERT(nv == 2 && val[0] == 3 && val[1] == 7 && nt == 8);
    free(train), free(val);
    f = fopen(list, "w");
    fputs("img03.jpg\nimg99.jpg\n", f);
    fclose(f);
    s = tt_split_list(&src.source, list, &train, &nt, &val, &nv);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(s && strstr(tt_status_message(s), "val.txt:2") != NULL);
    tt_status_free(s);
    /* the list cannot be read (EIO; TT_FAULT=read:1): an error naming it,
     * no split */
    th_setenv("TT_FAULT", "read:1");
    s = tt_split_list(&src.source, list, &train, &nt, &val, &nv);
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "val.txt") != NULL);
    CU_ASSERT(train == NULL && val == NULL);
    tt_status_free(s);
    rp_source_free(&src);
}

/* Data parallel: K samplers of stride K, started r crops in, take crops r,
 * r + K, ... of the one stream, across epoch ends (3 ranks, epochs of 10). */
static void test_stride_ranks(void)
{
    rp_source src;
    make_source(&src, TT_MASK_CLASS_INDEX);
    tt_tilecache *cache = open_cache(&src, "c9");
    tt_sampler_config cfg = train_config(7);
    cfg.fg_fraction = 0.33;
    enum { K = 3, PER_RANK = 9 };
    tt_sampler *one, *rank[K];
    TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &one));
    tt_crop_info stream[K * PER_RANK], mine[PER_RANK];
    draw(one, K * PER_RANK, 1, stream);
    cfg.stride = K;
    for (int r = 0; r < K; r++) {
        TH_OK(tt_sampler_create(&cfg, cache, all_items, 5, &rank[r]));
        tt_sampler_state st;
        tt_sampler_get_state(rank[r], &st);
        st = tt_sampler_state_after(rank[r], st, r);
        TH_OK(tt_sampler_set_state(rank[r], &st));
        draw(rank[r], PER_RANK, 1, mine);
        int same = 0;
        for (int i = 0; i < PER_RANK; i++) {
            const tt_crop_info *a = &mine[i], *b = &stream[i * K + r];
            same += a->item == b->item && a->x0 == b->x0 && a->y0 == b->y0 &&
                    a->epoch == b->epoch && a->position == b->position;
        }
        CU_ASSERT_EQUAL(same, PER_RANK);
        tt_sampler_get_state(rank[r], &st);
        CU_ASSERT_EQUAL(tt_sampler_stream_index(rank[r], &st), (int64_t)K * PER_RANK + r);
        tt_sampler_destroy(rank[r]);
    }
    cfg.stride = -1;
    tt_sampler *bad = NULL;
    tt_status s = tt_sampler_create(&cfg, cache, all_items, 5, &bad);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_sampler_destroy(one);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

int main(void)
{
    if (!rd_tempdir_in(dir, sizeof dir, "pixels")) return 1;
    CU_TestInfo tests[] = {
        {"deterministic from the seed", test_determinism},
        {"save/restore resumes exactly", test_resume},
        {"foreground oversampling", test_foreground_oversampling},
        {"border crops padded", test_border_padding},
        {"no-shuffle sorted grid order", test_no_shuffle_order},
        {"augment geometry reference", test_augment_geometry},
        {"masks follow the geometry", test_masks_follow_geometry},
        {"the warp: masks follow, outside ignored, exact resume", test_warp},
        {"train/validation splits", test_splits},
        {"stride K: rank r takes crops r, r + K, ...", test_stride_ranks},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("sampler", tests, TH_HOST);
    rd_rmtree(dir);
    return rc;
}
