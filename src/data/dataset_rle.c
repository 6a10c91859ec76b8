/*
 * The Kaggle run-length formats: a CSV of masks plus a folder of images.
 *   "Understanding Clouds"  Image_Label,EncodedPixels   (Image_Label = FILE_CLASS;
 *                           the older Severstal ImageId_ClassId header too)
 *   "Severstal"             ImageId,ClassId,EncodedPixels
 * One 0/1 plane per class; classes in order of first appearance unless the
 * options list them.  Rows are checked here (fields, classes, duplicates,
 * RLE syntax and bounds against the image header); images are checked
 * with the common probe.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "data/dataset_internal.h"
#include "data/image.h"
#include "data/rle.h"
#include "io/csv.h"

/* An item's format_data. */
typedef struct kaggle_item {
    uint64_t mask_key;
    const char **rle; /* [classes] RLE text into the data set's CSV, NULL = no row (empty) */
    int *rle_line;    /* [classes] CSV line of the row, 0 = none */
} kaggle_item;

/* The data set's format_data is the tt_csv that the items' rle point into. */
static const tt_csv *csv_of(const tt_dataset *ds) { return ds->format_data; }
static kaggle_item *kaggle_of(const tt_ds_item *item) { return item->format_data; }

static void free_kaggle_item(void *data)
{
    kaggle_item *k = data;
    if (!k) return;
    free(k->rle);
    free(k->rle_line);
    free(k);
}

/* A kaggle_item with `classes` (at least 1) empty rows. */
static kaggle_item *new_kaggle_item(int classes)
{
    size_t n = classes > 0 ? (size_t)classes : 1;
    kaggle_item *k = tt_calloc(1, sizeof *k);
    if (!k) return NULL;
    k->rle = tt_calloc(n, sizeof *k->rle);
    k->rle_line = tt_calloc(n, sizeof *k->rle_line);
    if (!k->rle || !k->rle_line) {
        free_kaggle_item(k);
        return NULL;
    }
    return k;
}

typedef enum layout { LAYOUT_CLOUDS, LAYOUT_SEVERSTAL } layout;

typedef struct row {
    int item, class_index, line;
    const char *rle;
} row;

/* Item names to indices: open addressing over FNV-1a, sized at 2x a power of two. */
typedef struct name_map {
    int *slots; /* item index + 1, 0 = empty */
    size_t mask;
} name_map;

static int map_init(name_map *map, size_t expected)
{
    size_t size = 64;
    while (size < 2 * expected) size *= 2;
    map->slots = tt_calloc(size, sizeof *map->slots);
    map->mask = size - 1;
    return map->slots != NULL;
}

/* The slot where `name` is or would go. */
static size_t map_slot(const name_map *map, const tt_dataset *ds, const char *name)
{
    size_t slot = (size_t)tt_hash_bytes(TT_HASH_INIT, name, strlen(name)) & map->mask;
    while (map->slots[slot] && strcmp(ds->items[map->slots[slot] - 1].name, name) != 0)
        slot = (slot + 1) & map->mask;
    return slot;
}

static tt_status oom(void)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading a Kaggle CSV: out of host memory");
}

static tt_status read_header(const tt_csv *csv, const char *path, layout *which)
{
    if (csv->count == 0)
        return tt_error_new(TT_ERR_FORMAT, "%s is empty; expected a header and one row per image "
                            "and class", path);
    const tt_csv_record *h = &csv->records[0];
    if (h->count == 2 && (strcmp(h->fields[0], "Image_Label") == 0 ||
                          strcmp(h->fields[0], "ImageId_ClassId") == 0) &&
        strcmp(h->fields[1], "EncodedPixels") == 0) {
        *which = LAYOUT_CLOUDS;
        return NULL;
    }
    if (h->count == 3 && strcmp(h->fields[0], "ImageId") == 0 && strcmp(h->fields[1], "ClassId") == 0 &&
        strcmp(h->fields[2], "EncodedPixels") == 0) {
        *which = LAYOUT_SEVERSTAL;
        return NULL;
    }
    return tt_error_new(TT_ERR_FORMAT, "%s:%d: unknown header ('%s%s%s'); expected "
                        "Image_Label,EncodedPixels (Understanding Clouds) or "
                        "ImageId,ClassId,EncodedPixels (Severstal)", path, h->line,
                        h->count ? h->fields[0] : "", h->count > 1 ? "," : "",
                        h->count > 1 ? h->fields[1] : "");
}

/* The item for an image name, added on first sight. */
static tt_status item_for(tt_dataset *ds, name_map *map, const char *name, int *index)
{
    size_t slot = map_slot(map, ds, name);
    if (map->slots[slot]) {
        *index = map->slots[slot] - 1;
        return NULL;
    }
    if ((size_t)ds->count + 1 > (map->mask + 1) / 2) { /* grow: rehash every item */
        name_map bigger;
        if (!map_init(&bigger, (size_t)ds->count + 1)) return oom();
        for (int i = 0; i < ds->count; i++) bigger.slots[map_slot(&bigger, ds, ds->items[i].name)] = i + 1;
        free(map->slots);
        *map = bigger;
        slot = map_slot(map, ds, name);
    }
    char *path = tt_ds_join(ds->images_dir, name);
    if (!path) return oom();
    tt_status status = tt_ds_add_item(ds, name, path, index);
    free(path);
    if (!status) map->slots[slot] = *index + 1;
    return status;
}

