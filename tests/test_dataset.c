/*
 * Data sets on disk: tiny folder and Kaggle-RLE (Clouds and Severstal)
 * data sets built in a scratch folder; item order, class order, mask planes
 * against hand-computed ones, and each kind of bad input on its own, with
 * and without skip_bad.
 */
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "harness.h"
#include "ref_data.h"

/* ---- fixtures ------------------------------------------------------------ */

/* folder: a.png 5x4 (gray mask), b.jpg 3x6 (palette mask), c.bmp 4x4 (gray mask) */
static const uint8_t mask_a[20] = {0, 0, 1, 1, 2, 0, 0, 1, 1, 2, 255, 255, 0, 0, 0, 2, 2, 2, 1, 0};
static const uint8_t mask_b[18] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 3, 3, 3, 0, 0, 0};
static const uint8_t mask_c[16] = {0};
static const uint8_t palette[12] = {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 0};
static const uint8_t palette_alpha[4] = {255, 255, 255, 0}; /* entry 3: black, transparent */

static char *make_folder(void)
{
    char *dir = rd_tempdir("folder");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *images = rd_subdir(dir, "images"), *masks = rd_subdir(dir, "masks");
    CU_ASSERT_FATAL(rd_write_image(images, "c.bmp", 4, 4));
    CU_ASSERT_FATAL(rd_write_image(images, "a.png", 5, 4));
    CU_ASSERT_FATAL(rd_write_image(images, "b.jpg", 3, 6));
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "a.png", 5, 4, mask_a));
    CU_ASSERT_FATAL(rd_write_palette_png(masks, "b.png", 3, 6, mask_b, palette, 4, palette_alpha));
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "c.png", 4, 4, mask_c));
    free(images);
    free(masks);
    return dir;
}

/* In DIR/SUB, writes NAME from bytes. */
static void put_bytes(const char *dir, const char *sub, const char *name, const void *data, size_t n)
{
    char path[8300];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    CU_ASSERT_FATAL(rd_write_bytes(path, name, data, n));
}

static const char *clouds_csv =
    "Image_Label,EncodedPixels\n"
    "img1.jpg_Flower,1 2\n"
    "img1.jpg_Fish,\n"
    "img2.jpg_Fish,3 2\n"
    "img2.jpg_Flower,\n"
    "img1.jpg_Gravel,5 1\n"
    "img2.jpg_Gravel,\n";

static const char *severstal_csv =
    "ImageId,ClassId,EncodedPixels\r\n"
    "s2.jpg,3,1 1\r\n"
    "\"s1.jpg\",1,\"2 2\"\r\n"
    "s1.jpg,3,\r\n";

/* A Kaggle data set: CSV text plus images (name, w, h) in train_images/. */
static char *make_kaggle(const char *csv, const char *const *names, const int *sizes, int count)
{
    char *dir = rd_tempdir("kaggle");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *images = rd_subdir(dir, "train_images");
    for (int i = 0; i < count; i++) CU_ASSERT_FATAL(rd_write_image(images, names[i], sizes[2 * i], sizes[2 * i + 1]));
    CU_ASSERT_FATAL(rd_write_text(dir, "train.csv", csv));
    free(images);
    return dir;
}

static const char *const clouds_names[] = {"img1.jpg", "img2.jpg"};
static const int clouds_sizes[] = {3, 2, 4, 3};
static const char *const severstal_names[] = {"s1.jpg", "s2.jpg"};
static const int severstal_sizes[] = {2, 2, 3, 1};

static char *make_clouds(const char *csv) { return make_kaggle(csv ? csv : clouds_csv, clouds_names, clouds_sizes, 2); }
static char *make_severstal(const char *csv)
{
    return make_kaggle(csv ? csv : severstal_csv, severstal_names, severstal_sizes, 2);
}

static tt_dataset *open_ok(const tt_dataset_options *opts)
{
    tt_dataset *ds = NULL;
    TH_OK(tt_dataset_open(opts, &ds));
    return ds;
}

