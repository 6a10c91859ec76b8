/*
 * tiletrain predict: full-resolution sliding-window prediction of one image
 * or a folder of images with a trained checkpoint.
 *
 * Per image it writes, into --out: a class-index PNG (STEM_mask.png, one
 * byte per pixel, the class) for class-index models, or one 0/255 PNG per
 * class (STEM_CLASS.png) for multi-label models; an overlay PNG
 * (STEM_overlay.png: the image with the masks in colour, half opacity);
 * and with --rle, rows of a CSV in the Kaggle clouds submission layout
 * `Image_Label,EncodedPixels` (IMAGEFILE_CLASS, RLE), one per image and class.
 *
 * Multi-label: probabilities = sigmoid(blended logits) > --threshold, then
 * components smaller than --min-size pixels are removed (8-connectivity).
 * With --rle-size HxW the CSV masks are made at that size: probabilities
 * area-resized, thresholded, components below --min-size removed (pixels
 * of the HxW grid, as the Kaggle clouds kernels count them); the PNGs stay
 * at full resolution, with --min-size scaled by the area ratio.
 * Class-index: argmax of the blended logits; --min-size removes small
 * components of every class but 0 (they become 0); CSV masks are the class
 * planes, nearest-resized with --rle-size.
 *
 * --output geotiff (auto: for .tif/.tiff inputs) streams instead: the TIFF
 * read block by block, STEM_mask.tif written a row of tiles at a time with
 * the input's georeference (infer/predict_raster.h), no size limit; small
 * components removed in a second pass over it; --rle refused.  --cog (or
 * --output cog) writes them as Cloud-Optimized GeoTIFFs: internal
 * overviews (the mask's mode, the probabilities' mean) and the COG layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/options.h"
#include "core/status.h"
#include "data/image.h"
#include "data/rle.h"
#include "infer/band_reader.h"
#include "infer/model_load.h"
#include "infer/overlay.h"
#include "infer/postprocess.h"
#include "infer/predict.h"
#include "infer/predict_raster.h"
#include "ops/conv_algo.h"

typedef struct predict_options {
    char checkpoint[TT_OPT_STRING_MAX];
    char input[TT_OPT_STRING_MAX];
    char out[TT_OPT_STRING_MAX];
    int tile[2];
    double overlap;
    char blend[TT_OPT_STRING_MAX];
    char pad[TT_OPT_STRING_MAX];
    int batch;
    double threshold;
    int min_size;
    char rle[TT_OPT_STRING_MAX];
    int rle_size[2];
    char mode[TT_OPT_STRING_MAX];
    char classes[TT_OPT_STRING_MAX];
    char device[TT_OPT_STRING_MAX];
    char backend[TT_OPT_STRING_MAX];
    char algo[TT_OPT_STRING_MAX];
    char precision[TT_OPT_STRING_MAX];
    int no_overlay;
    int quiet;
    int tta;                    /* tt_tta_kind */
    int threshold_given, min_size_given; /* else the checkpoint's per class, if it has them */
    int raw_weights;            /* --weights raw */
    char output[TT_OPT_STRING_MAX]; /* auto, png, geotiff or cog */
    char bands[TT_OPT_STRING_MAX];  /* "R,G,B" band numbers of a TIFF raster, or "" */
    int probabilities;
    int cog;                        /* --cog, or --output cog */
} predict_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(predict_options, field), meta, help, lo, hi, NULL}
#define CHOICE(name, field, meta, help, choices) \
    {name, TT_OPT_CHOICE, offsetof(predict_options, field), meta, help, 1, 0, choices}

