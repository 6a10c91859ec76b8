/* The tile cache: crops equal full decodes (borders and outside included),
 * entries rebuilt when the source changes and reused when it does not,
 * tiled TIFF inputs read in place, crops touching only their tiles on a
 * 2048 x 2048 image, the LRU byte bound, foreground counts, two
 * processes building one cache, and spoiled entries (a flipped bit, garbled
 * bytes) rebuilt with a warning. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tiffio.h>

#include "data/image.h"
#include "data/rng.h"
#include "data/tilecache.h"
#include "harness.h"
#include "ref_pixels.h"

static char dir[512];

/* Reference crop from a full decode: (h, w, bpp) with pad outside. */
static void ref_crop(const uint8_t *full, int fw, int fh, int bpp, int x0, int y0, int w, int h, uint8_t pad,
                     uint8_t *out)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < bpp; k++) {
                int sx = x0 + x, sy = y0 + y;
                out[((size_t)y * w + x) * bpp + k] =
                    sx >= 0 && sy >= 0 && sx < fw && sy < fh ? full[((size_t)sy * fw + sx) * bpp + k] : pad;
            }
}

static uint8_t *random_mask(int w, int h, int planes, int classes, uint64_t seed)
{
    uint8_t *m = malloc((size_t)planes * w * h);
    tt_rng rng = tt_rng_from(seed, 3, 4);
    for (size_t i = 0; i < (size_t)planes * w * h; i++)
        m[i] = planes > 1 ? (uint8_t)(tt_rng_uniform(&rng) < 0.3) : (uint8_t)tt_rng_below(&rng, (uint64_t)classes);
    return m;
}

static int count_files(const char *folder, const char *prefix)
{
    DIR *d = opendir(folder);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    if (d) closedir(d);
    return n;
}