/* Opening fails with `code` and a message holding part1 and part2; with
 * skip_bad it then succeeds (when `survivors` >= 0) keeping that many items
 * and reporting a problem for `item`. */
static void expect_problem(tt_dataset_options opts, tt_code code, const char *part1, const char *part2,
                           int survivors, const char *item)
{
    tt_dataset *ds = NULL;
    opts.skip_bad = 0;
    tt_status s = tt_dataset_open(&opts, &ds);
    CU_ASSERT_PTR_NULL(ds);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    const char *message = tt_status_message(s);
    int found = strstr(message, part1) && (!part2 || strstr(message, part2));
    printf("\n    -> %s", message);
    if (!found) printf("\n    (missing '%s' / '%s')", part1, part2 ? part2 : "");
    CU_ASSERT(found);
    tt_status_free(s);
    if (survivors < 0) return;
    opts.skip_bad = 1;
    TH_OK(tt_dataset_open(&opts, &ds));
    CU_ASSERT_EQUAL(tt_dataset_count(ds), survivors);
    int reported = 0;
    for (int p = 0; p < tt_dataset_problem_count(ds); p++)
        reported |= strcmp(tt_dataset_problem_at(ds, p)->item, item) == 0 &&
                    strstr(tt_dataset_problem_at(ds, p)->reason, part1) != NULL;
    CU_ASSERT(reported);
    for (int i = 0; i < tt_dataset_count(ds); i++) CU_ASSERT(strcmp(tt_dataset_item_name(ds, i), item) != 0);
    tt_dataset_destroy(ds);
}

/* ---- folder -------------------------------------------------------------- */

static void test_folder_items_and_masks(void)
{
    char *dir = make_folder();
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_format_of(ds), TT_DATASET_FOLDER);
    CU_ASSERT_EQUAL_FATAL(tt_dataset_count(ds), 3);
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 0), "a.png");
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 1), "b.jpg");
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 2), "c.bmp");
    CU_ASSERT_EQUAL(tt_dataset_classes(ds), 4); /* max index 3 (palette) + 1 */
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 3), "3");
    CU_ASSERT_EQUAL(tt_dataset_find(ds, "b"), 1);
    CU_ASSERT_EQUAL(tt_dataset_find(ds, "c.bmp"), 2);
    CU_ASSERT_EQUAL(tt_dataset_find(ds, "d"), -1);
    tt_item_source src = tt_dataset_source(ds);
    CU_ASSERT_EQUAL(src.count, 3);
    CU_ASSERT_EQUAL(src.classes, 4);
    CU_ASSERT_EQUAL(src.mask_kind, TT_MASK_CLASS_INDEX);
    CU_ASSERT_STRING_EQUAL(src.name(src.ctx, 0), "a.png");
    CU_ASSERT(strstr(src.image_path(src.ctx, 1), "/images/b.jpg") != NULL);
    uint8_t plane[20];
    TH_OK(src.mask(src.ctx, 0, 5, 4, plane));
    CU_ASSERT_EQUAL(memcmp(plane, mask_a, 20), 0);
    /* palette: indices come back, not colours; entry 3 differs from 0 only by tRNS alpha */
    TH_OK(src.mask(src.ctx, 1, 3, 6, plane));
    CU_ASSERT_EQUAL(memcmp(plane, mask_b, 18), 0);
    int w = 0, h = 0;
    tt_dataset_image_size(ds, 1, &w, &h);
    CU_ASSERT(w == 3 && h == 6);
    tt_status s = src.mask(src.ctx, 0, 4, 5, plane);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    /* the mask key follows the mask file */
    uint64_t key = src.mask_key(src.ctx, 2);
    CU_ASSERT_EQUAL(key, src.mask_key(src.ctx, 2));
    CU_ASSERT_NOT_EQUAL(key, src.mask_key(src.ctx, 0));
    uint8_t changed[16] = {1};
    put_bytes(dir, "masks", "c.png", "", 0);
    char masks[4096];
    snprintf(masks, sizeof masks, "%s/masks", dir);
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "c.png", 4, 4, changed));
    CU_ASSERT_NOT_EQUAL(key, src.mask_key(src.ctx, 2));
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