static const tt_opt option_table[] = {
    OPT("checkpoint", TT_OPT_STRING, checkpoint, "FILE", "trained weights (safetensors)", 1, 0),
    OPT("input", TT_OPT_STRING, input, "IMG|DIR", "an image, or a folder of images", 1, 0),
    OPT("out", TT_OPT_STRING, out, "DIR", "folder for the masks and overlays (made if missing)", 1, 0),
    OPT("tile", TT_OPT_SIZE2, tile, "HxW", "tile size, multiples of 2^depth (default 512x512)", 1, 0),
    OPT("overlap", TT_OPT_DOUBLE, overlap, "X", "overlap of neighbouring tiles, 0 to 0.9 (default 0.5)", 0, 0.9),
    CHOICE("blend", blend, "KIND", "blend of overlapping tiles: gaussian or mean", "gaussian|mean"),
    CHOICE("pad", pad, "KIND", "padding where a tile leaves the image: reflect or zero", "reflect|zero"),
    OPT("batch", TT_OPT_INT, batch, "B", "tiles per forward pass (default 4)", 1, 4096),
    {"weights", TT_OPT_ENUM, offsetof(predict_options, raw_weights), "KIND", "ema (the moving average, where the checkpoint's run kept one: train --ema) or raw (default ema)", 1, 0, "ema|raw"},
    {"tta", TT_OPT_ENUM, offsetof(predict_options, tta), "KIND", TT_TTA_HELP " (default none)", 1, 0, TT_TTA_CHOICES},
    OPT("threshold", TT_OPT_DOUBLE, threshold, "P", "multi-label: probability above which a pixel is in, every class (default: the checkpoint's per class where its training searched them, else 0.5)", 0, 1),
    OPT("min-size", TT_OPT_INT, min_size, "N", "remove components smaller than N pixels, every class (default: the checkpoint's per class, else 0: keep all)", 0, 1e9),
    OPT("rle", TT_OPT_STRING, rle, "FILE.csv", "also write Kaggle RLE rows Image_Label,EncodedPixels", 1, 0),
    OPT("rle-size", TT_OPT_SIZE2, rle_size, "HxW", "size of the RLE masks, e.g. 350x525 (default: full)", 1, 0),
    CHOICE("mode", mode, "KIND", "auto (from the checkpoint), class-index or multi-label",
           "auto|class-index|multi-label"),
    OPT("classes", TT_OPT_STRING, classes, "A,B,..", "class names (default: from the checkpoint)", 1, 0),
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name", 1, 0),
    CHOICE("backend", backend, "NAME", TT_BACKEND_HELP, TT_BACKEND_CHOICES),
    CHOICE("algo", algo, "NAME", TT_CONV_ALGO_HELP, TT_CONV_ALGO_CHOICES),
    CHOICE("precision", precision, "P", "what the forward keeps between layers, stored in fp32 (default), fp16 or bf16 (as train --precision)", "fp32|fp16|bf16"),
    CHOICE("output", output, "KIND", "what a prediction is written as: png (mask PNGs and an overlay; the image decoded whole), geotiff (STEM_mask.tif, tiled and compressed, streamed: a raster of any size in a few rows of tiles of memory, its georeference kept), cog (geotiff as a Cloud-Optimized GeoTIFF: --cog), or auto (geotiff for .tif/.tiff inputs, else png; default)", "auto|png|geotiff|cog"),
    OPT("bands", TT_OPT_STRING, bands, "LIST", "the bands of a TIFF raster, counted from 1: for a model trained on raster bands as many as it was trained on (default: those, from the checkpoint), else three read as red, green and blue (e.g. 4,3,2; default: the first three, or the grey one)", 1, 0),
    OPT("cog", TT_OPT_FLAG, cog, NULL, "the GeoTIFF masks (and probabilities) as Cloud-Optimized GeoTIFFs: internal overviews at factors 2, 4, 8, ... until one fits a 256-pixel tile (a mask's most frequent class, nodata left out; probabilities' mean), directories first, the smallest overview's tiles next and the full resolution's last; still streamed", 1, 0),
    OPT("probabilities", TT_OPT_FLAG, probabilities, NULL, "--output geotiff: also STEM_prob.tif, each class's probability as a float32 band", 1, 0),
    OPT("no-overlay", TT_OPT_FLAG, no_overlay, NULL, "do not write overlay PNGs", 1, 0),
    OPT("quiet", TT_OPT_FLAG, quiet, NULL, "no line per image", 1, 0),
};
static const size_t option_count = sizeof option_table / sizeof option_table[0];

