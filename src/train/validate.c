/* Full-image validation through the tile cache; see validate.h. */
#include "train/validate.h"

#include <stdlib.h>

#include "core/status.h"
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

static tt_status validate_one(tt_unet *u, tt_tilecache *cache, int index,
                              const tt_validate_options *o, tt_metrics *metrics)
{
    int w, h, classes = u->config.classes;
    TT_TRY(tt_tilecache_item_size(cache, index, &w, &h));
    size_t pixels = (size_t)w * h;
    int planes = tt_tilecache_planes(cache);
    tt_status status = NULL;
    float *logits = malloc(pixels * (size_t)classes * sizeof *logits);
    uint8_t *truth = malloc(pixels * (size_t)planes);
    uint8_t *pred = malloc(pixels * (size_t)(o->kind == TT_MASK_MULTI_LABEL ? classes : 1));
    if (!logits || !truth || !pred) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "validation: out of host memory for a %dx%d "
                              "image", w, h);
        goto cleanup;
    }
    cache_crop ctx = {cache, index};
    tt_crop_reader reader = {&ctx, w, h, read_crop};
    TT_CHECK(tt_predict_image(u, &reader, &o->predict, logits));
    uint8_t pad = o->kind == TT_MASK_CLASS_INDEX ? 255 : 0;
    TT_CHECK(tt_tilecache_read_mask(cache, index, 0, 0, w, h, pad, truth));
    if (o->kind == TT_MASK_MULTI_LABEL) {
        tt_predict_sigmoid(logits, classes, pixels);
        tt_pp_threshold(logits, pixels * (size_t)classes, o->threshold, pred);
        tt_metrics_add_multi_label(metrics, pred, truth, pixels);
    } else {
        tt_predict_argmax(logits, classes, pixels, pred);
        tt_metrics_add_class_index(metrics, pred, truth, pixels, TT_METRICS_IGNORE);
    }
cleanup:
    free(logits), free(truth), free(pred);
    return status;
}

tt_status tt_validate(tt_unet *unet, tt_tilecache *cache, const int *items, int count,
                      const tt_validate_options *options, tt_metrics *metrics)
{
    for (int i = 0; i < count; i++) {
        tt_status s = validate_one(unet, cache, items[i], options, metrics);
        if (s)
            return tt_error_prefix(s, "validating '%s'",
                                   tt_tilecache_source(cache)->name(tt_tilecache_source(cache)->ctx,
                                                                    items[i]));
    }
    return NULL;
}
