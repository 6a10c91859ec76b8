/*
 * Softmax cross-entropy over classes, for multi-class segmentation.
 *
 * logits (N, C, H, W) float; labels (N, H, W) uint8 class indices (the mask's
 * own format), desc->ignore (255 by default) marks pixels without a label.
 * loss(pixel) = log(sum_c exp(x_c)) - x_label, computed with the maximum
 * subtracted.  Valid items are the pixels whose label is not `ignore`.
 * desc->weights, when set, multiplies a pixel's loss and gradient by
 * weights[label] (PyTorch's CrossEntropyLoss(weight=w) before its division
 * by the sum of the pixels' weights); the count stays unweighted.  Without
 * weights the results are bit for bit the unweighted kernels'.
 */
#ifndef TT_OPS_SOFTMAX_CE_H
#define TT_OPS_SOFTMAX_CE_H

#include "ops/reduce.h"

/* result (tt_loss_value block) += (sum of the (weighted) loss over valid
 * pixels, number of valid pixels, number of labels >= C that are not
 * `ignore`).  Reduced on the device; the host reads the block with
 * tt_loss_read(). */
tt_status tt_softmax_ce_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem labels,
                                const tt_loss_desc *desc);

/* dlogits (N, C, H, W) += scale * d(sum of the loss)/d logits, that is
 * scale * w_label * (softmax(x) - onehot(label)) at valid pixels (w = 1
 * without weights) and nothing elsewhere.
 * The gradient of the SUM: the trainer passes scale = 1 / (valid items of
 * the window), or scales later. */
tt_status tt_softmax_ce_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem labels,
                                 const tt_loss_desc *desc, float scale);

#endif