static void test_folder_class_list(void)
{
    char *dir = make_folder();
    const char *names[] = {"bg", "road", "car", "tree"};
    tt_dataset_options opts = {.dir = dir, .format = TT_DATASET_FOLDER, .classes = names, .class_count = 4};
    tt_dataset *ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_classes(ds), 4);
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 1), "road");
    tt_dataset_destroy(ds);
    /* mask b holds 3: with three classes it is neither a class nor 255 */
    opts.class_count = 3;
    expect_problem(opts, TT_ERR_FORMAT, "masks/b.png: pixel (0, 1) holds 3", "not a class", 2, "b.jpg");
    /* headers only: the open passes, mask() finds the value */
    opts.mask_headers_only = 1;
    ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_count(ds), 3);
    uint8_t plane[18];
    tt_status s = tt_dataset_mask(ds, 1, plane);
    CU_ASSERT(s && strstr(tt_status_message(s), "masks/b.png: pixel (0, 1) holds 3") != NULL);
    tt_status_free(s);
    TH_OK(tt_dataset_mask(ds, 0, plane));
    tt_dataset_destroy(ds);
    /* sizes are still checked from the headers */
    char masks[4096];
    snprintf(masks, sizeof masks, "%s/masks", dir);
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "a.png", 4, 5, mask_a));
    expect_problem(opts, TT_ERR_FORMAT, "masks/a.png: mask is 4 x 5 but its image", NULL, 2, "a.png");
    rd_remove(dir);
}

static void test_folder_missing_mask(void)
{
    char *dir = make_folder();
    char path[8300];
    snprintf(path, sizeof path, "%s/masks/c.png", dir);
    remove(path);
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "masks/c.png: file missing", NULL, 2, "c.bmp");
    rd_remove(dir);
}

static void test_folder_zero_byte_image(void)
{
    char *dir = make_folder();
    put_bytes(dir, "images", "a.png", "", 0);
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "images/a.png: empty file", NULL, 2, "a.png");
    rd_remove(dir);
}

static void test_folder_garbage_image(void)
{
    char *dir = make_folder();
    put_bytes(dir, "images", "c.bmp", "hello, not an image", 19);
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "images/c.bmp: not a PNG", NULL, 2, "c.bmp");
    /* right magic, broken header */
    put_bytes(dir, "images", "c.bmp", "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "images/c.bmp: unreadable PNG header", NULL, 2,
                   "c.bmp");
    rd_remove(dir);
}

static void test_folder_truncated_images(void)
{
    char *dir = make_folder();
    char images[4096];
    snprintf(images, sizeof images, "%s/images", dir);
    size_t size = 0;
    free(rd_read(images, "a.png", &size));
    CU_ASSERT_FATAL(rd_truncate(images, "a.png", size - 20));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "images/a.png: truncated PNG", NULL, 2, "a.png");
    free(rd_read(images, "b.jpg", &size));
    CU_ASSERT_FATAL(rd_truncate(images, "b.jpg", size / 2));
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = NULL;
    tt_status s = tt_dataset_open(&opts, &ds);
    CU_ASSERT(strstr(tt_status_message(s), "has 2 problems") != NULL);
    CU_ASSERT(strstr(tt_status_detail(s), "images/b.jpg: truncated JPEG") != NULL);
    CU_ASSERT(strstr(tt_status_detail(s), "images/a.png: truncated PNG") != NULL);
    tt_status_free(s);
    rd_remove(dir);
}