static void defaults(predict_options *o)
{
    memset(o, 0, sizeof *o);
    o->tile[0] = o->tile[1] = 512;
    o->overlap = 0.5;
    strcpy(o->blend, "gaussian");
    strcpy(o->pad, "reflect");
    strcpy(o->algo, "auto");
    strcpy(o->precision, "fp32");
    strcpy(o->backend, "auto");
    o->batch = 4;
    o->threshold = 0.5;
    strcpy(o->mode, "auto");
    strcpy(o->output, "auto");
}

/* Everything one run shares. */
typedef struct run_state {
    const predict_options *opts;
    tt_infer_model model;
    tt_infer_kind kind;
    char **names;              /* class names used in files and the CSV */
    char **own_names;          /* from --classes, freed at the end */
    tt_predict_options predict;
    FILE *csv;
    int bands[3];              /* --bands of an RGB model, 1-based; 0: the default */
    tt_band_norm band_norm;    /* a raster-band model's bands (--bands, else the checkpoint's) */
} run_state;

/* Decodes the image at path into interleaved RGB (*rgb malloc'd, the
 * caller frees it); any format data/image.h reads. */
static tt_status load_image(const char *path, int *w, int *h, uint8_t **rgb)
{
    tt_image image = {0};
    TT_TRY(tt_image_load(path, 0, &image));
    *w = image.width;
    *h = image.height;
    *rgb = image.pixels;
    return NULL;
}

/* "dir/a.b.jpg" -> "a.b.jpg" and stem "a.b". */
static void split_name(const char *path, char *file, size_t file_size, char *stem, size_t stem_size)
{
    const char *slash = strrchr(path, '/');
    snprintf(file, file_size, "%s", slash ? slash + 1 : path);
    snprintf(stem, stem_size, "%s", file);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = '\0';
}

