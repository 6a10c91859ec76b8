/*
 * Data sets: the parts every format shares (options, the format table,
 * sorting, problems, the tt_item_source seam).  The builders the formats
 * use are in dataset_items.c; the folder format is in dataset_folder.c,
 * the Kaggle CSV formats in dataset_rle.c.  This file reaches a format
 * only through its row in `formats`.
 */
#include "data/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "data/dataset_internal.h"
#include "data/dataset_probe.h"
#include "data/raster_set.h"

/* One row per format; adding a format is one file and one row here. */
static const tt_ds_format *const formats[] = {&tt_ds_folder_format, &tt_ds_kaggle_format};
#define FORMAT_COUNT ((int)(sizeof formats / sizeof formats[0]))

static tt_status oom(void)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "opening a data set: out of host memory");
}

static const tt_ds_format *format_of(tt_dataset_format id)
{
    for (int f = 0; f < FORMAT_COUNT; f++)
        if (formats[f]->id == id) return formats[f];
    return NULL;
}

const char *tt_dataset_format_name(tt_dataset_format format)
{
    if (format == TT_DATASET_AUTO) return "auto";
    if (format == TT_DATASET_RASTER) return "raster";
    const tt_ds_format *row = format_of(format);
    return row ? row->name : "unknown";
}

/* Whether `name` is one of the space-separated words of `list`. */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t word = strcspn(p, " ");
        if (word == n && n && strncmp(p, name, n) == 0) return 1;
        p += word;
        p += strspn(p, " ");
    }
    return 0;
}

tt_status tt_dataset_format_parse(const char *name, tt_dataset_format *format)
{
    if (strcmp(name, "auto") == 0) {
        *format = TT_DATASET_AUTO;
        return NULL;
    }
    if (strcmp(name, "raster") == 0) {
        *format = TT_DATASET_RASTER;
        return NULL;
    }
    for (int f = 0; f < FORMAT_COUNT; f++)
        if (strcmp(name, formats[f]->name) == 0 || in_list(formats[f]->aliases, name)) {
            *format = formats[f]->id;
            return NULL;
        }
    char names[256] = "auto";
    for (int f = 0; f < FORMAT_COUNT; f++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 ", ", formats[f]->name);
    snprintf(names + strlen(names), sizeof names - strlen(names), " or raster");
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown data format '%s'; use %s", name, names);
}

static int compare_items(const void *a, const void *b)
{
    return strcmp(((const tt_ds_item *)a)->name, ((const tt_ds_item *)b)->name);
}

/* The format whose detect() is the most confident, or an error listing
 * what each format looks for. */
static tt_status detect(const tt_dataset *ds, const tt_dataset_options *opts, const tt_ds_format **out)
{
    int best = 0;
    for (int f = 0; f < FORMAT_COUNT; f++) {
        int score = formats[f]->detect(ds, opts);
        if (score > best) {
            best = score;
            *out = formats[f];
        }
    }
    if (best) return NULL;
    char expected[512] = "";
    for (int f = 0; f < FORMAT_COUNT; f++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s%s (%s)",
                 f == 0 ? "" : " or ", formats[f]->expects, formats[f]->name);
    return tt_error_new(TT_ERR_FORMAT, "cannot tell the format of %s: expected %s; pass --format and "
                        "the paths", opts->dir, expected);
}