static void test_folder_enormous_header(void)
{
    char *dir = make_folder();
    char images[4096];
    snprintf(images, sizeof images, "%s/images", dir);
    /* 100000 x 100000 = 1e10 pixels: refused from the header alone (the file has no pixels) */
    CU_ASSERT_FATAL(rd_write_png_header_only(images, "a.png", 100000, 100000));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "images/a.png: PNG header claims 100000 x "
                   "100000", "refused before decoding", 2, "a.png");
    /* beyond stb's own limit of 2^24 per side, still named with the numbers */
    CU_ASSERT_FATAL(rd_write_png_header_only(images, "a.png", 1u << 30, 2));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "PNG header claims 1073741824 x 2", NULL, 2,
                   "a.png");
    /* a real image above a small limit */
    CU_ASSERT_FATAL(rd_write_image(images, "a.png", 5, 4));
    expect_problem((tt_dataset_options){.dir = dir, .max_pixels = 19}, TT_ERR_FORMAT, "images/a.png: PNG header "
                   "claims 5 x 4 = 20 pixels", "limit of 19", 2, "a.png");
    rd_remove(dir);
}

static void test_folder_mask_size(void)
{
    char *dir = make_folder();
    char masks[4096];
    snprintf(masks, sizeof masks, "%s/masks", dir);
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "a.png", 4, 5, mask_a));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "masks/a.png: mask is 4 x 5 but its image",
                   "is 5 x 4", 2, "a.png");
    rd_remove(dir);
}

static void test_folder_mask_kinds(void)
{
    char *dir = make_folder();
    char masks[4096];
    snprintf(masks, sizeof masks, "%s/masks", dir);
    /* an RGB mask is refused with advice */
    CU_ASSERT_FATAL(rd_write_image(masks, "c.png", 4, 4));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "masks/c.png: mask PNG has colour type 2",
                   "grayscale or palette", 2, "c.bmp");
    /* a palette where two entries share a colour cannot give indices back */
    const uint8_t twins[9] = {10, 20, 30, 10, 20, 30, 0, 0, 0};
    uint8_t plane[16] = {0, 1, 2, 2};
    CU_ASSERT_FATAL(rd_write_palette_png(masks, "c.png", 4, 4, plane, twins, 3, NULL));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "palette entries 0 and 1 have the same colour",
                   NULL, 2, "c.bmp");
    /* a palette without duplicates: indices */
    const uint8_t distinct[9] = {10, 20, 30, 10, 20, 31, 0, 0, 0};
    CU_ASSERT_FATAL(rd_write_palette_png(masks, "c.png", 4, 4, plane, distinct, 3, NULL));
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = open_ok(&opts);
    uint8_t got[16];
    TH_OK(tt_dataset_mask(ds, 2, got));
    CU_ASSERT_EQUAL(memcmp(got, plane, 16), 0);
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

