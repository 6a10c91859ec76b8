/*
 * The folder format: DIR/images/NAME.{png,jpg,jpeg,bmp,tif,tiff} and
 * DIR/masks/NAME.png holding one 8-bit class index per pixel (grayscale or
 * palette PNG), 255 = ignore.  Images and masks are matched by their exact
 * stem; every mask is decoded at open (sizes, values, class count) unless
 * the caller asked for header-only checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "data/dataset_internal.h"
#include "data/dataset_probe.h"
#include "data/image.h"

/* An item's format_data: the path of its mask (DIR/masks/STEM.png). */
static const char *mask_path_of(const tt_ds_item *item) { return item->format_data; }

static tt_status folder_oom(void)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "opening a folder data set: out of host memory");
}

/* Reads a folder mask and checks its size against the item's image and its
 * values against the classes (classes_known: 0 while they are counted). */
static tt_status read_folder_mask(const tt_dataset *ds, const tt_ds_item *item, int width, int height,
                                  int classes_known, uint8_t **plane, int *max_value)
{
    tt_status status = NULL;
    unsigned char *data = NULL;
    size_t size = 0;
    int w = 0, h = 0;
    *plane = NULL;
    const char *mask_path = mask_path_of(item);
    TT_CHECK(tt_probe_read_file(mask_path, &data, &size));
    TT_CHECK(tt_probe_mask_png(data, size, mask_path, ds->max_pixels, &w, &h, plane));
    if (w != width || h != height) {
        status = tt_error_new(TT_ERR_FORMAT, "%s: mask is %d x %d but its image %s is %d x %d",
                              mask_path, w, h, item->image_path, width, height);
        goto cleanup;
    }
    int max = -1;
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
        int v = (*plane)[i];
        if (v == 255) continue;
        if (classes_known && v >= ds->classes) {
            status = tt_error_new(TT_ERR_FORMAT, "%s: pixel (%zu, %zu) holds %d, not a class (0..%d) "
                                  "nor 255 (ignore); check the class list", mask_path,
                                  i % (size_t)w, i / (size_t)w, v, ds->classes - 1);
            goto cleanup;
        }
        if (v > max) max = v;
    }
    if (max_value) *max_value = max;
cleanup:
    free(data);
    if (status) {
        free(*plane);
        *plane = NULL;
    }
    return status;
}

/* Hash of a file's path, size and mtime (0-size/mtime when it is gone). */
static uint64_t file_key(const char *path)
{
    struct stat st;
    uint64_t key = tt_hash_bytes(TT_HASH_INIT, path, strlen(path));
    if (stat(path, &st) == 0) {
        int64_t fields[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
        key = tt_hash_bytes(key, fields, sizeof fields);
    }
    return key;
}

/* A file name's stem (the name without its last extension), for matching
 * images to masks. */
typedef struct stem_ref {
    const char *name;
    size_t length;
    int index;
} stem_ref;

static stem_ref stem_of(const char *name, int index)
{
    const char *dot = strrchr(name, '.');
    return (stem_ref){name, dot ? (size_t)(dot - name) : strlen(name), index};
}

static int compare_stems(const void *a, const void *b)
{
    const stem_ref *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->length < y->length ? x->length : y->length);
    if (c) return c;
    return x->length < y->length ? -1 : x->length > y->length;
}

/* Probes the item's image and reads its mask (values checked only once the
 * classes are known); *max_value receives the largest class value. */
static tt_status check_folder_item(tt_dataset *ds, int index, int *max_value)
{
    TT_TRY(tt_ds_probe_item(ds, index));
    if (ds->items[index].bad) return NULL;
    uint8_t *plane = NULL;
    int item_max = -1;
    const tt_ds_item *item = &ds->items[index];
    if (ds->mask_headers_only && ds->classes_given) {
        tt_image_header header;
        const char *mask_path = mask_path_of(item);
        tt_status problem = tt_probe_image(mask_path, ds->max_pixels, &header);
        if (!problem && strcmp(header.kind, "PNG") != 0)
            problem = tt_error_new(TT_ERR_FORMAT, "%s: a mask must be a PNG, this is a %s", mask_path,
                                   header.kind);
        if (!problem && (header.width != item->width || header.height != item->height))
            problem = tt_error_new(TT_ERR_FORMAT, "%s: mask is %d x %d but its image %s is %d x %d",
                                   mask_path, header.width, header.height, item->image_path,
                                   item->width, item->height);
        return problem ? tt_ds_problem_status(ds, index, item->name, problem) : NULL;
    }
    tt_status problem = read_folder_mask(ds, item, item->width, item->height, ds->classes_given, &plane,
                                         &item_max);
    free(plane);
    if (problem) return tt_ds_problem_status(ds, index, item->name, problem);
    if (item_max > *max_value) *max_value = item_max;
    return NULL;
}

