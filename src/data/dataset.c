/*
 * Data sets: the parts every format shares (options, items, classes,
 * problems, sorting, the tt_item_source seam).  The folder format is in
 * dataset_folder.c, the Kaggle CSV formats in dataset_rle.c.
 */
#include "data/dataset.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/dataset_internal.h"
#include "data/dataset_probe.h"

static const char *const image_extensions[] = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff"};

static tt_status oom(void)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "opening a data set: out of host memory");
}

const char *tt_dataset_format_name(tt_dataset_format format)
{
    switch (format) {
    case TT_DATASET_AUTO: return "auto";
    case TT_DATASET_FOLDER: return "folder";
    case TT_DATASET_KAGGLE_RLE: return "kaggle-rle";
    }
    return "unknown";
}

tt_status tt_dataset_format_parse(const char *name, tt_dataset_format *format)
{
    if (strcmp(name, "auto") == 0) *format = TT_DATASET_AUTO;
    else if (strcmp(name, "folder") == 0) *format = TT_DATASET_FOLDER;
    else if (strcmp(name, "kaggle-rle") == 0 || strcmp(name, "kaggle") == 0 || strcmp(name, "rle") == 0)
        *format = TT_DATASET_KAGGLE_RLE;
    else
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown data format '%s'; use auto, folder or "
                            "kaggle-rle", name);
    return NULL;
}

char *tt_ds_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *path = malloc(a + b + 2);
    if (!path) return NULL;
    memcpy(path, dir, a);
    path[a] = '/';
    memcpy(path + a + 1, name, b + 1);
    return path;
}

static int has_image_extension(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < sizeof image_extensions / sizeof image_extensions[0]; i++)
        if (strcasecmp(dot, image_extensions[i]) == 0) return 1;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tt_ds_free_names(char **names, int count)
{
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

tt_status tt_ds_list_images(const char *dir, char ***names, int *count)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return tt_error_new(TT_ERR_IO, "cannot read the images folder %s: %s", dir, strerror(errno));
    char **list = NULL;
    int n = 0, capacity = 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        if (entry->d_name[0] == '.' || !has_image_extension(entry->d_name)) continue;
        if (n == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = realloc(list, sizeof *grown * (size_t)capacity);
            if (!grown) goto fail;
            list = grown;
        }
        if (!(list[n] = strdup(entry->d_name))) goto fail;
        n++;
    }
    closedir(d);
    if (n) qsort(list, (size_t)n, sizeof *list, compare_names);
    *names = list;
    *count = n;
    return NULL;
fail:
    closedir(d);
    tt_ds_free_names(list, n);
    return oom();
}

tt_status tt_ds_problem(tt_dataset *ds, const char *item, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (ds->problem_count == ds->problem_capacity) {
        int capacity = ds->problem_capacity ? 2 * ds->problem_capacity : 16;
        tt_dataset_problem *grown = realloc(ds->problems, sizeof *grown * (size_t)capacity);
        if (!grown) return oom();
        ds->problems = grown;
        ds->problem_capacity = capacity;
    }
    tt_dataset_problem *p = &ds->problems[ds->problem_count];
    p->item = strdup(item ? item : "");
    p->reason = strdup(line);
    if (!p->item || !p->reason) {
        free(p->item);
        free(p->reason);
        return oom();
    }
    ds->problem_count++;
    return NULL;
}

tt_status tt_ds_problem_status(tt_dataset *ds, int index, const char *item, tt_status problem)
{
    if (index >= 0) ds->items[index].bad = 1;
    if (tt_status_code(problem) == TT_ERR_OUT_OF_MEMORY) return problem;
    tt_status status = tt_ds_problem(ds, item, "%s", tt_status_message(problem));
    tt_status_free(problem);
    return status;
}

tt_status tt_ds_add_item(tt_dataset *ds, const char *name, const char *image_path, int *index)
{
    if (ds->count == ds->capacity) {
        int capacity = ds->capacity ? 2 * ds->capacity : 64;
        tt_ds_item *grown = realloc(ds->items, sizeof *grown * (size_t)capacity);
        if (!grown) return oom();
        ds->items = grown;
        ds->capacity = capacity;
    }
    tt_ds_item *item = &ds->items[ds->count];
    memset(item, 0, sizeof *item);
    item->name = strdup(name);
    item->image_path = strdup(image_path);
    if (!item->name || !item->image_path) {
        free(item->name);
        free(item->image_path);
        return oom();
    }
    *index = ds->count++;
    return NULL;
}

tt_status tt_ds_add_class(tt_dataset *ds, const char *name, int *index)
{
    char **grown = realloc(ds->class_names, sizeof *grown * (size_t)(ds->classes + 1));
    if (!grown) return oom();
    ds->class_names = grown;
    if (!(grown[ds->classes] = strdup(name))) return oom();
    *index = ds->classes++;
    return NULL;
}