/* Reads the rows into `rows` (one per valid CSV row); bad rows become
 * problems that mark their item bad. */
static tt_status read_rows(tt_dataset *ds, name_map *map, layout which, row *rows, int *row_count)
{
    const tt_csv *csv = csv_of(ds);
    const int want = which == LAYOUT_CLOUDS ? 2 : 3;
    *row_count = 0;
    for (int r = 1; r < csv->count; r++) {
        const tt_csv_record *rec = &csv->records[r];
        char image[4096];
        const char *class_name = NULL;
        int item = -1;
        if (rec->count >= 1 && rec->fields[0][0] && strlen(rec->fields[0]) < sizeof image) {
            strcpy(image, rec->fields[0]);
            if (which == LAYOUT_CLOUDS) {
                char *underscore = strrchr(image, '_');
                if (underscore && underscore != image && underscore[1]) {
                    *underscore = '\0';
                    class_name = underscore + 1;
                }
            } else if (rec->count >= 2 && rec->fields[1][0]) {
                class_name = rec->fields[1];
            }
            TT_TRY(item_for(ds, map, image, &item));
        }
        if (rec->count != want) {
            TT_TRY(tt_ds_problem_status(ds, item, item >= 0 ? image : NULL,
                   tt_error_new(TT_ERR_FORMAT, "%s:%d: %d fields, expected %d like the header",
                                ds->csv_path, rec->line, rec->count, want)));
            continue;
        }
        if (item >= 0 && (strchr(image, '/') || strcmp(image, "..") == 0)) {
            TT_TRY(tt_ds_problem_status(ds, item, image,
                   tt_error_new(TT_ERR_FORMAT, "%s:%d: image '%s' is not a plain file name (no folders: "
                                "images come from %s)", ds->csv_path, rec->line, image, ds->images_dir)));
            continue;
        }
        if (item < 0 || !class_name) {
            TT_TRY(tt_ds_problem_status(ds, item, item >= 0 ? image : NULL,
                   tt_error_new(TT_ERR_FORMAT, which == LAYOUT_CLOUDS
                                ? "%s:%d: Image_Label '%s' is not FILE_CLASS" : "%s:%d: empty ImageId "
                                "or ClassId ('%s')", ds->csv_path, rec->line, rec->fields[0])));
            continue;
        }
        int class_index = tt_ds_find_class(ds, class_name);
        if (class_index < 0 && ds->classes_given) {
            TT_TRY(tt_ds_problem_status(ds, item, image,
                   tt_error_new(TT_ERR_FORMAT, "%s:%d: image %s: unknown class '%s' (the class list "
                                "has %d)", ds->csv_path, rec->line, image, class_name, ds->classes)));
            continue;
        }
        if (class_index < 0) {
            if (ds->classes == 255)
                return tt_error_new(TT_ERR_FORMAT, "%s:%d: more than 255 classes; is the class column "
                                    "right?", ds->csv_path, rec->line);
            TT_TRY(tt_ds_add_class(ds, class_name, &class_index));
        }
        rows[(*row_count)++] = (row){item, class_index, rec->line, rec->fields[want - 1]};
    }
    return NULL;
}

/* Per-item RLE tables from the rows; duplicated (image, class) rows are problems. */
static tt_status fill_items(tt_dataset *ds, const row *rows, int row_count)
{
    for (int i = 0; i < ds->count; i++)
        if (!(ds->items[i].format_data = new_kaggle_item(ds->classes))) return oom();
    for (int r = 0; r < row_count; r++) {
        tt_ds_item *item = &ds->items[rows[r].item];
        kaggle_item *k = kaggle_of(item);
        int c = rows[r].class_index;
        if (k->rle_line[c]) {
            TT_TRY(tt_ds_problem_status(ds, rows[r].item, item->name,
                   tt_error_new(TT_ERR_FORMAT, "%s:%d: duplicated row: image %s class %s already "
                                "has line %d", ds->csv_path, rows[r].line, item->name,
                                ds->class_names[c], k->rle_line[c])));
            continue;
        }
        k->rle_line[c] = rows[r].line;
        k->rle[c] = rows[r].rle[0] ? rows[r].rle : NULL;
    }
    return NULL;
}

/* The first CSV line that names the item, for messages. */
static int first_line(const tt_dataset *ds, const tt_ds_item *item)
{
    const kaggle_item *k = kaggle_of(item);
    int line = 0;
    for (int c = 0; c < ds->classes; c++)
        if (k->rle_line[c] && (!line || k->rle_line[c] < line)) line = k->rle_line[c];
    return line;
}