/* Temporary files (tt_file_write_atomic's "<name>.tmp.<pid>.<n>") in folder. */
static int count_temporary(const char *folder)
{
    DIR *d = opendir(folder);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* Compares random crops of every item of a source with full decodes. */
static void check_random_crops(rp_source *src, tt_tilecache *cache, int trials, uint64_t seed)
{
    tt_rng rng = tt_rng_from(seed, 0, 0);
    int planes = tt_tilecache_planes(cache);
    uint8_t pad = src->kind == TT_MASK_CLASS_INDEX ? 255 : 0;
    int mismatches = 0;
    for (int i = 0; i < src->count; i++) {
        tt_image full;
        TH_OK(tt_image_load(src->paths[i], 0, &full));
        int fw = full.width, fh = full.height;
        for (int t = 0; t < trials; t++) {
            int w = 1 + (int)tt_rng_below(&rng, 300), h = 1 + (int)tt_rng_below(&rng, 300);
            int x0 = (int)tt_rng_range(&rng, -w - 5, fw + 5), y0 = (int)tt_rng_range(&rng, -h - 5, fh + 5);
            if (t == 0) x0 = y0 = 0;                        /* top-left corner */
            if (t == 1) { x0 = fw - w / 2; y0 = fh - h / 2; } /* bottom-right border */
            size_t n = (size_t)w * h;
            uint8_t *got = malloc(n * 3), *want = malloc(n * 3);
            uint8_t *gotm = malloc(n * planes), *wantm = malloc(n * planes);
            TH_OK(tt_tilecache_read_image(cache, i, x0, y0, w, h, got));
            ref_crop(full.pixels, fw, fh, 3, x0, y0, w, h, 0, want);
            mismatches += memcmp(got, want, n * 3) != 0;
            TH_OK(tt_tilecache_read_mask(cache, i, x0, y0, w, h, pad, gotm));
            for (int p = 0; p < planes; p++) {
                ref_crop(src->masks[i] + (size_t)p * fw * fh, fw, fh, 1, x0, y0, w, h, pad, wantm + p * n);
            }
            mismatches += memcmp(gotm, wantm, n * planes) != 0;
            free(got), free(want), free(gotm), free(wantm);
        }
        tt_image_free(&full);
    }
    printf("\n  %d items x %d crops: %d mismatching crops", src->count, trials, mismatches);
    CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_crops_equal_full_decode(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-a", dir);
    for (int kind = 0; kind < 2; kind++) {
        rp_source src;
        int classes = 4;
        rp_source_init(&src, classes, kind ? TT_MASK_MULTI_LABEL : TT_MASK_CLASS_INDEX);
        int planes = kind ? classes : 1;
        int sizes[3][2] = {{300, 200}, {517, 263}, {257, 513}};
        for (int i = 0; i < 3; i++) {
            int w = sizes[i][0], h = sizes[i][1];
            uint8_t *rgb = rp_make_rgb(w, h, (uint64_t)(i + 10 * kind));
            const char *ext = i == 0 ? "png" : i == 1 ? "jpg" : "tif";
            snprintf(path, sizeof path, "%s/k%d-img%d.%s", dir, kind, i, ext);
            CU_ASSERT_FATAL(i == 0 ? rp_write_png(path, w, h, rgb)
                            : i == 1 ? rp_write_jpg(path, w, h, rgb, 90)
                                     : rp_write_tiff(path, w, h, rgb, 0, 0, 0));
            uint8_t *mask = random_mask(w, h, planes, classes, (uint64_t)i);
            char name[64];
            snprintf(name, sizeof name, "img%d.%s", i, ext);
            rp_source_add(&src, name, path, w, h, mask);
            free(mask);
            free(rgb);
        }
        tt_tilecache_config cfg = {.dir = cdir};
        tt_tilecache *cache;
        TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
        check_random_crops(&src, cache, 40, 7 + kind);
        tt_tilecache_stats st;
        tt_tilecache_get_stats(cache, &st);
        CU_ASSERT_EQUAL(st.entries_built, 6); /* 3 images + 3 masks */
        CU_ASSERT_EQUAL(src.mask_calls, 3);   /* each mask asked for once */
        tt_tilecache_destroy(cache);
        rp_source_free(&src);
    }
    CU_ASSERT_EQUAL(count_temporary(cdir), 0);
}

static void test_rebuilt_when_source_changes(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-b", dir);
    snprintf(path, sizeof path, "%s/change.png", dir);
    int w = 90, h = 70;
    uint8_t *a = rp_make_rgb(w, h, 1), *b = rp_make_rgb(w, h, 2), *crop = malloc((size_t)w * h * 3);
    CU_ASSERT_FATAL(rp_write_png(path, w, h, a));
    struct timespec times[2] = {{0, UTIME_OMIT}, {900000000, 0}};
    CU_ASSERT_FATAL(utimensat(AT_FDCWD, path, times, 0) == 0);
    rp_source src;
    rp_source_init(&src, 3, TT_MASK_CLASS_INDEX);
    rp_source_add(&src, "change.png", path, w, h, NULL);
    tt_tilecache_config cfg = {.dir = cdir};
    tt_tilecache *cache;
    tt_tilecache_stats st;
    const char *file;
    char first[PATH_MAX];

    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, w, h, crop));
    CU_ASSERT(memcmp(crop, a, (size_t)w * h * 3) == 0);
    TH_OK(tt_tilecache_entry_paths(cache, 0, &file, NULL));
    snprintf(first, sizeof first, "%s", file);
    tt_tilecache_destroy(cache);

    /* unchanged source: the entry is reused, nothing rebuilt */
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, w, h, crop));
    TH_OK(tt_tilecache_read_mask(cache, 0, 0, 0, w, h, 255, crop));
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.entries_built, 0);
    tt_tilecache_destroy(cache);

    /* new pixels and a new mtime: a new entry with the new pixels */
    CU_ASSERT_FATAL(rp_write_png(path, w, h, b));
    times[1].tv_sec = 1000000000;
    CU_ASSERT_FATAL(utimensat(AT_FDCWD, path, times, 0) == 0);
    src.mask_keys[0]++; /* and a changed mask */
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, w, h, crop));
    CU_ASSERT(memcmp(crop, b, (size_t)w * h * 3) == 0);
    TH_OK(tt_tilecache_read_mask(cache, 0, 0, 0, w, h, 255, crop));
    TH_OK(tt_tilecache_entry_paths(cache, 0, &file, NULL));
    CU_ASSERT(strcmp(first, file) != 0);
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.entries_built, 2);
    tt_tilecache_destroy(cache);

    /* a corrupt entry (cut short by hand) is rebuilt, not read */
    CU_ASSERT_FATAL(truncate(first, 100) == 0);
    CU_ASSERT_FATAL(rp_write_png(path, w, h, a));
    times[1].tv_sec = 900000000; /* the first version again: same size, same mtime */
    CU_ASSERT_FATAL(utimensat(AT_FDCWD, path, times, 0) == 0);
    src.mask_keys[0]--;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, w, h, crop));
    CU_ASSERT(memcmp(crop, a, (size_t)w * h * 3) == 0);
    TH_OK(tt_tilecache_entry_paths(cache, 0, &file, NULL));
    CU_ASSERT_STRING_EQUAL(first, file);
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.entries_built, 1); /* the image; the mask entry was intact */
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
    free(a), free(b), free(crop);
}