int tt_ds_find_class(const tt_dataset *ds, const char *name)
{
    for (int i = 0; i < ds->classes; i++)
        if (strcmp(ds->class_names[i], name) == 0) return i;
    return -1;
}

tt_status tt_ds_probe_item(tt_dataset *ds, int index)
{
    tt_ds_item *item = &ds->items[index];
    tt_image_header header;
    tt_status problem = tt_probe_image(item->image_path, ds->max_pixels, &header);
    if (problem) return tt_ds_problem_status(ds, index, item->name, problem);
    item->width = header.width;
    item->height = header.height;
    return NULL;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int compare_items(const void *a, const void *b)
{
    return strcmp(((const tt_ds_item *)a)->name, ((const tt_ds_item *)b)->name);
}

static void free_item(tt_ds_item *item)
{
    free(item->name);
    free(item->image_path);
    free(item->mask_path);
    free(item->rle);
    free(item->rle_line);
}

/* Resolves the format and the paths from the options. */
static tt_status setup(tt_dataset *ds, const tt_dataset_options *opts)
{
    if (!is_dir(opts->dir))
        return tt_error_new(TT_ERR_IO, "data set folder %s does not exist or is not a folder", opts->dir);
    ds->dir = strdup(opts->dir);
    ds->csv_path = opts->csv_path ? strdup(opts->csv_path) : tt_ds_join(opts->dir, "train.csv");
    if (!ds->dir || !ds->csv_path) return oom();
    ds->format = opts->format;
    if (ds->format == TT_DATASET_AUTO) {
        char *images = tt_ds_join(opts->dir, "images"), *masks = tt_ds_join(opts->dir, "masks");
        int folder = images && masks && is_dir(images) && is_dir(masks);
        free(images);
        free(masks);
        if (opts->csv_path || is_file(ds->csv_path)) ds->format = TT_DATASET_KAGGLE_RLE;
        else if (folder || (opts->images_dir && opts->masks_dir)) ds->format = TT_DATASET_FOLDER;
        else
            return tt_error_new(TT_ERR_FORMAT, "cannot tell the format of %s: expected images/ and "
                                "masks/ (folder) or train.csv (kaggle-rle); pass --format and the paths",
                                opts->dir);
    }
    int folder = ds->format == TT_DATASET_FOLDER;
    ds->images_dir = opts->images_dir ? strdup(opts->images_dir)
                                      : tt_ds_join(opts->dir, folder ? "images" : "train_images");
    ds->masks_dir = opts->masks_dir ? strdup(opts->masks_dir) : tt_ds_join(opts->dir, "masks");
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
    tt_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) return oom();
    TT_CHECK(setup(ds, opts));
    if (ds->format == TT_DATASET_FOLDER) TT_CHECK(tt_ds_open_folder(ds));
    else TT_CHECK(tt_ds_open_kaggle(ds, opts));
    /* leave the bad items out, then sort by name */
    int kept = 0;
    for (int i = 0; i < ds->count; i++) {
        if (ds->items[i].bad) free_item(&ds->items[i]);
        else ds->items[kept++] = ds->items[i];
    }
    ds->count = kept;
    if (kept) qsort(ds->items, (size_t)kept, sizeof *ds->items, compare_items);
    if (ds->problem_count && !opts->skip_bad) {
        size_t length = 1;
        for (int p = 0; p < ds->problem_count; p++) length += strlen(ds->problems[p].reason) + 1;
        char *detail = malloc(length);
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
    for (int i = 0; i < ds->count; i++) free_item(&ds->items[i]);
    free(ds->items);
    for (int c = 0; c < ds->classes; c++) free(ds->class_names[c]);
    free(ds->class_names);
    for (int p = 0; p < ds->problem_count; p++) {
        free(ds->problems[p].item);
        free(ds->problems[p].reason);
    }
    free(ds->problems);
    tt_csv_destroy(ds->csv);
    free(ds->dir);
    free(ds->csv_path);
    free(ds->images_dir);
    free(ds->masks_dir);
    free(ds);
}

tt_dataset_format tt_dataset_format_of(const tt_dataset *ds) { return ds->format; }
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
    return ds->format == TT_DATASET_FOLDER ? TT_MASK_CLASS_INDEX : TT_MASK_MULTI_LABEL;
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
    if (ds->format == TT_DATASET_KAGGLE_RLE) return tt_ds_kaggle_mask(ds, index, planes);
    return tt_ds_folder_mask(ds, index, planes);
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
    /* folder masks may change on disk after opening: look again */
    if (ds->format == TT_DATASET_FOLDER) return tt_ds_file_key(ds->items[index].mask_path);
    return ds->items[index].mask_key;
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