/* A class name fit for a file name: '/' and spaces become '_'. */
static void safe_name(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s", name);
    for (char *p = out; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
}

static tt_status write_png(const char *dir, const char *stem, const char *suffix, int w, int h,
                           int channels, const uint8_t *pixels)
{
    char path[3 * TT_OPT_STRING_MAX + 16];
    snprintf(path, sizeof path, "%s/%s_%s.png", dir, stem, suffix);
    return tt_image_write_png(path, w, h, channels, pixels);
}

/* One CSV row: "FILE_CLASS,RLE" of a plane. */
static tt_status csv_row(run_state *rs, const char *file, int c, const uint8_t *plane, int w,
                         int h)
{
    char *text = NULL;
    TT_TRY(tt_rle_encode(plane, w, h, &text));
    fprintf(rs->csv, "%s_%s,%s\n", file, rs->names[c], text);
    free(text);
    if (ferror(rs->csv))
        return tt_error_new(TT_ERR_IO, "cannot write %s; check the disk has room", rs->opts->rle);
    return NULL;
}

static tt_status finish_multi_label(run_state *rs, const char *file, const char *stem, int w,
                                    int h, const uint8_t *rgb, float *probs)
{
    const predict_options *o = rs->opts;
    int classes = rs->model.spec.classes, rw = o->rle_size[1], rh = o->rle_size[0];
    size_t pixels = (size_t)w * h;
    tt_status status = NULL;
    uint8_t *masks = tt_malloc((size_t)classes * pixels), *view = tt_malloc(pixels * 3);
    float *small = rw ? tt_malloc((size_t)rw * rh * sizeof *small) : NULL;
    uint8_t *small_mask = rw ? tt_malloc((size_t)rw * rh) : NULL;
    if (!masks || !view || (rw && (!small || !small_mask))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for the masks", file);
        goto cleanup;
    }
    /* --min-size counts pixels of the RLE size: scaled to the full size;
     * the checkpoint's (the training run's search) counts full-size ones */
    double scale = rw ? (double)pixels / ((double)rw * rh) : 1.0;
    const float *class_threshold = o->threshold_given ? NULL : rs->model.class_threshold;
    const int *class_min_size = o->min_size_given ? NULL : rs->model.class_min_size;
    tt_mask_rule rule = {.multi_label = 1, .threshold = (float)o->threshold,
                         .min_size = (int)(o->min_size * scale + 0.5),
                         .class_threshold = class_threshold, .class_min_size = class_min_size};
    TT_CHECK(tt_predict_to_masks(probs, classes, w, h, &rule, masks));
    for (int c = 0; c < classes; c++) {
        uint8_t *m = masks + (size_t)c * pixels;
        const float *p = probs + (size_t)c * pixels;
        for (size_t i = 0; i < pixels; i++) view[i] = m[i] ? 255 : 0;
        char suffix[TT_OPT_STRING_MAX];
        safe_name(rs->names[c], suffix, sizeof suffix);
        TT_CHECK(write_png(o->out, stem, suffix, w, h, 1, view));
        if (!rs->csv) continue;
        if (!rw) {
            TT_CHECK(csv_row(rs, file, c, m, w, h));
            continue;
        }
        TT_CHECK(tt_pp_resize_area(p, w, h, small, rw, rh));
        tt_pp_threshold(small, (size_t)rw * rh,
                        class_threshold ? class_threshold[c] : (float)o->threshold, small_mask);
        int small_min = class_min_size ? (int)(class_min_size[c] / scale + 0.5) : o->min_size;
        TT_CHECK(tt_pp_remove_small(small_mask, rw, rh, small_min, 8, NULL));
        TT_CHECK(csv_row(rs, file, c, small_mask, rw, rh));
    }
    if (!o->no_overlay) {
        tt_overlay(rgb, pixels, classes, masks, NULL, view);
        TT_CHECK(write_png(o->out, stem, "overlay", w, h, 3, view));
    }
cleanup:
    free(masks);
    free(view);
    free(small);
    free(small_mask);
    return status;
}

static tt_status finish_class_index(run_state *rs, const char *file, const char *stem, int w,
                                    int h, const uint8_t *rgb, float *logits)
{
    const predict_options *o = rs->opts;
    int classes = rs->model.spec.classes, rw = o->rle_size[1], rh = o->rle_size[0];
    size_t pixels = (size_t)w * h;
    tt_status status = NULL;
    uint8_t *index = tt_malloc(pixels), *plane = tt_malloc(pixels), *view = tt_malloc(pixels * 3);
    uint8_t *small = rw ? tt_malloc((size_t)rw * rh) : NULL;
    if (!index || !plane || !view || (rw && !small)) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for the masks", file);
        goto cleanup;
    }
    tt_mask_rule rule = {.multi_label = 0, .threshold = (float)o->threshold, .min_size = o->min_size,
                         .class_min_size = o->min_size_given ? NULL : rs->model.class_min_size};
    TT_CHECK(tt_predict_to_masks(logits, classes, w, h, &rule, index));
    TT_CHECK(write_png(o->out, stem, "mask", w, h, 1, index));
    if (!o->no_overlay) {
        tt_overlay(rgb, pixels, classes, NULL, index, view);
        TT_CHECK(write_png(o->out, stem, "overlay", w, h, 3, view));
    }
    for (int c = 0; rs->csv && c < classes; c++) {
        for (size_t i = 0; i < pixels; i++) plane[i] = index[i] == c;
        if (rw) tt_pp_resize_nearest(plane, w, h, small, rw, rh);
        TT_CHECK(csv_row(rs, file, c, rw ? small : plane, rw ? rw : w, rw ? rh : h));
    }
cleanup:
    free(index);
    free(plane);
    free(view);
    free(small);
    return status;
}

/* Whether `path` ends in .tif or .tiff (any case). */
static int is_tiff(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (strcasecmp(dot, ".tif") == 0 || strcasecmp(dot, ".tiff") == 0);
}

