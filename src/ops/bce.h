/*
 * Sigmoid binary cross-entropy with logits, per class (multi-label masks).
 *
 * logits (N, C, H, W) float; targets (N, C, H, W) uint8 0/1 (one plane per
 * class, the mask's own format); desc->ignore (255 by default, or
 * TT_LOSS_NO_IGNORE) marks elements without a target.
 * loss(x, t) = max(x, 0) - x t + log1p(exp(-|x|)): finite and exact for any
 * finite logit, including |x| > 80 where exp overflows in the naive form.
 * Valid items are the elements whose target is not `ignore` (N*C*H*W when
 * none is ignored).  desc->weights, when set, multiplies the loss and the
 * gradient of an element of class plane k by weights[k] (PyTorch's
 * BCEWithLogitsLoss(weight=w.view(1, C, 1, 1))); the count stays
 * unweighted.  Without weights the results are bit for bit the unweighted
 * kernels'.
 */
#ifndef TT_OPS_BCE_H
#define TT_OPS_BCE_H

#include "ops/reduce.h"

/* result (tt_loss_value block) += (sum of the (weighted) loss over valid
 * elements, number of valid elements, number of targets > 1 that are not
 * `ignore`). */
tt_status tt_bce_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                         const tt_loss_desc *desc);

/* dlogits (N, C, H, W) += scale * w_k * (sigmoid(x) - t) at valid elements
 * (w_k = 1 without weights): the gradient of the SUM, times scale. */
tt_status tt_bce_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                          const tt_loss_desc *desc, float scale);

#endif
