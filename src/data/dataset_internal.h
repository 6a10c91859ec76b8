/*
 * What dataset.c (the common parts), dataset_items.c (the builders every
 * format uses) and the format files (dataset_folder.c, dataset_rle.c)
 * share.  Not for use outside src/data/dataset*.c.
 *
 * The arrows: dataset.c reaches a format only through its tt_ds_format
 * row; a format file calls only the builders of dataset_items.c.  Adding a
 * format is one file exporting a tt_ds_format plus one row in dataset.c's
 * table (and a tt_dataset_format value in dataset.h).
 */
#ifndef TT_DATA_DATASET_INTERNAL_H
#define TT_DATA_DATASET_INTERNAL_H

#include "core/status.h"
#include "data/dataset.h"

typedef struct tt_ds_item {
    char *name;        /* image file name */
    char *image_path;
    int width, height; /* from the image header */
    int bad;           /* left out at the end of tt_dataset_open */
    void *format_data; /* the format's own per-item record (its free_item frees it) */
} tt_ds_item;

/* One data set format.  Every function gets the data set being opened or
 * read; mask() and mask_key() only read it and may run on several threads. */
typedef struct tt_ds_format {
    tt_dataset_format id;
    const char *name;    /* as --format takes it */
    const char *aliases; /* other accepted names, space-separated ("" = none) */
    const char *expects; /* what auto-detection looks for, for its message: "train.csv" */
    const char *images;  /* the default images folder under DIR */
    tt_mask_kind kind;
    /* 0: dir does not look like this format; else a confidence (the
     * highest wins auto-detection).  ds holds the resolved csv_path. */
    int (*detect)(const tt_dataset *ds, const tt_dataset_options *opts);
    /* Lists the items (tt_ds_add_item), classes and problems into ds. */
    tt_status (*open)(tt_dataset *ds, const tt_dataset_options *opts);
    /* The item's mask planes for its own image size. */
    tt_status (*mask)(const tt_dataset *ds, int index, uint8_t *planes);
    /* A key that changes when the item's mask may have changed. */
    uint64_t (*mask_key)(const tt_dataset *ds, int index);
    void (*free_item)(void *format_data); /* NULL allowed */
    void (*close)(tt_dataset *ds);        /* frees ds->format_data; NULL allowed */
} tt_ds_format;

extern const tt_ds_format tt_ds_folder_format; /* dataset_folder.c */
extern const tt_ds_format tt_ds_kaggle_format; /* dataset_rle.c */

struct tt_dataset {
    const tt_ds_format *format;
    char *dir, *csv_path, *images_dir, *masks_dir;
    uint64_t max_pixels;
    tt_ds_item *items;
    int count, capacity;
    char **class_names;
    int classes;
    int classes_given;
    int mask_headers_only;
    tt_dataset_problem *problems;
    int problem_count, problem_capacity;
    void *format_data; /* the format's own per-data-set record (its close frees it) */
};

/* The builders (dataset_items.c). */

/* Records a problem (item may be NULL); returns NULL or out-of-memory. */
tt_status tt_ds_problem(tt_dataset *ds, const char *item, const char *fmt, ...) TT_PRINTF(3, 4);
/* Records a problem from a status (frees it), marking item index bad if >= 0. */
tt_status tt_ds_problem_status(tt_dataset *ds, int index, const char *item, tt_status problem);
/* Appends an item (name and path copied); *index receives its position. */
tt_status tt_ds_add_item(tt_dataset *ds, const char *name, const char *image_path, int *index);
/* Adds a class name (copied); *index receives its position. */
tt_status tt_ds_add_class(tt_dataset *ds, const char *name, int *index);
int tt_ds_find_class(const tt_dataset *ds, const char *name);
/* "a/b" as a malloc'd string, or NULL when out of memory. */
char *tt_ds_join(const char *dir, const char *name);
/* Probes an item's image (size, limits), recording a problem on failure. */
tt_status tt_ds_probe_item(tt_dataset *ds, int index);
/* Frees an item's strings and its format_data. */
void tt_ds_free_item(const tt_dataset *ds, tt_ds_item *item);
/* Whether path is a folder / a regular file. */
int tt_ds_is_dir(const char *path);
int tt_ds_is_file(const char *path);

#endif
