/*
 * The Lovász losses (Berman et al. 2018): a convex surrogate of the
 * Jaccard index per (image, class) plane, computed by sorting the plane's
 * errors on the device.
 *
 * logits (N, C, H, W) float.
 *  - hinge (softmax 0): multi-label targets (N, C, H, W) uint8 0/1.  Per
 *    plane: signs s = 2t - 1, errors e = 1 - x s, the Lovász extension of
 *    the Jaccard loss at relu(e), as lovasz_hinge of
 *    segmentation_models_pytorch (per_image=True), but per class
 *    plane: smp flattens an image's classes into one set, whereas the
 *    Jaccard this approximates is the per-class one the metrics report.
 *  - softmax (softmax 1): class-index labels (N, H, W) uint8, p = softmax
 *    over classes, per (image, class): errors |t_k - p_k| with
 *    t_k = (label == k), as lovasz_softmax with per_image=True; only the
 *    classes present in the image's valid labels count ("present").
 * For one plane, errors sorted in decreasing order e_(1) >= e_(2) >= ...,
 * with G = sum t over the plane's valid pixels and, at rank i, the
 * positives and negatives ranked at or before it: cp_i, cn_i,
 *
 *   J_i = 1 - (G - cp_i) / (G + cn_i)      (J_i = 0 when G + cn_i = 0)
 *   loss = sum_i f(e_(i)) (J_i - J_{i-1}),  J_0 = 0; f = relu (hinge),
 *                                            identity (softmax)
 *
 * Ties are ranked by pixel index (any order gives the same loss).  Ignored
 * pixels (desc->ignore) are left out of the plane.  Per image, the classes'
 * weighted mean (desc->weights; for softmax over the present classes only,
 * an image with none adds 0); summed over images, count N.
 */
#ifndef TT_OPS_LOVASZ_H
#define TT_OPS_LOVASZ_H

#include "ops/reduce.h"

/* result (tt_loss_value block) += (sum over images of the classes' weighted
 * mean, N, invalid targets / labels).  A workspace for the sort is
 * allocated and freed inside: tt_lovasz_workspace_bytes. */
tt_status tt_lovasz_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                            const tt_loss_desc *desc, int softmax);

/* dlogits += scale * d(sum)/d logits (a subgradient where errors tie or
 * sit at the hinge). */
tt_status tt_lovasz_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *desc, int softmax, float scale);

/* Bytes of the workspace either call allocates for this shape (memory
 * planning counts it). */
size_t tt_lovasz_workspace_bytes(const tt_loss_desc *desc, int softmax);

#endif
