/*
 * Small connected components removed from a mask that is made, and read
 * again, a band of rows at a time: the streamed GeoTIFF's --min-size, with
 * the result infer/postprocess.h gives on the whole mask.
 *
 * Pass 1 (tt_cc_stream_add, the rows top to bottom as they are made): each
 * row's runs of equal pixels get a label; a run joins (union-find, sizes
 * summed at the root) the runs of the row above it touches with the same
 * value, diagonals included (8-connectivity).  Pass 2 (tt_cc_stream_filter,
 * the same rows again in the same order): the runs are found again, so
 * they get the same labels, and a run whose component is smaller than its
 * class's minimum is cleared.  Memory: 12 bytes a run in the whole mask
 * (a labelled component of a cloud mask is a few runs a row) and two rows
 * of runs; never the mask.
 *
 * Masks are rows x width x planes bytes, planes interleaved:
 *   - class index (planes 1): a pixel of class c >= 1 in a component (of
 *     class c pixels) smaller than min_size[c] becomes 0; class 0 stays;
 *   - multi-label (planes = classes, 0 or nonzero): a nonzero pixel of
 *     plane c in a component smaller than min_size[c] becomes 0.
 */
#ifndef TT_INFER_COMPONENTS_STREAM_H
#define TT_INFER_COMPONENTS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

typedef struct tt_cc_stream tt_cc_stream;

/* A stream for masks `width` wide of `planes` planes; class_index: 1 for
 * a class-index mask (planes must be 1), 0 for multi-label planes. */
tt_status tt_cc_stream_new(int width, int planes, int class_index, tt_cc_stream **out);
void tt_cc_stream_free(tt_cc_stream *s);

/* Pass 1: the next `rows` rows of the mask. */
tt_status tt_cc_stream_add(tt_cc_stream *s, int rows, const uint8_t *mask);
/* Pass 2: the same rows again, in the same order, small components
 * cleared in place; min_size per class (class index: indexed by class)
 * or per plane, <= 1: kept.  The first call ends pass 1. */
tt_status tt_cc_stream_filter(tt_cc_stream *s, int rows, uint8_t *mask, const int *min_size);

/* Labels (runs) pass 1 made, for tests and messages. */
size_t tt_cc_stream_runs(const tt_cc_stream *s);

#endif