static void test_folder_orphans_and_skip_bad(void)
{
    char *dir = make_folder();
    char masks[4096];
    snprintf(masks, sizeof masks, "%s/masks", dir);
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "zz.png", 4, 4, mask_c));
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "masks/zz.png: mask without an image", NULL, 3,
                   "zz.png");
    char images[4096];
    snprintf(images, sizeof images, "%s/images", dir);
    /* a.png and a.b.png are different names; a.png and a.jpg are not */
    CU_ASSERT_FATAL(rd_write_image(images, "a.b.png", 2, 2));
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "a.b.png", 2, 2, mask_c));
    CU_ASSERT_FATAL(rd_write_image(images, "c.jpg", 4, 4));
    tt_dataset *ds = NULL;
    tt_status s = tt_dataset_open(&(tt_dataset_options){.dir = dir}, &ds);
    CU_ASSERT(strstr(tt_status_message(s), "has 2 problems") != NULL);
    CU_ASSERT(strstr(tt_status_detail(s), "images/c.jpg: another image has the same name (c.bmp)") != NULL);
    CU_ASSERT(strstr(tt_status_detail(s), "a.b") == NULL);
    tt_status_free(s);
    ds = open_ok(&(tt_dataset_options){.dir = dir, .skip_bad = 1});
    CU_ASSERT_EQUAL(tt_dataset_count(ds), 3); /* a.b.png, a.png, b.jpg */
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 0), "a.b.png");
    tt_dataset_destroy(ds);
    char path[8300];
    snprintf(path, sizeof path, "%s/a.b.png", images);
    remove(path);
    snprintf(path, sizeof path, "%s/a.b.png", masks);
    remove(path);
    snprintf(path, sizeof path, "%s/c.jpg", images);
    remove(path);
    /* two bad items: both skipped, counted and reported; the third stays */
    put_bytes(dir, "images", "a.png", "", 0);
    put_bytes(dir, "masks", "b.png", "junk", 4);
    tt_dataset_options opts = {.dir = dir, .skip_bad = 1};
    ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_count(ds), 1);
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 0), "c.bmp");
    CU_ASSERT_EQUAL_FATAL(tt_dataset_problem_count(ds), 3);
    CU_ASSERT_STRING_EQUAL(tt_dataset_problem_at(ds, 0)->item, "a.png");
    CU_ASSERT_STRING_EQUAL(tt_dataset_problem_at(ds, 1)->item, "b.jpg");
    CU_ASSERT(strstr(tt_dataset_problem_at(ds, 1)->reason, "masks/b.png: not a PNG") != NULL);
    for (int p = 0; p < 3; p++) printf("\n    skipped %s: %s", tt_dataset_problem_at(ds, p)->item,
                                       tt_dataset_problem_at(ds, p)->reason);
    tt_dataset_destroy(ds);
    /* nothing usable left is an error even with skip_bad */
    put_bytes(dir, "images", "c.bmp", "", 0);
    ds = NULL;
    s = tt_dataset_open(&opts, &ds);
    CU_ASSERT(strstr(tt_status_message(s), "no usable items") != NULL);
    tt_status_free(s);
    rd_remove(dir);
}

static void test_folder_tiff(void)
{
    char *dir = make_folder();
    char images[4096], masks[4096];
    snprintf(images, sizeof images, "%s/images", dir);
    snprintf(masks, sizeof masks, "%s/masks", dir);
    CU_ASSERT_FATAL(rd_write_tiff(images, "d.tif", 6, 2));
    uint8_t plane[12] = {0, 1, 1, 0, 2, 2, 255, 0, 0, 0, 1, 1};
    CU_ASSERT_FATAL(rd_write_gray_png(masks, "d.png", 6, 2, plane));
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = open_ok(&opts);
    CU_ASSERT_EQUAL_FATAL(tt_dataset_count(ds), 4);
    int w = 0, h = 0;
    tt_dataset_image_size(ds, 3, &w, &h);
    CU_ASSERT(w == 6 && h == 2);
    uint8_t got[12];
    TH_OK(tt_dataset_mask(ds, 3, got));
    CU_ASSERT_EQUAL(memcmp(got, plane, 12), 0);
    tt_dataset_destroy(ds);
    /* a TIFF cut after its header's first bytes */
    CU_ASSERT_FATAL(rd_truncate(images, "d.tif", 6));
    expect_problem(opts, TT_ERR_FORMAT, "images/d.tif: unreadable TIFF header", NULL, 3, "d.tif");
    rd_remove(dir);
}

static void test_format_detection(void)
{
    char *dir = rd_tempdir("empty");
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = NULL;
    tt_status s = tt_dataset_open(&opts, &ds);
    CU_ASSERT(strstr(tt_status_message(s), "cannot tell the format") != NULL);
    tt_status_free(s);
    opts.dir = "/nonexistent/tt-data";
    s = tt_dataset_open(&opts, &ds);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    tt_status_free(s);
    tt_dataset_format f;
    TH_OK(tt_dataset_format_parse("kaggle-rle", &f));
    CU_ASSERT_EQUAL(f, TT_DATASET_KAGGLE_RLE);
    s = tt_dataset_format_parse("coco", &f);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    rd_remove(dir);
}