static void test_tiled_tiff_read_directly(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-c", dir);
    rp_source src;
    rp_source_init(&src, 2, TT_MASK_CLASS_INDEX);
    int w = 211, h = 150;
    for (int k = 0; k < 2; k++) {
        uint8_t *rgb = rp_make_rgb(w, h, (uint64_t)(30 + k));
        snprintf(path, sizeof path, "%s/geo%d.tif", dir, k);
        CU_ASSERT_FATAL(rp_write_tiff(path, w, h, rgb, 64, 32, k)); /* contig, then planar */
        uint8_t *mask = random_mask(w, h, 1, 2, (uint64_t)k);
        rp_source_add(&src, k ? "geo1.tif" : "geo0.tif", path, w, h, mask);
        free(mask);
        free(rgb);
    }
    tt_tilecache_config cfg = {.dir = cdir};
    tt_tilecache *cache;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    check_random_crops(&src, cache, 30, 99);
    const char *file;
    TH_OK(tt_tilecache_entry_paths(cache, 1, &file, NULL));
    CU_ASSERT_STRING_EQUAL(file, src.paths[1]);
    tt_tilecache_stats st;
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.direct_inputs, 2);
    CU_ASSERT_EQUAL(st.entries_built, 2); /* the masks only */
    CU_ASSERT_EQUAL(count_files(cdir, "img-"), 0);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

/* A 16-bit grey tiled TIFF (as many GeoTIFF scenes are): read in place
 * through libtiff's RGBA tile conversion, equal to the whole-image decode. */
static void test_tiled_tiff_16bit(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-h", dir);
    snprintf(path, sizeof path, "%s/grey16.tif", dir);
    int w = 150, h = 90, tw = 48, th = 32;
    TIFF *tif = TIFFOpen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)tw);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)th);
    uint16_t tile[48 * 32];
    for (int ty = 0; ty < h; ty += th)
        for (int tx = 0; tx < w; tx += tw) {
            for (int r = 0; r < th; r++)
                for (int q = 0; q < tw; q++)
                    tile[r * tw + q] = (uint16_t)(((tx + q) * 401 + (ty + r) * 173) & 0xffff);
            CU_ASSERT_FATAL(TIFFWriteTile(tif, tile, (uint32_t)tx, (uint32_t)ty, 0, 0) >= 0);
        }
    TIFFClose(tif);
    rp_source src;
    rp_source_init(&src, 2, TT_MASK_CLASS_INDEX);
    uint8_t *mask = random_mask(w, h, 1, 2, 4);
    rp_source_add(&src, "grey16.tif", path, w, h, mask);
    free(mask);
    tt_tilecache_config cfg = {.dir = cdir};
    tt_tilecache *cache;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    check_random_crops(&src, cache, 30, 123);
    tt_tilecache_stats st;
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.direct_inputs, 1);
    /* not a constant image: the conversion kept the values */
    uint8_t px[2 * 3];
    TH_OK(tt_tilecache_read_image(cache, 0, 10, 10, 2, 1, px));
    CU_ASSERT(px[0] != px[3]);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