/* Probes each item's image, validates its RLE against the size, keys it. */
static tt_status check_items(tt_dataset *ds)
{
    for (int i = 0; i < ds->count; i++) {
        tt_ds_item *item = &ds->items[i];
        if (item->bad) continue;
        struct stat st;
        if (stat(item->image_path, &st) != 0) {
            TT_TRY(tt_ds_problem(ds, item->name, "%s:%d: image %s is listed but not in %s",
                                 ds->csv_path, first_line(ds, item), item->name, ds->images_dir));
            item->bad = 1;
            continue;
        }
        TT_TRY(tt_ds_probe_item(ds, i));
        if (item->bad) continue;
        kaggle_item *k = kaggle_of(item);
        uint64_t key = tt_hash_bytes(TT_HASH_INIT, item->name, strlen(item->name));
        for (int c = 0; c < ds->classes && !item->bad; c++) {
            tt_status problem = tt_rle_decode(k->rle[c], item->width, item->height, NULL);
            if (problem) {
                problem = tt_error_prefix(problem, "%s:%d: image %s class %s", ds->csv_path,
                                          k->rle_line[c], item->name, ds->class_names[c]);
                TT_TRY(tt_ds_problem_status(ds, i, item->name, problem));
            }
            key = tt_hash_bytes(key, &c, sizeof c);
            if (k->rle[c]) key = tt_hash_bytes(key, k->rle[c], strlen(k->rle[c]) + 1);
        }
        k->mask_key = key;
    }
    return NULL;
}

static tt_status open_kaggle(tt_dataset *ds, const tt_dataset_options *opts)
{
    tt_status status = NULL;
    name_map map = {0};
    row *rows = NULL;
    char **images = NULL;
    int image_count = 0, row_count = 0;
    layout which = LAYOUT_CLOUDS;
    tt_csv *csv = NULL;
    TT_CHECK(tt_csv_read_file(ds->csv_path, &csv));
    ds->format_data = csv;
    TT_CHECK(read_header(csv, ds->csv_path, &which));
    rows = tt_malloc(sizeof *rows * (size_t)csv->count);
    if (!rows || !map_init(&map, (size_t)csv->count)) {
        status = oom();
        goto cleanup;
    }
    TT_CHECK(tt_image_list_dir(ds->images_dir, &images, &image_count));
    TT_CHECK(read_rows(ds, &map, which, rows, &row_count));
    TT_CHECK(fill_items(ds, rows, row_count));
    TT_CHECK(check_items(ds));
    /* images in the folder that no row names */
    for (int f = 0; f < image_count; f++) {
        if (map.slots[map_slot(&map, ds, images[f])]) continue;
        if (!opts->unlisted_empty) {
            TT_CHECK(tt_ds_problem(ds, images[f], "%s/%s: image not listed in %s (pass --unlisted-empty "
                                   "if unlisted images have no objects)", ds->images_dir, images[f],
                                   ds->csv_path));
            continue;
        }
        int index = -1;
        TT_CHECK(item_for(ds, &map, images[f], &index));
        tt_ds_item *item = &ds->items[index];
        kaggle_item *k = new_kaggle_item(ds->classes);
        if (!k) {
            status = oom();
            goto cleanup;
        }
        item->format_data = k;
        k->mask_key = tt_hash_bytes(TT_HASH_INIT, item->name, strlen(item->name));
        TT_CHECK(tt_ds_probe_item(ds, index));
    }
    if (ds->classes == 0)
        status = tt_error_new(TT_ERR_FORMAT, "%s has no valid rows, so no classes", ds->csv_path);
cleanup:
    free(map.slots);
    free(rows);
    tt_image_free_names(images, image_count);
    return status;
}

static tt_status kaggle_mask(const tt_dataset *ds, int index, uint8_t *planes)
{
    const tt_ds_item *item = &ds->items[index];
    const kaggle_item *k = kaggle_of(item);
    size_t plane = (size_t)item->width * (size_t)item->height;
    for (int c = 0; c < ds->classes; c++) {
        tt_status status = tt_rle_decode(k->rle[c], item->width, item->height, planes + c * plane);
        if (status)
            return tt_error_prefix(status, "%s:%d: image %s class %s", ds->csv_path, k->rle_line[c],
                                   item->name, ds->class_names[c]);
    }
    return NULL;
}

static uint64_t kaggle_mask_key(const tt_dataset *ds, int index) { return kaggle_of(&ds->items[index])->mask_key; }

/* A CSV given, or DIR/train.csv there: surer than a folder layout. */
static int detect_kaggle(const tt_dataset *ds, const tt_dataset_options *opts)
{
    return opts->csv_path || tt_ds_is_file(ds->csv_path) ? 2 : 0;
}

static void close_kaggle(tt_dataset *ds)
{
    tt_csv_destroy(ds->format_data);
    ds->format_data = NULL;
}

const tt_ds_format tt_ds_kaggle_format = {
    .id = TT_DATASET_KAGGLE_RLE,
    .name = "kaggle-rle",
    .aliases = "kaggle rle",
    .expects = "train.csv",
    .images = "train_images",
    .kind = TT_MASK_MULTI_LABEL,
    .detect = detect_kaggle,
    .open = open_kaggle,
    .mask = kaggle_mask,
    .mask_key = kaggle_mask_key,
    .free_item = free_kaggle_item,
    .close = close_kaggle,
};