/* ---- kaggle-rle ---------------------------------------------------------- */

static void test_clouds(void)
{
    char *dir = make_clouds(NULL);
    tt_dataset_options opts = {.dir = dir};
    tt_dataset *ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_format_of(ds), TT_DATASET_KAGGLE_RLE);
    CU_ASSERT_EQUAL_FATAL(tt_dataset_count(ds), 2);
    CU_ASSERT_EQUAL_FATAL(tt_dataset_classes(ds), 3);
    /* order of first appearance */
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 0), "Flower");
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 1), "Fish");
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 2), "Gravel");
    tt_item_source src = tt_dataset_source(ds);
    CU_ASSERT_EQUAL(src.mask_kind, TT_MASK_MULTI_LABEL);
    /* img1 is 3 wide, 2 high: Flower "1 2" = pixels (0,0), (1,0); Gravel "5 1" = (row 0, col 2) */
    uint8_t planes[3 * 12];
    TH_OK(src.mask(src.ctx, 0, 3, 2, planes));
    const uint8_t want1[18] = {1, 0, 0, 1, 0, 0, /* Fish */ 0, 0, 0, 0, 0, 0, /* Gravel */ 0, 0, 1, 0, 0, 0};
    CU_ASSERT_EQUAL(memcmp(planes, want1, 18), 0);
    /* img2 is 4 x 3: Fish "3 2" = pixel 3 (row 2, col 0) and pixel 4 (row 0, col 1) */
    TH_OK(src.mask(src.ctx, 1, 4, 3, planes));
    uint8_t want2[36] = {0};
    want2[12 + 0 * 4 + 1] = 1;
    want2[12 + 2 * 4 + 0] = 1;
    CU_ASSERT_EQUAL(memcmp(planes, want2, 36), 0);
    CU_ASSERT_NOT_EQUAL(src.mask_key(src.ctx, 0), src.mask_key(src.ctx, 1));
    uint64_t key = src.mask_key(src.ctx, 0);
    tt_dataset_destroy(ds);
    /* the same item with another RLE gets another key */
    char *csv = strdup(clouds_csv);
    *strstr(csv, "5 1") = '4';
    rd_write_text(dir, "train.csv", csv);
    ds = open_ok(&opts);
    src = tt_dataset_source(ds);
    CU_ASSERT_NOT_EQUAL(key, src.mask_key(src.ctx, 0));
    tt_dataset_destroy(ds);
    free(csv);
    rd_remove(dir);
}

static void test_severstal_and_class_list(void)
{
    char *dir = make_severstal(NULL);
    tt_dataset_options opts = {.dir = dir, .format = TT_DATASET_KAGGLE_RLE};
    tt_dataset *ds = open_ok(&opts);
    CU_ASSERT_EQUAL_FATAL(tt_dataset_classes(ds), 2);
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 0), "3");
    CU_ASSERT_STRING_EQUAL(tt_dataset_class_name(ds, 1), "1");
    CU_ASSERT_STRING_EQUAL(tt_dataset_item_name(ds, 0), "s1.jpg");
    uint8_t planes[4 * 4];
    TH_OK(tt_dataset_mask(ds, 0, planes));
    /* s1 is 2 x 2: class 1 "2 2" = pixel 2 (row 1, col 0), pixel 3 (row 0, col 1) */
    const uint8_t want[8] = {0, 0, 0, 0, /* class 1 */ 0, 1, 1, 0};
    CU_ASSERT_EQUAL(memcmp(planes, want, 8), 0);
    tt_dataset_destroy(ds);
    /* a class list fixes the channel order */
    const char *names[] = {"1", "2", "3", "4"};
    opts.classes = names;
    opts.class_count = 4;
    ds = open_ok(&opts);
    CU_ASSERT_EQUAL(tt_dataset_classes(ds), 4);
    TH_OK(tt_dataset_mask(ds, 0, planes));
    const uint8_t want4[16] = {0, 1, 1, 0};
    CU_ASSERT_EQUAL(memcmp(planes, want4, 16), 0);
    TH_OK(tt_dataset_mask(ds, 1, planes)); /* s2 3 x 1: class 3 "1 1" */
    const uint8_t want_s2[12] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    CU_ASSERT_EQUAL(memcmp(planes, want_s2, 12), 0);
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