static tt_status open_folder(tt_dataset *ds, const tt_dataset_options *opts)
{
    tt_status status = NULL;
    char **images = NULL, **masks = NULL;
    int image_count = 0, mask_count = 0, max_value = -1;
    stem_ref *stems = NULL;
    (void)opts;
    TT_CHECK(tt_image_list_dir(ds->images_dir, &images, &image_count));
    TT_CHECK(tt_image_list_dir(ds->masks_dir, &masks, &mask_count));
    stems = tt_malloc(sizeof *stems * (size_t)(image_count ? image_count : 1));
    if (!stems) {
        status = folder_oom();
        goto cleanup;
    }
    for (int i = 0; i < image_count; i++) {
        char *path = tt_ds_join(ds->images_dir, images[i]);
        int index = -1;
        status = path ? tt_ds_add_item(ds, images[i], path, &index) : folder_oom();
        free(path);
        if (status) goto cleanup;
        tt_ds_item *item = &ds->items[index];
        stems[index] = stem_of(item->name, index);
        char *mask_path = tt_malloc(strlen(ds->masks_dir) + stems[index].length + 6);
        if (!mask_path) {
            status = folder_oom();
            goto cleanup;
        }
        sprintf(mask_path, "%s/%.*s.png", ds->masks_dir, (int)stems[index].length, item->name);
        item->format_data = mask_path;
    }
    /* two images with one stem (a.png, a.jpg) would share a mask */
    qsort(stems, (size_t)ds->count, sizeof *stems, compare_stems);
    for (int i = 1; i < ds->count; i++)
        if (compare_stems(&stems[i - 1], &stems[i]) == 0) {
            ds->items[stems[i - 1].index].bad = 1;
            TT_CHECK(tt_ds_problem_status(ds, stems[i].index, stems[i].name,
                     tt_error_new(TT_ERR_FORMAT, "%s/%s: another image has the same name (%s); each mask "
                                  "belongs to one image", ds->images_dir, stems[i].name, stems[i - 1].name)));
        }
    for (int i = 0; i < ds->count; i++)
        if (!ds->items[i].bad) TT_CHECK(check_folder_item(ds, i, &max_value));
    /* masks without an image */
    for (int m = 0; m < mask_count; m++) {
        stem_ref key = stem_of(masks[m], -1);
        const char *dot = masks[m] + key.length;
        if (strcmp(dot, ".png") != 0 ||
            !bsearch(&key, stems, (size_t)ds->count, sizeof *stems, compare_stems))
            TT_CHECK(tt_ds_problem(ds, masks[m], "%s/%s: %s", ds->masks_dir, masks[m],
                                   strcmp(dot, ".png") ? "masks are .png files; this one is not read"
                                                       : "mask without an image"));
    }
    if (!ds->classes_given) {
        int classes = max_value < 1 ? 1 : max_value + 1, index = 0;
        for (int c = 0; c < classes; c++) {
            char name[16];
            snprintf(name, sizeof name, "%d", c);
            TT_CHECK(tt_ds_add_class(ds, name, &index));
        }
    }
cleanup:
    free(stems);
    tt_image_free_names(images, image_count);
    tt_image_free_names(masks, mask_count);
    return status;
}

static tt_status folder_mask(const tt_dataset *ds, int index, uint8_t *planes)
{
    const tt_ds_item *item = &ds->items[index];
    uint8_t *plane = NULL;
    TT_TRY(read_folder_mask(ds, item, item->width, item->height, 1, &plane, NULL));
    memcpy(planes, plane, (size_t)item->width * (size_t)item->height);
    free(plane);
    return NULL;
}

/* Masks may change on disk after opening: look again each time. */
static uint64_t folder_mask_key(const tt_dataset *ds, int index)
{
    return file_key(mask_path_of(&ds->items[index]));
}

static int detect_folder(const tt_dataset *ds, const tt_dataset_options *opts)
{
    (void)ds;
    char *images = tt_ds_join(opts->dir, "images"), *masks = tt_ds_join(opts->dir, "masks");
    int found = images && masks && tt_ds_is_dir(images) && tt_ds_is_dir(masks);
    free(images);
    free(masks);
    return found || (opts->images_dir && opts->masks_dir);
}

const tt_ds_format tt_ds_folder_format = {
    .id = TT_DATASET_FOLDER,
    .name = "folder",
    .aliases = "",
    .expects = "images/ and masks/",
    .images = "images",
    .kind = TT_MASK_CLASS_INDEX,
    .detect = detect_folder,
    .open = open_folder,
    .mask = folder_mask,
    .mask_key = folder_mask_key,
    .free_item = free,
};