/* A 2048 x 2048 image: each crop decodes exactly the tiles under it. */
static void test_large_image_reads_only_its_tiles(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-d", dir);
    snprintf(path, sizeof path, "%s/big.tif", dir);
    int n = 2048;
    uint8_t *rgb = rp_make_rgb(n, n, 77);
    CU_ASSERT_FATAL(rp_write_tiff(path, n, n, rgb, 0, 0, 0)); /* stripped: goes through the cache */
    rp_source src;
    rp_source_init(&src, 2, TT_MASK_CLASS_INDEX);
    rp_source_add(&src, "big.tif", path, n, n, NULL);
    uint64_t tile_bytes = 256 * 256 * 3;
    tt_tilecache_config cfg = {.dir = cdir, .lru_bytes = 6 * (tile_bytes + 128)}; /* room for six tiles */
    tt_tilecache *cache;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    uint8_t *crop = malloc(600 * 600 * 3), *want = malloc(600 * 600 * 3);
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, 1, 1, crop)); /* build the entry */
    struct { int x0, y0, w, h, tiles; } cases[] = {
        {512, 512, 256, 256, 1}, {700, 300, 256, 256, 4}, {2000, 2000, 256, 256, 1},
        {100, 1000, 600, 10, 3}, {-100, -100, 256, 256, 1}, {1792, 0, 256, 512, 2},
        {3000, 0, 256, 256, 0},
    };
    tt_tilecache_stats st;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tt_tilecache_drop_tiles(cache);
        tt_tilecache_get_stats(cache, &st);
        uint64_t before = st.tile_reads;
        TH_OK(tt_tilecache_read_image(cache, 0, cases[k].x0, cases[k].y0, cases[k].w, cases[k].h, crop));
        tt_tilecache_get_stats(cache, &st);
        printf("\n  crop %dx%d at (%d, %d): %llu tile reads (expected %d)", cases[k].w, cases[k].h, cases[k].x0,
               cases[k].y0, (unsigned long long)(st.tile_reads - before), cases[k].tiles);
        CU_ASSERT_EQUAL(st.tile_reads - before, (uint64_t)cases[k].tiles);
        ref_crop(rgb, n, n, 3, cases[k].x0, cases[k].y0, cases[k].w, cases[k].h, 0, want);
        CU_ASSERT(memcmp(crop, want, (size_t)cases[k].w * cases[k].h * 3) == 0);
        /* the same crop again: served from the LRU */
        uint64_t reads = st.tile_reads;
        TH_OK(tt_tilecache_read_image(cache, 0, cases[k].x0, cases[k].y0, cases[k].w, cases[k].h, crop));
        tt_tilecache_get_stats(cache, &st);
        CU_ASSERT_EQUAL(st.tile_reads, reads);
    }

    /* many random crops: the LRU never holds more than its bound plus the
     * one tile being decoded */
    tt_rng rng = tt_rng_from(5, 5, 5);
    int bad = 0;
    for (int t = 0; t < 60; t++) {
        int x0 = (int)tt_rng_below(&rng, n), y0 = (int)tt_rng_below(&rng, n);
        TH_OK(tt_tilecache_read_image(cache, 0, x0, y0, 256, 256, crop));
        ref_crop(rgb, n, n, 3, x0, y0, 256, 256, 0, want);
        bad += memcmp(crop, want, 256 * 256 * 3) != 0;
    }
    tt_tilecache_get_stats(cache, &st);
    printf("\n  LRU: bound %llu, peak %llu, now %llu bytes; %llu reads, %llu hits",
           (unsigned long long)cfg.lru_bytes, (unsigned long long)st.lru_peak_bytes,
           (unsigned long long)st.lru_bytes, (unsigned long long)st.tile_reads, (unsigned long long)st.tile_hits);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(st.lru_peak_bytes <= cfg.lru_bytes + tile_bytes + 128);
    CU_ASSERT(st.lru_bytes <= cfg.lru_bytes);
    CU_ASSERT(st.tile_hits > 0);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
    free(rgb), free(crop), free(want);
}