static void test_csv_wrong_header(void)
{
    char *dir = make_severstal("ImageId,Class,EncodedPixels\ns1.jpg,1,\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:1: unknown header", "Severstal", -1,
                   NULL);
    rd_remove(dir);
}

static void test_csv_unknown_class(void)
{
    char *dir = make_severstal("ImageId,ClassId,EncodedPixels\ns2.jpg,5,1 1\ns1.jpg,1,2 2\n");
    const char *names[] = {"1", "3"};
    expect_problem((tt_dataset_options){.dir = dir, .classes = names, .class_count = 2}, TT_ERR_FORMAT,
                   "train.csv:2: image s2.jpg: unknown class '5'", NULL, 1, "s2.jpg");
    rd_remove(dir);
}

static void test_csv_duplicated_row(void)
{
    char *dir = make_clouds("Image_Label,EncodedPixels\nimg1.jpg_Fish,1 1\nimg2.jpg_Fish,\n"
                            "img1.jpg_Fish,2 1\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:4: duplicated row",
                   "already has line 2", 1, "img1.jpg");
    rd_remove(dir);
}

static void test_csv_listed_but_absent(void)
{
    char *dir = make_clouds("Image_Label,EncodedPixels\nimg1.jpg_Fish,1 1\nimg2.jpg_Fish,\nimg9.jpg_Fish,\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:4: image img9.jpg is listed but "
                   "not in", NULL, 2, "img9.jpg");
    rd_remove(dir);
}

