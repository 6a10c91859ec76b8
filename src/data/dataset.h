/*
 * Training data sets on disk: which items there are, their classes, where
 * their images lie and how their masks are stored.  Two formats:
 *
 *   folder      DIR/images/NAME.{png,jpg,jpeg,bmp,tif,tiff} and
 *               DIR/masks/STEM.png, an 8-bit class index per pixel
 *               (grayscale or palette PNG), 255 = ignore.  Softmax CE.
 *   kaggle-rle  DIR/train.csv and DIR/train_images/: "Understanding Clouds"
 *               (Image_Label,EncodedPixels) or "Severstal"
 *               (ImageId,ClassId,EncodedPixels) run-length masks, one 0/1
 *               channel per class.  Multi-label (sigmoid BCE).
 *
 * Opening validates everything (see datasets/README.md for the list); each
 * problem is one line naming the file (and the CSV line) and the reason.
 * Without skip_bad any problem fails the open; with it, bad items are left
 * out and the problems are kept for the caller to print.  The pixel half
 * reads the items through tt_dataset_source() (data/source.h).
 */
#ifndef TT_DATA_DATASET_H
#define TT_DATA_DATASET_H

#include <stdint.h>

#include "data/source.h"
#include "tiletrain.h"

typedef enum tt_dataset_format {
    TT_DATASET_AUTO = 0,   /* folder if DIR/images + DIR/masks, kaggle-rle if a CSV */
    TT_DATASET_FOLDER,
    TT_DATASET_KAGGLE_RLE,
    TT_DATASET_RASTER,     /* raster pairs, opened by data/raster_set.h (not tt_dataset_open) */
} tt_dataset_format;

typedef struct tt_dataset_options {
    const char *dir;             /* the data set's folder (required) */
    tt_dataset_format format;
    const char *csv_path;        /* kaggle-rle: default DIR/train.csv */
    const char *images_dir;      /* default DIR/images (folder), DIR/train_images (kaggle-rle) */
    const char *masks_dir;       /* folder: default DIR/masks */
    const char *const *classes;  /* class names in channel order, or NULL: folder masks then
                                    give "0".."max", CSV classes come in order of first appearance */
    int class_count;             /* entries of classes */
    uint64_t max_pixels;         /* refuse image headers above this; 0 = 2^28 */
    int skip_bad;                /* leave bad items out instead of failing */
    int unlisted_empty;          /* kaggle-rle: images no CSV row names are items with empty masks
                                    (Severstal leaves defect-free images out) instead of problems */
    int mask_headers_only;       /* folder with a class list: check masks at open from their
                                    headers (size, kind) only; values are checked by mask() then.
                                    Faster on large sets; `data check` always decodes */
} tt_dataset_options;

/* One problem found while opening: the item (an image's file name; "" when
 * none applies) and a one-line reason naming the file and line. */
typedef struct tt_dataset_problem {
    char *item;
    char *reason;
} tt_dataset_problem;

typedef struct tt_dataset tt_dataset;

/* Scans and validates the data set.  On success *out is owned by the caller
 * (tt_dataset_destroy).  Errors: TT_ERR_IO (no such folder or CSV),
 * TT_ERR_FORMAT (problems without skip_bad: the message is the first
 * problem and a count, the detail lists them all; wrong CSV header; no
 * usable item left), TT_ERR_INVALID_ARGUMENT (bad options). */
tt_status tt_dataset_open(const tt_dataset_options *opts, tt_dataset **out);
void tt_dataset_destroy(tt_dataset *ds);

tt_dataset_format tt_dataset_format_of(const tt_dataset *ds);
const char *tt_dataset_format_name(tt_dataset_format format);
/* "auto", "folder", "kaggle-rle" (also "rle", "kaggle"), "raster"; else
 * TT_ERR_INVALID_ARGUMENT. */
tt_status tt_dataset_format_parse(const char *name, tt_dataset_format *format);

/* The usable items, sorted by file name (strcmp). */
int tt_dataset_count(const tt_dataset *ds);
const char *tt_dataset_item_name(const tt_dataset *ds, int index);
const char *tt_dataset_image_path(const tt_dataset *ds, int index);
/* The image's size from its header. */
void tt_dataset_image_size(const tt_dataset *ds, int index, int *width, int *height);
/* The index of the item whose file name or name without extension is
 * `name`, or -1. */
int tt_dataset_find(const tt_dataset *ds, const char *name);

int tt_dataset_classes(const tt_dataset *ds);
const char *tt_dataset_class_name(const tt_dataset *ds, int index);
tt_mask_kind tt_dataset_mask_kind(const tt_dataset *ds);

/* Problems found while opening (bad items skipped, unlisted files). */
int tt_dataset_problem_count(const tt_dataset *ds);
const tt_dataset_problem *tt_dataset_problem_at(const tt_dataset *ds, int index);

/* The items as the pixel half sees them; valid while ds lives.  mask() and
 * mask_key() only read ds and may run on several threads at once. */
tt_item_source tt_dataset_source(tt_dataset *ds);

/* Writes the item's mask planes (see tt_item_source.mask) for its own
 * image size: 1 plane of height x width bytes (folder) or one per class. */
tt_status tt_dataset_mask(tt_dataset *ds, int index, uint8_t *planes);

#endif
