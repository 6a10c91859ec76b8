/* Validation on raster pairs, streamed; see validate_raster.h. */
#include "train/validate_raster.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "infer/band_reader.h"

enum { TRUTH_ROWS = 16 };

/* The region's crops, read from the whole raster's reader. */
typedef struct region_reader {
    tt_crop_reader inner;
    int x0, y0;
} region_reader;

static tt_status read_region(void *ctx, int x0, int y0, int w, int h, float *planes)
{
    region_reader *r = ctx;
    return r->inner.read_planes(r->inner.ctx, r->x0 + x0, r->y0 + y0, w, h, planes);
}

typedef struct scorer {
    tt_raster_pair *pair;
    tt_raster_region region;
    int classes, channels;
    uint64_t *tp, *fp, *fn; /* (classes) */
    uint8_t *truth;         /* (TRUTH_ROWS, width) */
    float *image;           /* (channels, TRUTH_ROWS, width): read with the truth, unused */
} scorer;

static tt_status score_rows(void *ctx, int y0, int rows, const float *planes, size_t stride)
{
    scorer *s = ctx;
    int w = s->region.width;
    for (int r = 0; r < rows; r += TRUTH_ROWS) {
        int n = rows - r < TRUTH_ROWS ? rows - r : TRUTH_ROWS;
        TT_TRY(tt_raster_pair_read(s->pair, s->region.x0, s->region.y0 + y0 + r, w, n, NULL, NULL,
                                   s->image, s->truth, NULL, NULL));
        for (size_t i = 0; i < (size_t)n * w; i++) {
            int truth = s->truth[i];
            if (truth == TT_METRICS_IGNORE) continue;
            int pred = tt_predict_pixel_argmax(planes + (size_t)r * w + i, stride, s->classes);
            if (pred == truth) {
                s->tp[truth]++;
                continue;
            }
            s->fp[pred]++;
            if (truth < s->classes) s->fn[truth]++;
        }
    }
    return NULL;
}

/* One region: predicted, scored, added as one image. */
static tt_status validate_region(tt_model *model, tt_raster_set *set, const tt_raster_region *rg,
                                 const tt_band_norm *norm, int mask_nodata,
                                 const tt_predict_options *predict, tt_metrics *metrics)
{
    tt_status status = NULL;
    tt_raster_pair *source = tt_raster_set_pair(set, rg->scene);
    const char *image_path = tt_raster_pair_image_path(source);
    tt_raster_pair_options po = {norm->bands, norm->count, mask_nodata};
    int classes = metrics->classes;
    scorer s = {NULL, *rg, classes, norm->count, NULL, NULL, NULL, NULL, NULL};
    tt_raster *raster = NULL;
    tt_band_reader bands;
    region_reader region = {{0}, rg->x0, rg->y0};
    TT_CHECK(tt_raster_pair_open(image_path, tt_raster_pair_mask_path(source), &po, &s.pair));
    TT_CHECK(tt_raster_open(image_path, &raster));
    TT_CHECK(tt_band_reader_init(&bands, raster, image_path, norm, &region.inner));
    s.tp = tt_calloc((size_t)classes * 3, sizeof *s.tp);
    s.truth = tt_malloc((size_t)TRUTH_ROWS * rg->width);
    s.image = tt_malloc((size_t)TRUTH_ROWS * rg->width * norm->count * sizeof *s.image);
    if (!s.tp || !s.truth || !s.image) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", image_path);
        goto cleanup;
    }
    s.fp = s.tp + classes, s.fn = s.fp + classes;
    tt_crop_reader reader = {&region, rg->width, rg->height, NULL, read_region, norm->count};
    status = tt_predict_stream(model, &reader, predict, score_rows, &s);
    if (status) {
        status = tt_error_prefix(status, "%s", image_path);
        goto cleanup;
    }
    tt_metrics_add_counts(metrics, s.tp, s.fp, s.fn);
cleanup:
    tt_raster_pair_close(s.pair);
    tt_raster_close(raster);
    free(s.tp);
    free(s.truth);
    free(s.image);
    return status;
}

tt_status tt_validate_raster(tt_model *model, tt_raster_set *set, const tt_raster_region *regions,
                             int count, const tt_band_norm *norm, int mask_nodata,
                             const tt_predict_options *predict, tt_metrics *metrics)
{
    for (int i = 0; i < count; i++)
        TT_TRY(validate_region(model, set, &regions[i], norm, mask_nodata, predict, metrics));
    return NULL;
}
