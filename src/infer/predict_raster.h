/*
 * Prediction of a raster of any size into (Geo)TIFF masks, streamed: the
 * sliding window's rows (tt_predict_stream) become mask rows as they are
 * finished and go straight into tiled, compressed TIFFs (data/raster.h),
 * so that host memory holds about two rows of tiles of the raster's width,
 * however tall it is.
 *
 * The masks follow the rule predict's PNGs follow (infer/postprocess.h):
 * class index: the argmax of the blended logits (lowest class on ties), one
 * band; multi-label: sigmoid > threshold per class, one 0/255 band per
 * class.  Small components are removed as there, in a second pass over
 * the mask as first written (infer/components_stream.h: PATH.pass1, gone
 * when PATH is written).  Probabilities,
 * on request, are a float32 band per class: softmax (class index) or
 * sigmoid (multi-label) of the blended logits.  As COGs the overviews are
 * made as the rows go by; with components removed, the first pass is a
 * plain GeoTIFF and the second writes the COG.
 */
#ifndef TT_INFER_PREDICT_RASTER_H
#define TT_INFER_PREDICT_RASTER_H

#include "data/raster.h"
#include "infer/predict.h"

typedef struct tt_raster_output {
    const char *mask_path;        /* required */
    const char *prob_path;        /* NULL: no probabilities */
    int multi_label;
    float threshold;              /* multi-label */
    const float *class_threshold; /* NULL, or per class in place of threshold */
    const int *min_size;          /* NULL, or per class: smaller components removed
                                     (class index: classes >= 1) */
    const tt_georef *georef;      /* NULL, or copied into both files */
    int cog;                      /* both files as Cloud-Optimized GeoTIFFs (data/raster.h:
                                     tt_raster_writer_open_cog): the mask's overviews
                                     its mode (nodata 255 left out for class indices),
                                     the probabilities' their mean */
    /* NULL, or marks the input's nodata pixels of rows [y0, y0 + rows)
     * (flags: rows x width, 1 = nodata): the mask gives them 255 (class
     * index: ignore) or 0 in every band (multi-label) */
    tt_status (*nodata_rows)(void *ctx, int y0, int rows, uint8_t *flags);
    void *nodata_ctx;
} tt_raster_output;

/* Predicts the image `reader` serves into the files `out` names (each
 * written whole or not at all: data/raster.h).  Errors: tt_predict_stream's,
 * the writers' (naming the file). */
tt_status tt_predict_raster(tt_model *model, const tt_crop_reader *reader,
                            const tt_predict_options *options, const tt_raster_output *out);

#endif
