/*
 * Turning predicted logits and probabilities into masks fit for a
 * submission: the one logits-to-mask rule that validation and predict
 * share, thresholding, removal of small connected components, and resizing.
 *
 * Masks are planes of height x width bytes, row-major, 0 = outside and
 * nonzero = inside (the functions here write 0 and 1).  Connected
 * components use 8-connectivity by default (4 on request); the search is an
 * explicit queue, never recursion, so 10000 x 10000 masks are fine.
 * Resizing: nearest neighbour for masks (pixel centres: source index
 * floor((i + 0.5) * src / dst)), area averaging for probabilities (each
 * output pixel is the mean of the source area it covers, fractional pixels
 * weighted by their share, as OpenCV's INTER_AREA when shrinking).
 */
#ifndef TT_INFER_POSTPROCESS_H
#define TT_INFER_POSTPROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* How logits become masks. */
typedef struct tt_mask_rule {
    int multi_label; /* 1: one 0/1 plane per class (sigmoid); 0: one class-index plane (argmax) */
    float threshold; /* multi-label: probability above which a pixel is in */
    int min_size;    /* connected components (8-connectivity) under this many pixels are removed;
                        <= 1: none */
    /* per class, where a search chose them (infer/pp_search.h): NULL, or one
     * value per class in place of threshold / min_size */
    const float *class_threshold;
    const int *class_min_size;
} tt_mask_rule;

/* Logits (classes planes of height x width floats) to masks.  Multi-label:
 * the logits become probabilities in place (sigmoid), then masks gets
 * `classes` planes of probs > threshold with small components cleared.
 * Class index: masks gets one plane of argmax indices, and pixels of a
 * class >= 1 in a small component become 0 (background).  Needs
 * height x width scratch bytes and more for the component search
 * (TT_ERR_OUT_OF_MEMORY otherwise). */
tt_status tt_predict_to_masks(float *logits, int classes, int width, int height, const tt_mask_rule *rule,
                              uint8_t *masks);

/* mask[i] = probs[i] > threshold (1 or 0), for `count` values. */
void tt_pp_threshold(const float *probs, size_t count, float threshold, uint8_t *mask);

/* Clears (in place) every connected component of nonzero pixels with fewer
 * than min_size pixels; connectivity is 4 or 8.  Kept pixels become 1.
 * *kept_pixels (may be NULL) receives the pixels left.  Needs
 * width * height * 4 bytes of scratch (TT_ERR_OUT_OF_MEMORY otherwise). */
tt_status tt_pp_remove_small(uint8_t *mask, int width, int height, int min_size,
                             int connectivity, size_t *kept_pixels);

/* Calls visit(ctx, mask, pixels, count) once for each connected component
 * of nonzero pixels (connectivity 4 or 8), `pixels` its indices, in the
 * order of each component's first pixel; visit may set mask[p] = 0 for
 * them (the component removed).  The mask is left 0/1.  Needs width *
 * height * 4 bytes of scratch (TT_ERR_OUT_OF_MEMORY otherwise). */
typedef void (*tt_pp_visit_fn)(void *ctx, uint8_t *mask, const uint32_t *pixels, size_t count);
tt_status tt_pp_components(uint8_t *mask, int width, int height, int connectivity,
                           tt_pp_visit_fn visit, void *ctx);

/* Nearest-neighbour resize of a byte plane (any values, e.g. class
 * indices) from sw x sh to dw x dh (all >= 1). */
void tt_pp_resize_nearest(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

/* Area-averaging resize of a float plane from sw x sh to dw x dh (all
 * >= 1).  Needs a little scratch (TT_ERR_OUT_OF_MEMORY otherwise). */
tt_status tt_pp_resize_area(const float *src, int sw, int sh, float *dst, int dw, int dh);

#endif