/* Resolves the format and the paths from the options. */
static tt_status setup(tt_dataset *ds, const tt_dataset_options *opts)
{
    if (!tt_ds_is_dir(opts->dir))
        return tt_error_new(TT_ERR_IO, "data set folder %s does not exist or is not a folder", opts->dir);
    ds->dir = tt_strdup(opts->dir);
    ds->csv_path = opts->csv_path ? tt_strdup(opts->csv_path) : tt_ds_join(opts->dir, "train.csv");
    if (!ds->dir || !ds->csv_path) return oom();
    if (opts->format == TT_DATASET_RASTER ||
        (opts->format == TT_DATASET_AUTO && tt_raster_set_detect(opts->dir)))
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s holds raster pairs (masks/*.tif): train, plan, "
                            "eval and data check read them; this command reads images whole and "
                            "does not yet (predict a scene with --output geotiff instead)", opts->dir);
    if (opts->format == TT_DATASET_AUTO) TT_TRY(detect(ds, opts, &ds->format));
    else if (!(ds->format = format_of(opts->format)))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown data format %d", (int)opts->format);
    ds->images_dir = opts->images_dir ? tt_strdup(opts->images_dir) : tt_ds_join(opts->dir, ds->format->images);
    ds->masks_dir = opts->masks_dir ? tt_strdup(opts->masks_dir) : tt_ds_join(opts->dir, "masks");
    if (!ds->images_dir || !ds->masks_dir) return oom();
    ds->max_pixels = opts->max_pixels ? opts->max_pixels : TT_DATASET_DEFAULT_MAX_PIXELS;
    if (opts->classes) {
        if (opts->class_count <= 0 || opts->class_count > 255)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "a class list needs 1 to 255 names, not %d",
                                opts->class_count);
        for (int c = 0; c < opts->class_count; c++) {
            int index = 0;
            if (!opts->classes[c][0] || tt_ds_find_class(ds, opts->classes[c]) >= 0)
                return tt_error_new(TT_ERR_INVALID_ARGUMENT, "class list: name %d ('%s') is empty or "
                                    "repeated", c + 1, opts->classes[c]);
            TT_TRY(tt_ds_add_class(ds, opts->classes[c], &index));
        }
        ds->classes_given = 1;
    }
    ds->mask_headers_only = opts->mask_headers_only;
    return NULL;
}

tt_status tt_dataset_open(const tt_dataset_options *opts, tt_dataset **out)
{
    tt_status status = NULL;
    *out = NULL;
    if (!opts || !opts->dir)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "opening a data set needs its folder (--data DIR)");
    tt_dataset *ds = tt_calloc(1, sizeof *ds);
    if (!ds) return oom();
    TT_CHECK(setup(ds, opts));
    TT_CHECK(ds->format->open(ds, opts));
    /* leave the bad items out, then sort by name */
    int kept = 0;
    for (int i = 0; i < ds->count; i++) {
        if (ds->items[i].bad) tt_ds_free_item(ds, &ds->items[i]);
        else ds->items[kept++] = ds->items[i];
    }
    ds->count = kept;
    if (kept) qsort(ds->items, (size_t)kept, sizeof *ds->items, compare_items);
    if (ds->problem_count && !opts->skip_bad) {
        size_t length = 1;
        for (int p = 0; p < ds->problem_count; p++) length += strlen(ds->problems[p].reason) + 1;
        char *detail = tt_malloc(length);
        if (detail) {
            detail[0] = '\0';
            for (int p = 0; p < ds->problem_count; p++)
                strcat(strcat(detail, ds->problems[p].reason), "\n");
        }
        if (ds->problem_count == 1)
            status = tt_error_new(TT_ERR_FORMAT, "%s (fix it, or pass --skip-bad to leave it out)",
                                  ds->problems[0].reason);
        else
            status = tt_error_new(TT_ERR_FORMAT, "data set %s has %d problems (all listed below; "
                                  "--skip-bad leaves bad items out); the first: %s", ds->dir,
                                  ds->problem_count, ds->problems[0].reason);
        if (detail && ds->problem_count > 1) tt_error_set_detail(status, detail);
        free(detail);
        goto cleanup;
    }
    if (ds->count == 0) {
        status = tt_error_new(TT_ERR_FORMAT, "data set %s has no usable items (%d problems)%s", ds->dir,
                              ds->problem_count, ds->problem_count ? "" : "; is the images folder empty?");
        goto cleanup;
    }
    *out = ds;
    ds = NULL;
cleanup:
    tt_dataset_destroy(ds);
    return status;
}

void tt_dataset_destroy(tt_dataset *ds)
{
    if (!ds) return;
    for (int i = 0; i < ds->count; i++) tt_ds_free_item(ds, &ds->items[i]);
    free(ds->items);
    for (int c = 0; c < ds->classes; c++) free(ds->class_names[c]);
    free(ds->class_names);
    for (int p = 0; p < ds->problem_count; p++) {
        free(ds->problems[p].item);
        free(ds->problems[p].reason);
    }
    free(ds->problems);
    if (ds->format && ds->format->close) ds->format->close(ds);
    free(ds->dir);
    free(ds->csv_path);
    free(ds->images_dir);
    free(ds->masks_dir);
    free(ds);
}

tt_dataset_format tt_dataset_format_of(const tt_dataset *ds) { return ds->format->id; }
int tt_dataset_count(const tt_dataset *ds) { return ds->count; }
int tt_dataset_classes(const tt_dataset *ds) { return ds->classes; }
int tt_dataset_problem_count(const tt_dataset *ds) { return ds->problem_count; }

const char *tt_dataset_item_name(const tt_dataset *ds, int index)
{
    TT_ASSERT(index >= 0 && index < ds->count);
    return ds->items[index].name;
}

const char *tt_dataset_image_path(const tt_dataset *ds, int index)
{
    TT_ASSERT(index >= 0 && index < ds->count);
    return ds->items[index].image_path;
}

void tt_dataset_image_size(const tt_dataset *ds, int index, int *width, int *height)
{
    TT_ASSERT(index >= 0 && index < ds->count);
    *width = ds->items[index].width;
    *height = ds->items[index].height;
}

int tt_dataset_find(const tt_dataset *ds, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < ds->count; i++) {
        const char *item = ds->items[i].name;
        if (strcmp(item, name) == 0 || (strncmp(item, name, n) == 0 && item[n] == '.' &&
                                        !strchr(item + n + 1, '.')))
            return i;
    }
    return -1;
}