static void test_foreground_counts(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-e", dir);
    int w = 300, h = 280, classes = 4;
    uint8_t *rgb = rp_make_rgb(w, h, 8);
    snprintf(path, sizeof path, "%s/fg.png", dir);
    CU_ASSERT_FATAL(rp_write_png(path, w, h, rgb));
    for (int kind = 0; kind < 2; kind++) {
        int planes = kind ? classes : 1;
        uint8_t *mask = calloc((size_t)planes * w * h, 1);
        uint64_t want[4] = {0};
        tt_rng rng = tt_rng_from(kind, 1, 1);
        for (int k = 0; k < 50; k++) { /* scattered pixels; class 3 absent */
            int x = (int)tt_rng_below(&rng, w), y = (int)tt_rng_below(&rng, h), c = (int)tt_rng_below(&rng, 3);
            if (!kind) c = c ? c : 1; /* class-index: 1..2 (0 is background) */
            uint8_t *m = mask + (size_t)(kind ? c : 0) * w * h + (size_t)y * w + x;
            if (*m) continue;
            *m = kind ? 1 : (uint8_t)c;
            want[c]++;
        }
        rp_source src;
        rp_source_init(&src, classes, kind ? TT_MASK_MULTI_LABEL : TT_MASK_CLASS_INDEX);
        rp_source_add(&src, "fg.png", path, w, h, mask);
        tt_tilecache_config cfg = {.dir = cdir};
        tt_tilecache *cache;
        TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
        uint64_t got[4];
        TH_OK(tt_tilecache_fg_counts(cache, 0, got));
        CU_ASSERT(memcmp(got, want, sizeof got) == 0);
        for (int c = 0; c < classes; c++)
            for (uint64_t u = 0; u < got[c]; u++) {
                int x, y;
                TH_OK(tt_tilecache_fg_pixel(cache, 0, c, u, &x, &y));
                uint8_t v = mask[(size_t)(kind ? c : 0) * w * h + (size_t)y * w + x];
                CU_ASSERT(kind ? v == 1 : v == c);
            }
        tt_tilecache_destroy(cache);
        rp_source_free(&src);
        free(mask);
    }
    free(rgb);
}

/* Two processes building the same entries at once both read correct pixels
 * and leave no temporary files. */
static void test_two_processes_share_a_cache(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-f", dir);
    rp_source src;
    rp_source_init(&src, 3, TT_MASK_CLASS_INDEX);
    for (int i = 0; i < 4; i++) {
        uint8_t *rgb = rp_make_rgb(400, 300, (uint64_t)(50 + i));
        snprintf(path, sizeof path, "%s/shared%d.png", dir, i);
        CU_ASSERT_FATAL(rp_write_png(path, 400, 300, rgb));
        free(rgb);
        uint8_t *mask = random_mask(400, 300, 1, 3, (uint64_t)i);
        char name[32];
        snprintf(name, sizeof name, "shared%d.png", i);
        rp_source_add(&src, name, path, 400, 300, mask);
        free(mask);
    }
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            tt_tilecache_config cfg = {.dir = cdir};
            tt_tilecache *cache;
            int bad = 0;
            if (tt_tilecache_create(&cfg, &src.source, &cache)) _exit(2);
            uint8_t *crop = malloc(400 * 300 * 3);
            for (int i = 0; i < 4; i++) {
                tt_image full;
                if (tt_tilecache_read_image(cache, i, 0, 0, 400, 300, crop) || tt_image_load(src.paths[i], 0, &full))
                    _exit(3);
                bad += memcmp(crop, full.pixels, 400 * 300 * 3) != 0;
                if (tt_tilecache_read_mask(cache, i, 0, 0, 400, 300, 255, crop)) _exit(4);
                bad += memcmp(crop, src.masks[i], 400 * 300) != 0;
                tt_image_free(&full);
            }
            _exit(bad ? 1 : 0);
        }
    }
    for (int k = 0; k < 2; k++) {
        int wstatus = -1;
        waitpid(kids[k], &wstatus, 0);
        CU_ASSERT(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    }
    CU_ASSERT_EQUAL(count_temporary(cdir), 0);
    CU_ASSERT_EQUAL(count_files(cdir, "img-"), 4);
    CU_ASSERT_EQUAL(count_files(cdir, "mask-"), 4);
    rp_source_free(&src);
}

