/*
 * Masks drawn over images, for people to look at: `predict`'s overlay PNGs,
 * `data show`, and the validation gallery of report.html.
 *
 * Images are interleaved 8-bit RGB, row-major.  Multi-label masks are
 * `classes` planes of 0/nonzero bytes; class-index masks are one plane of
 * class values (0 = background, 255 = ignore).  Every picture uses the same
 * colour for the same class: colour k for multi-label class k (0-based) and
 * for class-index value k.
 */
#ifndef TT_INFER_OVERLAY_H
#define TT_INFER_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* The RGB colour of class k (12 distinct colours, then they repeat). */
const uint8_t *tt_overlay_colour(int k);

/* out = rgb with the masks blended in at half opacity (out may be rgb).
 * planes != NULL: multi-label, `classes` planes; a pixel in several classes
 * takes the mean of their colours.  Otherwise `index` (class-index): 0 stays
 * as it is, 255 is darkened, k takes colour k. */
void tt_overlay(const uint8_t *rgb, size_t pixels, int classes, const uint8_t *planes,
                const uint8_t *index, uint8_t *out);

/* dst = src (w x h RGB) shrunk by the integer `factor` >= 1 with a box
 * filter: ceil(w / factor) x ceil(h / factor) pixels, edge boxes partial. */
void tt_overlay_shrink(const uint8_t *src, int w, int h, int factor, uint8_t *dst);

/* Writes a PNG of two w x h RGB panels side by side (left | right), shrunk
 * so that each panel is at most max_width pixels wide, with a white gap.
 * TT_ERR_IO naming `path` when it cannot be written. */
tt_status tt_overlay_write_pair(const char *path, const uint8_t *left, const uint8_t *right, int w,
                                int h, int max_width);

#endif
