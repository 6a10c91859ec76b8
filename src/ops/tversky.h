/*
 * The Tversky family of region losses (soft Dice is one member), for both
 * mask kinds, reduced per image or over a whole batch, exact over an
 * accumulation window when its sums are gathered first.
 *
 * logits (N, C, H, W) float.  Probabilities p: sigmoid per element for
 * multi-label targets (N, C, H, W) uint8 0/1 (softmax 0), or softmax over
 * the C classes of a pixel for class-index labels (N, H, W) uint8 with
 * t_k = (label == k) (softmax 1).  Ignored items (desc->ignore) add nothing
 * to any sum and get no gradient; targets > 1 or labels >= C are invalid.
 *
 * A region is a (image n, class k) plane when per_image, else class k over
 * every image of the batch (or of a window: see tt_tversky_sums).  Over a
 * region's valid pixels, I = sum p t, P = sum p, T = sum t, and
 *
 *   score = (I + smooth) / (I + alpha (P - I) + beta (T - I) + smooth)
 *   term  = 1 - score
 *
 * alpha weighs false positives, beta false negatives (Salehi et al. 2017;
 * segmentation_models_pytorch's TverskyLoss).  Soft Dice is alpha = beta =
 * 0.5 with smooth / 2: (2 I + s) / (P + T + s), smp's DiceLoss.  The loss is
 * the classes' weighted mean, summed over images when per_image:
 *
 *   loss = sum over n (per_image; else one batch) of
 *          sum_k w_k term(n, k) / sum_k w_k      (w: desc->weights, or all 1)
 *
 * and its count is N when per_image, 1 otherwise.
 */
#ifndef TT_OPS_TVERSKY_H
#define TT_OPS_TVERSKY_H

#include "ops/reduce.h"

#define TT_TVERSKY_SMOOTH_DEFAULT 1.0f

typedef struct tt_tversky {
    float alpha, beta;  /* >= 0, alpha + beta > 0 */
    float smooth;       /* finite and > 0: an empty region stays finite (and scores 1) */
    int softmax;        /* 1: class-index labels, softmax probabilities; 0: multi-label, sigmoid */
    int per_image;      /* 1: a region per (n, k); 0: per class over the batch */
} tt_tversky;

/* Floats of the sums and of the stats buffers: 3 (I, P, T) and 2 (score,
 * denominator) per region; regions = N * C per image, else C. */
size_t tt_tversky_regions(const tt_loss_desc *desc, const tt_tversky *t);

/* sums (regions, 3) floats += this batch's (I, P, T) per region, and
 * invalid[0] (one uint32) += its invalid targets.  Calls over the micro-
 * batches of a window (not per_image) gather the window's sums; the caller
 * may add other ranks' sums before tt_tversky_finish. */
tt_status tt_tversky_sums(tt_backend *be, tt_mem sums, tt_mem invalid, tt_mem logits,
                          tt_mem targets, const tt_loss_desc *desc, const tt_tversky *t);

/* stats (regions, 2) = (score, denominator) from sums (regions, 3); with a
 * result block, result += (loss, per_image ? N : 1, invalid[0]).  result
 * may be {NULL, 0}: only the stats. */
tt_status tt_tversky_finish(tt_backend *be, tt_mem result, tt_mem stats, tt_mem sums,
                            tt_mem invalid, const tt_loss_desc *desc, const tt_tversky *t);

/* dlogits (N, C, H, W) += scale * d loss / d logits at valid pixels, the
 * regions' scores and denominators taken from `stats` (tt_tversky_finish's;
 * for a window, the window's, whatever batch `logits` is). */
tt_status tt_tversky_backward_with(tt_backend *be, tt_mem dlogits, tt_mem stats, tt_mem logits,
                                   tt_mem targets, const tt_loss_desc *desc,
                                   const tt_tversky *t, float scale);

/* One batch alone: sums, finish into result (a workspace made and freed
 * inside). */
tt_status tt_tversky_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *desc, const tt_tversky *t);
/* One batch alone: its sums recomputed, then tt_tversky_backward_with. */
tt_status tt_tversky_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                              const tt_loss_desc *desc, const tt_tversky *t, float scale);

#endif