/* Rewrites a cache entry with one byte of one tile changed, uncompressed,
 * its checksums kept: a bit flipped on disk that no decoder notices. */
static void flip_a_byte(const char *entry)
{
    static const TIFFFieldInfo sums_field = {65111, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_LONG,
                                             FIELD_CUSTOM, 1, 1, (char *)"TiletrainTileSums"};
    TIFFSetWarningHandler(NULL); /* the private tag is unknown to this handle */
    TIFF *in = TIFFOpen(entry, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    uint32_t w = 0, h = 0, tw = 0, th = 0, n = 0;
    uint16_t spp = 0, planar = 0, photometric = 0;
    const uint32_t *sums = NULL;
    TIFFGetField(in, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(in, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetField(in, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(in, TIFFTAG_TILELENGTH, &th);
    TIFFGetField(in, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetField(in, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetField(in, TIFFTAG_PHOTOMETRIC, &photometric);
    CU_ASSERT_FATAL(TIFFGetField(in, 65111, &n, &sums) && n == TIFFNumberOfTiles(in));
    char temp[PATH_MAX + 16];
    snprintf(temp, sizeof temp, "%s.flipped", entry);
    TIFF *out = TIFFOpen(temp, "w");
    TIFFMergeFieldInfo(out, &sums_field, 1);
    TIFFSetField(out, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(out, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(out, TIFFTAG_TILEWIDTH, tw);
    TIFFSetField(out, TIFFTAG_TILELENGTH, th);
    TIFFSetField(out, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(out, TIFFTAG_SAMPLESPERPIXEL, spp);
    TIFFSetField(out, TIFFTAG_PLANARCONFIG, planar);
    TIFFSetField(out, TIFFTAG_PHOTOMETRIC, photometric);
    if (spp > 1 && planar == PLANARCONFIG_SEPARATE) {
        uint16_t extra[8] = {0};
        TIFFSetField(out, TIFFTAG_EXTRASAMPLES, (uint16_t)(spp - 1), extra);
    }
    TIFFSetField(out, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
    TIFFSetField(out, 65111, n, sums);
    uint8_t *tile = malloc((size_t)TIFFTileSize(in));
    for (uint32_t t = 0; t < n; t++) {
        CU_ASSERT(TIFFReadEncodedTile(in, t, tile, TIFFTileSize(in)) > 0);
        if (t == 0) tile[5] ^= 0x10;
        CU_ASSERT(TIFFWriteEncodedTile(out, t, tile, TIFFTileSize(in)) > 0);
    }
    free(tile);
    TIFFClose(out);
    TIFFClose(in);
    CU_ASSERT_FATAL(rename(temp, entry) == 0);
}

static void count_warning(void *ctx, const char *message)
{
    int *seen = ctx;
    if (strstr(message, "deleted and built again")) (*seen)++;
    printf("\n  warning: %s", message);
}

/* A bit flipped in an uncompressed entry (the checksum) and compressed
 * bytes garbled (the decoder): the entry is rebuilt with a warning, the
 * crop is the source's, and the run goes on. */
static void test_spoiled_entries_rebuilt(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-spoiled", dir);
    snprintf(path, sizeof path, "%s/spoiled.png", dir);
    int w = 300, h = 200, classes = 3;
    uint8_t *rgb = rp_make_rgb(w, h, 41), *mask = random_mask(w, h, 1, classes, 5);
    uint8_t *got = malloc((size_t)w * h * 3);
    CU_ASSERT_FATAL(rp_write_png(path, w, h, rgb));
    rp_source src;
    rp_source_init(&src, classes, TT_MASK_CLASS_INDEX);
    rp_source_add(&src, "spoiled.png", path, w, h, mask);
    int warnings = 0;
    tt_tilecache_config cfg = {.dir = cdir, .warn = count_warning, .warn_ctx = &warnings};
    tt_tilecache *cache;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    const char *image_entry, *mask_entry;
    TH_OK(tt_tilecache_entry_paths(cache, 0, &image_entry, &mask_entry));
    char image_file[PATH_MAX], mask_file[PATH_MAX];
    snprintf(image_file, sizeof image_file, "%s", image_entry);
    snprintf(mask_file, sizeof mask_file, "%s", mask_entry);
    tt_tilecache_destroy(cache);

    flip_a_byte(image_file);
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    TH_OK(tt_tilecache_read_image(cache, 0, 0, 0, w, h, got));
    CU_ASSERT_EQUAL(memcmp(got, rgb, (size_t)w * h * 3), 0);
    tt_tilecache_stats st;
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.entries_spoiled, 1);
    CU_ASSERT_EQUAL(st.entries_built, 1);
    CU_ASSERT_EQUAL(warnings, 1);
    tt_tilecache_destroy(cache);

    /* garble the mask entry's compressed bytes past its header */
    int fd = open(mask_file, O_WRONLY);
    uint8_t junk[48];
    memset(junk, 0x5a, sizeof junk);
    CU_ASSERT(fd >= 0 && pwrite(fd, junk, sizeof junk, 400) == (ssize_t)sizeof junk);
    if (fd >= 0) close(fd);
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    uint64_t present[3];
    TH_OK(tt_tilecache_fg_counts(cache, 0, present));
    TH_OK(tt_tilecache_read_mask(cache, 0, 0, 0, w, h, 255, got));
    CU_ASSERT_EQUAL(memcmp(got, mask, (size_t)w * h), 0);
    uint64_t want[3] = {0, 0, 0};
    for (size_t i = 0; i < (size_t)w * h; i++) want[mask[i]]++;
    CU_ASSERT(present[1] == want[1] && present[2] == want[2]);
    tt_tilecache_get_stats(cache, &st);
    CU_ASSERT_EQUAL(st.entries_spoiled, 1);
    CU_ASSERT_EQUAL(warnings, 2);
    printf("\n  a flipped bit in an image entry and a garbled mask entry: %d warnings, "
           "both rebuilt, crops and counts the source's", warnings);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
    free(rgb), free(mask), free(got);
}

static void test_bad_inputs(void)
{
    char cdir[PATH_MAX], path[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache-g", dir);
    snprintf(path, sizeof path, "%s/nothere.png", dir);
    rp_source src;
    rp_source_init(&src, 2, TT_MASK_CLASS_INDEX);
    rp_source_add(&src, "nothere.png", path, 10, 10, NULL);
    tt_tilecache_config cfg = {.dir = cdir};
    tt_tilecache *cache;
    TH_OK(tt_tilecache_create(&cfg, &src.source, &cache));
    uint8_t px[3];
    tt_status s = tt_tilecache_read_image(cache, 0, 0, 0, 1, 1, px);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "nothere.png") != NULL);
    tt_status_free(s);
    s = tt_tilecache_read_image(cache, 5, 0, 0, 1, 1, px);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_tilecache_destroy(cache);
    rp_source_free(&src);
}

int main(void)
{
    if (!rd_tempdir_in(dir, sizeof dir, "pixels")) return 1;
    CU_TestInfo tests[] = {
        {"crops equal full decodes (borders included)", test_crops_equal_full_decode},
        {"rebuilt when the source changes", test_rebuilt_when_source_changes},
        {"tiled TIFF input read directly", test_tiled_tiff_read_directly},
        {"16-bit tiled TIFF read directly", test_tiled_tiff_16bit},
        {"2048x2048: crops read only their tiles; LRU bound", test_large_image_reads_only_its_tiles},
        {"foreground counts and pixels", test_foreground_counts},
        {"two processes share a cache", test_two_processes_share_a_cache},
        {"missing file and bad index", test_bad_inputs},
        {"spoiled entries rebuilt with a warning", test_spoiled_entries_rebuilt},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("tilecache", tests, TH_HOST);
    rd_rmtree(dir);
    return rc;
}