/* Whether the image at path is written as GeoTIFF (--output). */
static int streams(const predict_options *o, const char *path)
{
    return strcmp(o->output, "geotiff") == 0 || strcmp(o->output, "cog") == 0 ||
           (strcmp(o->output, "auto") == 0 && is_tiff(path));
}

/* --output geotiff: a TIFF read block by block, any other image decoded
 * whole; STEM_mask.tif (and STEM_prob.tif) with the input's georeference. */
static tt_status predict_raster_one(run_state *rs, const char *path, const char *stem)
{
    const predict_options *o = rs->opts;
    tt_status status = NULL;
    tt_raster *raster = NULL;
    tt_georef georef = {0};
    uint8_t *rgb = NULL;
    int *min_size = NULL;
    tt_memory_image image = {0};
    tt_crop_reader reader;
    tt_band_reader band_reader;
    if (rs->band_norm.count) { /* a model of raster bands */
        TT_CHECK(tt_raster_open(path, &raster));
        TT_CHECK(tt_raster_georef(raster, &georef));
        TT_CHECK(tt_band_reader_init(&band_reader, raster, path, &rs->band_norm, &reader));
    } else if (is_tiff(path)) {
        TT_CHECK(tt_raster_open(path, &raster));
        if (rs->bands[0]) TT_CHECK(tt_raster_select_bands(raster, rs->bands));
        TT_CHECK(tt_raster_georef(raster, &georef));
        tt_raster_info info = tt_raster_get_info(raster);
        reader = (tt_crop_reader){raster, info.width, info.height, tt_raster_read_crop, NULL, 3};
    } else {
        status = load_image(path, &image.width, &image.height, &rgb);
        if (status) {
            status = tt_error_prefix(status, "%s", path);
            goto cleanup;
        }
        image.rgb = rgb;
        reader = tt_crop_reader_memory(&image);
    }
    char mask[3 * TT_OPT_STRING_MAX], prob[3 * TT_OPT_STRING_MAX];
    snprintf(mask, sizeof mask, "%s/%s_mask.tif", o->out, stem);
    snprintf(prob, sizeof prob, "%s/%s_prob.tif", o->out, stem);
    int classes = rs->model.spec.classes;
    if (o->min_size_given) {
        if (!(min_size = tt_malloc((size_t)classes * sizeof *min_size))) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
            goto cleanup;
        }
        for (int c = 0; c < classes; c++) min_size[c] = o->min_size;
    }
    tt_raster_output out = {
        .mask_path = mask, .prob_path = o->probabilities ? prob : NULL,
        .multi_label = rs->kind == TT_INFER_KIND_MULTI_LABEL, .threshold = (float)o->threshold,
        .cog = o->cog,
        .class_threshold = o->threshold_given ? NULL : rs->model.class_threshold,
        .min_size = o->min_size_given ? min_size : rs->model.class_min_size,
        .georef = tt_georef_present(&georef) ? &georef : NULL};
    /* the image's nodata value is not the mask's: a band model's nodata
     * pixels are 255 in a class-index mask, which says so; else none */
    int marks = rs->band_norm.count && band_reader.has_nodata && !out.multi_label;
    free(georef.nodata);
    georef.nodata = NULL;
    if (marks) {
        out.nodata_rows = tt_band_reader_nodata_rows, out.nodata_ctx = &band_reader;
        if (!(georef.nodata = tt_strdup("255"))) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
            goto cleanup;
        }
        out.georef = &georef;
    }
    /* the raster's own errors name the file; prediction's and the writers' the
     * image's size or the output */
    status = tt_predict_raster(rs->model.model, &reader, &rs->predict, &out);
    if (status) {
        status = tt_error_prefix(status, "%s", path);
        goto cleanup;
    }
    if (!o->quiet)
        printf("%s: %dx%d -> %s%s%s\n", path, reader.width, reader.height, mask,
               out.prob_path ? ", " : "", out.prob_path ? prob : "");
