/*
 * Sigmoid focal loss (Lin et al. 2017), per class plane, for both mask kinds.
 *
 * logits (N, C, H, W) float.  Multi-label (class_index 0): targets
 * (N, C, H, W) uint8 0/1, one item per element.  Class index (class_index
 * 1): labels (N, H, W) uint8, the target of plane k at a pixel is
 * (label == k), one item per pixel whose C terms are added (as
 * segmentation_models_pytorch's FocalLoss in multiclass mode: one binary
 * focal loss per class, summed over classes).  desc->ignore skips items;
 * desc->weights multiplies the terms of plane k by weights[k].
 *
 * With p = sigmoid(x), pt = p where t = 1 and 1 - p where t = 0,
 * b = BCE(x, t) = -log(pt) (computed as BCE is, finite for any finite x):
 *
 *   focal(x, t) = a_t (1 - pt)^gamma b,   a_t = alpha t + (1 - alpha)(1 - t)
 *
 * alpha < 0 means no alpha factor (a_t = 1).  gamma = 0 and no alpha give BCE.
 */
#ifndef TT_OPS_FOCAL_H
#define TT_OPS_FOCAL_H

#include "ops/reduce.h"

typedef struct tt_focal {
    float gamma;      /* >= 0; 2 is the usual */
    float alpha;      /* in [0, 1], or < 0 for none */
    int class_index;  /* 1: labels (N, H, W) against onehot planes; 0: targets (N, C, H, W) */
} tt_focal;

/* result (tt_loss_value block) += (sum of the loss over valid items, valid
 * items, invalid items: targets > 1, or labels >= C, that are not ignore). */
tt_status tt_focal_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                           const tt_loss_desc *desc, const tt_focal *focal);

/* dlogits (N, C, H, W) += scale * d(sum)/d logits at valid items: the
 * gradient of the forward's SUM, times scale. */
tt_status tt_focal_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                            const tt_loss_desc *desc, const tt_focal *focal, float scale);

#endif
