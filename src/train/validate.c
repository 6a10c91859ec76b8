/* Full-image validation through the tile cache; see validate.h. */
#include "train/validate.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"
#include "infer/overlay.h"
#include "infer/postprocess.h"

typedef struct cache_crop {
    tt_tilecache *cache;
    int index;
} cache_crop;

static tt_status read_crop(void *ctx, int x0, int y0, int w, int h, uint8_t *rgb)
{
    cache_crop *c = ctx;
    return tt_tilecache_read_image(c->cache, c->index, x0, y0, w, h, rgb);
}

void tt_validate_gallery_file(tt_tilecache *cache, int index, char *buf, size_t size)
{
    const tt_item_source *src = tt_tilecache_source(cache);
    size_t n = 0;
    for (const char *c = src->name(src->ctx, index); *c && n + 5 < size; c++)
        buf[n++] = *c == '/' ? '_' : *c;
    snprintf(buf + n, size - n, ".png");
}

/* GALLERY/NAME.png: the image with the true masks | with the predicted. */
static tt_status write_gallery(tt_tilecache *cache, int index, const char *dir, int w, int h,
                               int classes, int multi, const uint8_t *truth, const uint8_t *pred)
{
    size_t pixels = (size_t)w * h;
    char file[1024], path[4096];
    tt_validate_gallery_file(cache, index, file, sizeof file);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    tt_status status = NULL;
    uint8_t *rgb = tt_malloc(pixels * 3), *left = tt_malloc(pixels * 3), *right = tt_malloc(pixels * 3);
    if (!rgb || !left || !right) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "validation gallery: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_tilecache_read_image(cache, index, 0, 0, w, h, rgb));
    tt_overlay(rgb, pixels, classes, multi ? truth : NULL, truth, left);
    tt_overlay(rgb, pixels, classes, multi ? pred : NULL, pred, right);
    TT_CHECK(tt_overlay_write_pair(path, left, right, w, h, 480));
cleanup:
    free(rgb), free(left), free(right);
    return status;
}

static tt_status validate_one(tt_model *model, tt_tilecache *cache, int index,
                              const tt_validate_options *o, int gallery, tt_metrics *metrics)
{
    int w, h, classes = model->spec.classes;
    TT_TRY(tt_tilecache_item_size(cache, index, &w, &h));
    size_t pixels = (size_t)w * h;
    int planes = tt_tilecache_planes(cache);
    tt_status status = NULL;
    float *logits = tt_malloc(pixels * (size_t)classes * sizeof *logits);
    uint8_t *truth = tt_malloc(pixels * (size_t)planes);
    uint8_t *pred = tt_malloc(pixels * (size_t)(o->kind == TT_MASK_MULTI_LABEL ? classes : 1));
    if (!logits || !truth || !pred) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "validation: out of host memory for a %dx%d "
                              "image", w, h);
        goto cleanup;
    }
    cache_crop ctx = {cache, index};
    tt_crop_reader reader = {&ctx, w, h, read_crop, NULL, 3};
    TT_CHECK(tt_predict_image(model, &reader, &o->predict, logits));
    uint8_t pad = o->kind == TT_MASK_CLASS_INDEX ? 255 : 0;
    TT_CHECK(tt_tilecache_read_mask(cache, index, 0, 0, w, h, pad, truth));
    /* predict's rule, --min-size included: small components of a class
     * become background in a class-index mask, as predict makes them */
    int multi = o->kind == TT_MASK_MULTI_LABEL;
    tt_mask_rule rule = {.multi_label = multi, .threshold = o->threshold,
                         .min_size = o->min_size, .class_threshold = o->class_threshold,
                         .class_min_size = o->class_min_size};
    TT_CHECK(tt_predict_to_masks(logits, classes, w, h, &rule, pred));
    /* the search on the same probabilities (multi-label: the sigmoid is in
     * place now; class index: the logits, whose argmax it takes) */
    if (o->search) TT_CHECK(tt_pp_search_add(o->search, logits, truth, w, h));
    if (multi) tt_metrics_add_multi_label(metrics, pred, truth, pixels);
    else tt_metrics_add_class_index(metrics, pred, truth, pixels, TT_METRICS_IGNORE);
    if (gallery)
        TT_CHECK(write_gallery(cache, index, o->gallery_dir, w, h, classes,
                               o->kind == TT_MASK_MULTI_LABEL, truth, pred));
cleanup:
    free(logits), free(truth), free(pred);
    return status;
}

tt_status tt_validate(tt_model *model, tt_tilecache *cache, const int *items, int count,
                      const tt_validate_options *options, tt_metrics *metrics)
{
    for (int i = 0; i < count; i++) {
        int gallery = options->gallery_dir && i < options->gallery_max;
        tt_status s = validate_one(model, cache, items[i], options, gallery, metrics);
        if (s)
            return tt_error_prefix(s, "validating '%s'",
                                   tt_tilecache_source(cache)->name(tt_tilecache_source(cache)->ctx,
                                                                    items[i]));
    }
    return NULL;
}