cleanup:
    tt_raster_close(raster);
    tt_georef_free(&georef);
    free(min_size);
    free(rgb);
    return status;
}

static tt_status predict_one(run_state *rs, const char *path)
{
    char file[TT_OPT_STRING_MAX], stem[TT_OPT_STRING_MAX];
    split_name(path, file, sizeof file, stem, sizeof stem);
    if (streams(rs->opts, path)) return predict_raster_one(rs, path, stem);
    int w = 0, h = 0;
    uint8_t *rgb = NULL;
    float *logits = NULL;
    tt_status status = NULL;
    TT_CHECK(load_image(path, &w, &h, &rgb));
    size_t floats = (size_t)rs->model.spec.classes * w * h;
    logits = tt_malloc(floats * sizeof *logits);
    if (!logits) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s (%dx%d): no host memory for %zu logits",
                              path, w, h, floats);
        goto cleanup;
    }
    tt_memory_image image = {rgb, w, h};
    tt_crop_reader reader = tt_crop_reader_memory(&image);
    TT_CHECK(tt_predict_image(rs->model.model, &reader, &rs->predict, logits));
    if (rs->kind == TT_INFER_KIND_MULTI_LABEL)
        TT_CHECK(finish_multi_label(rs, file, stem, w, h, rgb, logits));
    else
        TT_CHECK(finish_class_index(rs, file, stem, w, h, rgb, logits));
    if (!rs->opts->quiet) printf("%s: %dx%d\n", path, w, h);
cleanup:
    if (status) status = tt_error_prefix(status, "%s", path);
    free(rgb);
    free(logits);
    return status;
}

/* The images to predict: the input file, or the image files of the input
 * folder in sorted order.  *paths: count strings, each and the array free(). */
static tt_status list_inputs(const char *input, char ***paths, int *count)
{
    *paths = NULL;
    *count = 0;
    struct stat st;
    if (stat(input, &st) != 0)
        return tt_error_new(TT_ERR_IO, "--input %s: %s", input, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        char **list = tt_malloc(sizeof *list);
        if (!list || !(list[0] = tt_strdup(input))) {
            free(list);
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        *paths = list;
        *count = 1;
        return NULL;
    }
    char **names = NULL;
    int n = 0;
    tt_status status = tt_image_list_dir(input, &names, &n);
    if (status) return tt_error_prefix(status, "--input %s", input);
    if (n == 0) {
        free(names);
        return tt_error_new(TT_ERR_IO, "--input %s has no images (" TT_IMAGE_EXTENSIONS ")", input);
    }
    /* names to paths, in place */
    for (int i = 0; i < n; i++) {
        size_t len = strlen(input) + strlen(names[i]) + 2;
        char *path = tt_malloc(len);
        if (!path) {
            tt_image_free_names(names, n);
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        snprintf(path, len, "%s/%s", input, names[i]);
        free(names[i]);
        names[i] = path;
    }
    *paths = names;
    *count = n;
    return NULL;
}

/* --classes "a,b,c": exactly `classes` names. */
static tt_status parse_class_names(const char *text, int classes, char ***out)
{
    char **names = tt_calloc((size_t)classes, sizeof *names);
    if (!names) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    int n = 0;
    for (const char *p = text; *p && n <= classes;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n < classes && !(names[n] = strndup(p, len))) break;
        n++;
        p = comma ? comma + 1 : p + len;
    }
    if (n != classes || !names[classes - 1]) {
        for (int i = 0; i < classes; i++) free(names[i]);
        free(names);
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--classes '%s' names %d classes; the "
                            "checkpoint has %d", text, n, classes);
    }
    *out = names;
    return NULL;
}

/* --bands: three of an RGB model's raster (R, G, B); a raster-band model
 * takes as many as it was trained on, its checkpoint's by default.  Either
 * way every input must be a TIFF streamed into GeoTIFF. */