static void test_csv_present_but_not_listed(void)
{
    char *dir = make_severstal("ImageId,ClassId,EncodedPixels\ns1.jpg,1,1 1\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train_images/s2.jpg: image not listed", NULL,
                   1, "s2.jpg");
    /* unless unlisted images are taken as empty */
    tt_dataset *ds = open_ok(&(tt_dataset_options){.dir = dir, .unlisted_empty = 1});
    CU_ASSERT_EQUAL_FATAL(tt_dataset_count(ds), 2);
    uint8_t plane[3] = {7, 7, 7};
    TH_OK(tt_dataset_mask(ds, 1, plane));
    CU_ASSERT(plane[0] == 0 && plane[1] == 0 && plane[2] == 0);
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

static void test_csv_bad_rle(void)
{
    /* s2 is 3 x 1: a run of 5 pixels runs past its 3 */
    char *dir = make_severstal("ImageId,ClassId,EncodedPixels\ns1.jpg,1,1 1\ns2.jpg,1,2 5\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:3: image s2.jpg class 1: RLE run 1",
                   "past the", 1, "s2.jpg");
    rd_write_text(dir, "train.csv", "ImageId,ClassId,EncodedPixels\ns1.jpg,1,1 1\ns2.jpg,1,2 x\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:3: image s2.jpg class 1: RLE token 2",
                   "not a number", 1, "s2.jpg");
    rd_remove(dir);
}

static void test_csv_bad_rows(void)
{
    char *dir = make_severstal("ImageId,ClassId,EncodedPixels\ns1.jpg,1,1 1\ns2.jpg,1\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:3: 2 fields, expected 3", NULL, 1,
                   "s2.jpg");
    rd_write_text(dir, "train.csv", "ImageId,ClassId,EncodedPixels\ns1.jpg,1,\"1 1\ns2.jpg,1,\n");
    expect_problem((tt_dataset_options){.dir = dir}, TT_ERR_FORMAT, "train.csv:2: quoted field never closed", NULL,
                   -1, NULL);
    rd_write_text(dir, "train.csv", "ImageId,ClassId,EncodedPixels\ns1.jpg,1,\n../s2.jpg,1,\n");
    expect_problem((tt_dataset_options){.dir = dir, .unlisted_empty = 1}, TT_ERR_FORMAT, "train.csv:3: image "
                   "'../s2.jpg' is not a plain file name", NULL, 2, "../s2.jpg");
    char *clouds = make_clouds("Image_Label,EncodedPixels\nimg1.jpg_Fish,\nimg2.jpg,\n");
    expect_problem((tt_dataset_options){.dir = clouds}, TT_ERR_FORMAT, "train.csv:3: Image_Label 'img2.jpg' is not "
                   "FILE_CLASS", NULL, 1, "img2.jpg");
    rd_remove(clouds);
    rd_remove(dir);
}

static void test_csv_missing_paths(void)
{
    char *dir = make_clouds(NULL);
    expect_problem((tt_dataset_options){.dir = dir, .images_dir = "/nonexistent/tt-images"}, TT_ERR_IO,
                   "cannot read the images folder /nonexistent/tt-images", NULL, -1, NULL);
    expect_problem((tt_dataset_options){.dir = dir, .csv_path = "/nonexistent/tt.csv"}, TT_ERR_IO,
                   "cannot open CSV /nonexistent/tt.csv", NULL, -1, NULL);
    rd_remove(dir);
}

static void test_csv_other_paths(void)
{
    char *dir = make_clouds(NULL);
    char csv[4096], images[4096], moved_csv[4096], moved_images[4096];
    snprintf(csv, sizeof csv, "%s/train.csv", dir);
    snprintf(images, sizeof images, "%s/train_images", dir);
    snprintf(moved_csv, sizeof moved_csv, "%s/labels.csv", dir);
    snprintf(moved_images, sizeof moved_images, "%s/pictures", dir);
    CU_ASSERT_FATAL(rename(csv, moved_csv) == 0 && rename(images, moved_images) == 0);
    tt_dataset *ds = open_ok(&(tt_dataset_options){.dir = dir, .csv_path = moved_csv, .images_dir = moved_images});
    CU_ASSERT_EQUAL(tt_dataset_count(ds), 2);
    CU_ASSERT(strstr(tt_dataset_image_path(ds, 0), "/pictures/img1.jpg") != NULL);
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"folder: items, classes, masks, palette indices", test_folder_items_and_masks},
        {"folder: class list, values out of range", test_folder_class_list},
        {"folder: missing mask", test_folder_missing_mask},
        {"folder: zero-byte image", test_folder_zero_byte_image},
        {"folder: garbage image", test_folder_garbage_image},
        {"folder: truncated PNG and JPEG", test_folder_truncated_images},
        {"folder: enormous header refused", test_folder_enormous_header},
        {"folder: mask size differs", test_folder_mask_size},
        {"folder: RGB and ambiguous palette masks", test_folder_mask_kinds},
        {"folder: orphan masks, skip_bad", test_folder_orphans_and_skip_bad},
        {"folder: TIFF images", test_folder_tiff},
        {"format detection and names", test_format_detection},
        {"clouds: first-appearance classes, planes", test_clouds},
        {"severstal: CRLF, quotes, class list", test_severstal_and_class_list},
        {"csv: wrong header", test_csv_wrong_header},
        {"csv: unknown class", test_csv_unknown_class},
        {"csv: duplicated row", test_csv_duplicated_row},
        {"csv: listed but absent", test_csv_listed_but_absent},
        {"csv: present but not listed", test_csv_present_but_not_listed},
        {"csv: bad RLE with file and line", test_csv_bad_rle},
        {"csv: bad rows", test_csv_bad_rows},
        {"csv: missing CSV or images folder", test_csv_missing_paths},
        {"csv: other paths", test_csv_other_paths},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("dataset", tests, TH_HOST);
}