const char *tt_dataset_class_name(const tt_dataset *ds, int index)
{
    TT_ASSERT(index >= 0 && index < ds->classes);
    return ds->class_names[index];
}

tt_mask_kind tt_dataset_mask_kind(const tt_dataset *ds)
{
    return ds->format->kind;
}

const tt_dataset_problem *tt_dataset_problem_at(const tt_dataset *ds, int index)
{
    TT_ASSERT(index >= 0 && index < ds->problem_count);
    return &ds->problems[index];
}

static tt_status mask_for_size(tt_dataset *ds, int index, int width, int height, uint8_t *planes)
{
    TT_ASSERT(index >= 0 && index < ds->count && planes);
    const tt_ds_item *item = &ds->items[index];
    if (width != item->width || height != item->height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "mask of %s asked for %d x %d, but the image is "
                            "%d x %d", item->image_path, width, height, item->width, item->height);
    return ds->format->mask(ds, index, planes);
}

tt_status tt_dataset_mask(tt_dataset *ds, int index, uint8_t *planes)
{
    TT_ASSERT(index >= 0 && index < ds->count);
    return mask_for_size(ds, index, ds->items[index].width, ds->items[index].height, planes);
}

static const char *source_name(void *ctx, int index) { return tt_dataset_item_name(ctx, index); }
static const char *source_image_path(void *ctx, int index) { return tt_dataset_image_path(ctx, index); }

static tt_status source_mask(void *ctx, int index, int width, int height, uint8_t *planes)
{
    return mask_for_size(ctx, index, width, height, planes);
}

static uint64_t source_mask_key(void *ctx, int index)
{
    tt_dataset *ds = ctx;
    TT_ASSERT(index >= 0 && index < ds->count);
    return ds->format->mask_key(ds, index);
}

tt_item_source tt_dataset_source(tt_dataset *ds)
{
    return (tt_item_source){
        .ctx = ds,
        .count = ds->count,
        .classes = ds->classes,
        .mask_kind = tt_dataset_mask_kind(ds),
        .name = source_name,
        .image_path = source_image_path,
        .mask = source_mask,
        .mask_key = source_mask_key,
    };
}