static tt_status choose_bands(const predict_options *o, run_state *rs, char **paths, int count)
{
    const tt_band_norm *trained = &rs->model.bands;
    int bands[TT_RASTER_MAX_BANDS], n = 0;
    if (o->bands[0])
        TT_TRY(tt_raster_bands_parse(o->bands, "--bands", bands, TT_RASTER_MAX_BANDS, &n));
    if (trained->count && n && n != trained->count)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--bands %s: the model %s was trained on %d "
                            "bands; give as many (or leave --bands out for the ones it was "
                            "trained on)", o->bands, o->checkpoint, trained->count);
    if (!trained->count && n && n != 3)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--bands %s: give three band numbers "
                            "counted from 1, read as R, G, B, e.g. --bands 4,3,2", o->bands);
    if (!trained->count && !n) return NULL;
    for (int i = 0; i < count; i++)
        if (!streams(o, paths[i]) || !is_tiff(paths[i]))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %s TIFF rasters, which stream into "
                                "GeoTIFF; this is not one (or give --output geotiff)", paths[i],
                                trained->count ? "the model was trained on raster bands: it reads"
                                               : "--bands picks bands of");
    if (!trained->count) {
        memcpy(rs->bands, bands, sizeof rs->bands);
        return NULL;
    }
    rs->band_norm = *trained;
    for (int c = 0; c < n; c++) rs->band_norm.bands[c] = bands[c];
    return NULL;
}

/* Every input predicted in turn; with --rle, its rows go to `csv` (the
 * atomic writer's file: the CSV is whole, or as it was, when one fails). */
typedef struct predict_job {
    run_state *rs;
    char **paths;
    int count;
} predict_job;

static tt_status predict_all(FILE *csv, void *ctx)
{
    predict_job *job = ctx;
    job->rs->csv = csv;
    if (csv) fprintf(csv, "Image_Label,EncodedPixels\n");
    tt_status status = NULL;
    for (int i = 0; i < job->count && !status; i++) status = predict_one(job->rs, job->paths[i]);
    job->rs->csv = NULL;
    return status;
}

static tt_status run(const predict_options *o, run_state *rs)
{
    tt_status status = NULL;
    tt_backend *be = NULL;
    char **paths = NULL;
    int count = 0;
    TT_CHECK(list_inputs(o->input, &paths, &count));
    int streamed = 0;
    for (int i = 0; i < count; i++) streamed += streams(o, paths[i]);
    if (streamed && o->rle[0]) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--rle encodes whole images' masks, and "
                              "%d input(s) stream into GeoTIFF (--output %s): give --output png "
                              "to decode them whole, or leave out --rle", streamed, o->output);
        goto cleanup;
    }
    if (o->cog && !streamed) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--cog writes the GeoTIFF masks of TIFF "
                              "inputs as COGs, and no input streams into GeoTIFF (--output %s): "
                              "give TIFF inputs, or --output cog", o->output);
        goto cleanup;
    }
    if (o->probabilities && !streamed) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--probabilities writes STEM_prob.tif "
                              "beside a GeoTIFF mask: give --output geotiff (or TIFF inputs)");
        goto cleanup;
    }
    if (mkdir(o->out, 0777) != 0 && errno != EEXIST) {
        status = tt_error_new(TT_ERR_IO, "cannot make --out %s: %s", o->out, strerror(errno));
        goto cleanup;
    }
    TT_CHECK(tt_cli_load_model(&(tt_cli_model_flags){o->backend, o->device, o->algo,
                                                     o->precision, o->checkpoint, o->batch,
                                                     o->tile[0], o->tile[1], o->raw_weights},
                               &be, &rs->model));
    TT_CHECK(choose_bands(o, rs, paths, count));
    int classes = rs->model.spec.classes;
    rs->names = rs->model.class_names;
    if (o->classes[0]) {
        TT_CHECK(parse_class_names(o->classes, classes, &rs->own_names));
        rs->names = rs->own_names;
    }
    rs->kind = strcmp(o->mode, "class-index") == 0   ? TT_INFER_KIND_CLASS_INDEX
               : strcmp(o->mode, "multi-label") == 0 ? TT_INFER_KIND_MULTI_LABEL
                                                     : rs->model.kind;
    if (rs->kind == TT_INFER_KIND_UNKNOWN)
        rs->kind = o->rle[0] ? TT_INFER_KIND_MULTI_LABEL : TT_INFER_KIND_CLASS_INDEX;
    rs->predict = tt_predict_options_default();
    rs->predict.overlap = o->overlap;
    rs->predict.batch = o->batch;
    rs->predict.tta = (tt_tta_kind)o->tta;
    TT_CHECK(tt_blend_kind_parse(o->blend, &rs->predict.blend));
    TT_CHECK(tt_pad_kind_parse(o->pad, &rs->predict.pad));
    memcpy(rs->predict.mean, rs->model.mean, sizeof rs->predict.mean);
    memcpy(rs->predict.std, rs->model.std, sizeof rs->predict.std);
    if (!o->quiet)
        printf("%d image(s), %s model, %d classes, tile %dx%d, overlap %g, %s blend\n", count,
               rs->kind == TT_INFER_KIND_MULTI_LABEL ? "multi-label" : "class-index", classes,
               o->tile[0], o->tile[1], o->overlap, o->blend);
    predict_job job = {rs, paths, count};
    status = o->rle[0] ? tt_file_write_atomic(o->rle, predict_all, &job)
                       : predict_all(NULL, &job);
