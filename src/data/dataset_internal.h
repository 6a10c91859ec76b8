/*
 * What dataset.c (common parts), dataset_folder.c (folder format) and
 * dataset_rle.c (the Kaggle CSV formats) share.  Not for use outside src/data/dataset*.c.
 */
#ifndef TT_DATA_DATASET_INTERNAL_H
#define TT_DATA_DATASET_INTERNAL_H

#include "core/status.h"
#include "io/csv.h"
#include "data/dataset.h"

typedef struct tt_ds_item {
    char *name;        /* image file name */
    char *image_path;
    char *mask_path;   /* folder format */
    int width, height; /* from the image header */
    int bad;           /* left out at the end of tt_dataset_open */
    uint64_t mask_key;
    const char **rle;  /* kaggle-rle: [classes] RLE text, NULL = no row (empty) */
    int *rle_line;     /* kaggle-rle: [classes] CSV line of the row, 0 = none */
} tt_ds_item;

struct tt_dataset {
    tt_dataset_format format;
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
    tt_csv *csv; /* kaggle-rle: the rows that items' rle point into */
};

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
/* The file names in dir with an image extension, sorted; TT_ERR_IO when
 * dir cannot be read.  Free with tt_ds_free_names. */
tt_status tt_ds_list_images(const char *dir, char ***names, int *count);
void tt_ds_free_names(char **names, int count);
/* Probes an item's image (size, limits), recording a problem on failure. */
tt_status tt_ds_probe_item(tt_dataset *ds, int index);

/* folder: lists images and masks into ds, checks them, counts classes. */
tt_status tt_ds_open_folder(tt_dataset *ds);
/* folder mask of the item's own size, values checked. */
tt_status tt_ds_folder_mask(tt_dataset *ds, int index, uint8_t *planes);
/* Hash of a file's path, size and mtime (0-size/mtime when it is gone). */
uint64_t tt_ds_file_key(const char *path);

/* kaggle-rle: reads the CSV and the images folder into ds. */
tt_status tt_ds_open_kaggle(tt_dataset *ds, const tt_dataset_options *opts);
/* kaggle-rle mask: `classes` planes of 0/1. */
tt_status tt_ds_kaggle_mask(tt_dataset *ds, int index, uint8_t *planes);

#endif
