/*
 * Full-resolution prediction of one image with a sliding window.
 *
 * The image is read crop by crop through a callback (tt_crop_reader), so a
 * 10000 x 10000 image need not be decoded whole; tt_crop_reader_memory()
 * serves an image already in host memory.  For each tile of the plan
 * (infer/tiling.h) the crop under it is read, padded where the tile leaves
 * the image, normalised ((v / 255 - mean) / std per channel), and copied
 * into a host batch; `batch` tiles at a time (at most the model's
 * capacity) are uploaded into model->input and run forward in eval mode; the
 * logits come back and weight * logit is added into a band of rows on the
 * host.  As soon as no later tile reaches a row (tiles go row by row), its
 * pixels are divided by their summed weight and handed on (tt_predict_stream),
 * so that a raster of any height needs only a few rows of tiles in memory.
 *
 * What is blended: the LOGITS.  Probabilities are taken afterwards
 * (tt_predict_softmax for class-index models, tt_predict_sigmoid for
 * multi-label models); the class-index map is the argmax of the blended
 * logits, which equals the argmax of their softmax.
 *
 * Test-time augmentation (tta): each batch of tiles runs forward once per
 * view of the group (flip: the identity, left-right, top-bottom and both;
 * d4: the 4 quarter turns of each of the identity and the left-right flip,
 * square tiles only), each view's logits mapped back to the tile's frame
 * and averaged before they are blended, so probabilities and thresholds
 * see the mean logit.  Time: views x forwards; device memory: the same.
 *
 * Device memory: nothing is allocated on the device here; the model was
 * built for (capacity, tile) and its buffers bound everything, whatever the
 * image size.  Host memory: the band (classes x W floats a row, one row of
 * tiles: a batch stops at a row's end where the row holds a whole batch)
 * plus one batch of tiles;
 * tt_predict_image adds the caller's whole-image planes.
 */
#ifndef TT_INFER_PREDICT_H
#define TT_INFER_PREDICT_H

#include <stdint.h>

#include "infer/tiling.h"
#include "model/model.h"

/* Reads the w x h crop at (x0, y0) of an image, always inside it
 * (0 <= x0, x0 + w <= width, likewise y), into rgb (h * w * 3 bytes,
 * row-major, interleaved R G B).  Errors name the image. */
typedef tt_status (*tt_read_crop_fn)(void *ctx, int x0, int y0, int w, int h, uint8_t *rgb);
/* Reads the same crop as (channels, h, w) floats the model takes as they
 * are (already normalised: the options' mean and std are not applied). */
typedef tt_status (*tt_read_planes_fn)(void *ctx, int x0, int y0, int w, int h, float *planes);

typedef struct tt_crop_reader {
    void *ctx;
    int width, height;
    tt_read_crop_fn read_crop;     /* RGB images; NULL when read_planes is set */
    tt_read_planes_fn read_planes; /* a raster's bands instead (NULL: RGB) */
    int channels;                  /* read_planes' channels, the model's input */
} tt_crop_reader;

/* An image in host memory: height x width x 3 bytes, interleaved RGB,
 * row-major.  The reader borrows `rgb` (it must outlive the reader). */
typedef struct tt_memory_image {
    const uint8_t *rgb;
    int width, height;
} tt_memory_image;

/* A reader over `image` (borrowed: it must outlive the reader). */
tt_crop_reader tt_crop_reader_memory(const tt_memory_image *image);

/* Test-time augmentation: the views averaged (see above). */
typedef enum tt_tta_kind { TT_TTA_NONE, TT_TTA_FLIP, TT_TTA_D4 } tt_tta_kind;
#define TT_TTA_CHOICES "none|flip|d4"
#define TT_TTA_HELP "test-time augmentation: none, flip (4 views: the identity and the " \
    "flips) or d4 (8: quarter turns with and without a flip; square tiles), the views' " \
    "logits mapped back and averaged before the threshold (time x views)"

/* The views of a kind: 1, 4 or 8. */
int tt_tta_views(tt_tta_kind kind);

typedef struct tt_predict_options {
    double overlap;        /* [0, 1): 0.5 by default */
    tt_blend_kind blend;   /* gaussian by default */
    tt_pad_kind pad;       /* reflect by default */
    float mean[3], std[3]; /* after / 255; 0 and 1 by default (no change) */
    int batch;             /* tiles per forward; 0 = the model's capacity */
    tt_tta_kind tta;       /* none by default */
} tt_predict_options;

/* overlap 0.5, Gaussian blend, reflect padding, mean 0, std 1, batch 0, no TTA. */
tt_predict_options tt_predict_options_default(void);

/* Receives rows [y0, y0 + rows) of the blended logits, finished: class c's
 * row y0 + i is planes + c * stride + i * width (borrowed for the call). */
typedef tt_status (*tt_predict_rows_fn)(void *ctx, int y0, int rows, const float *planes,
                                        size_t stride);

/* Predicts the image that `reader` serves with the model's tile, handing
 * the blended logits to `sink` a band of rows at a time, top to bottom,
 * every row once; the same values tt_predict_image gives.  Errors: as
 * tt_predict_image's, and the sink's. */
tt_status tt_predict_stream(tt_model *model, const tt_crop_reader *reader,
                            const tt_predict_options *options, tt_predict_rows_fn sink, void *ctx);

/* Fills logits (classes x height x width floats, caller-owned) with the
 * blended logits of the image that `reader` serves, using the model's tile
 * (model->height x model->width).  Errors: TT_ERR_INVALID_ARGUMENT (options,
 * a model whose input is not 3 channels), the reader's and the device's
 * errors (prefixed "predicting WxH image"). */
tt_status tt_predict_image(tt_model *model, const tt_crop_reader *reader,
                           const tt_predict_options *options, float *logits);

/* Where view `view` of a kind's group takes pixel (x, y) of a w x h tile
 * (first a left-right flip, then top-bottom, then quarter turns
 * counter-clockwise; turns need w == h). */
void tt_tta_dest(tt_tta_kind kind, int view, int w, int h, int x, int y, int *dx, int *dy);

/* One pixel's probabilities from its logits, `stride` floats apart (class
 * c at logits[c * stride]), into p (classes): softmax across the classes,
 * or with multi_label the sigmoid of each.  The rule of the two below, and
 * of streamed masks (predict_raster.c). */
void tt_predict_pixel_probs(const float *logits, size_t stride, int classes, int multi_label,
                            float *p);
/* The class of the largest of one pixel's logits (the lowest on ties). */
int tt_predict_pixel_argmax(const float *logits, size_t stride, int classes);

/* In place over (classes, pixels) planes: softmax across classes per pixel;
 * sigmoid of every value (classes <= 256). */
void tt_predict_softmax(float *planes, int classes, size_t pixels);
void tt_predict_sigmoid(float *planes, int classes, size_t pixels);
/* index[p] = the class of the largest plane value at pixel p (the lowest
 * class on ties); classes <= 256. */
void tt_predict_argmax(const float *planes, int classes, size_t pixels, uint8_t *index);

#endif