cleanup:
    for (int i = 0; i < count; i++) free(paths[i]);
    free(paths);
    if (rs->own_names)
        for (int c = 0; c < rs->model.spec.classes; c++) free(rs->own_names[c]);
    free(rs->own_names);
    tt_infer_model_free(&rs->model);
    tt_backend_destroy(be);
    return status;
}

int tt_cmd_predict(int argc, char **argv)
{
    predict_options o;
    defaults(&o);
    int help = 0;
    unsigned char given[sizeof option_table / sizeof option_table[0]];
    tt_status status = tt_opt_parse_args_given(option_table, option_count, &o, argc, argv, 1,
                                               &help, given);
    if (strcmp(o.output, "cog") == 0) o.cog = 1;
    o.threshold_given = given[tt_opt_index(option_table, option_count, "threshold")];
    o.min_size_given = given[tt_opt_index(option_table, option_count, "min-size")];
    if (status) {
        int rc = tt_cli_usage_error("predict", "%s", tt_status_message(status));
        tt_status_free(status);
        return rc;
    }
    if (help) {
        printf("usage: tiletrain predict --checkpoint FILE --input IMG|DIR --out DIR [options]\n"
               "\n"
               "Predicts full-resolution masks with a sliding window of tiles whose logits are\n"
               "blended; writes mask PNGs, overlays and optionally Kaggle RLE rows, or, for\n"
               "TIFF and GeoTIFF rasters of any size, tiled GeoTIFF masks on the raster's own\n"
               "grid, streamed (--output).\n\n"
               "example:\n"
               "  tiletrain predict --checkpoint runs/a/best.safetensors --input clouds/test_images \\\n"
               "      --out predictions --tile 512x512 --overlap 0.5 --rle submission.csv \\\n"
               "      --min-size 10000 --rle-size 350x525\n"
               "  tiletrain predict --checkpoint runs/a/best.safetensors --input scene.tif \\\n"
               "      --out masks --tile 512x512 --probabilities\n"
               "  tiletrain predict --checkpoint runs/a/best.safetensors --input scene.tif \\\n"
               "      --out masks --cog     # STEM_mask.tif as a Cloud-Optimized GeoTIFF\n\n");
        tt_opt_print_help(option_table, option_count, stdout);
        return 0;
    }
    if (!o.checkpoint[0] || !o.input[0] || !o.out[0])
        return tt_cli_usage_error("predict", "--checkpoint, --input and --out are required");
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.opts = &o;
    status = run(&o, &rs);
    return status ? tt_cli_fail(status) : 0;
}
