/*
 * Soft Dice loss per image and class, through a sigmoid (multi-label masks).
 *
 * logits (N, C, H, W) float; targets (N, C, H, W) uint8 0/1; desc->ignore
 * (255 by default, or TT_LOSS_NO_IGNORE) drops an element from every sum.
 * For each image n and class c, over its valid pixels, with p = sigmoid(x):
 *
 *   dice(n, c) = (2 sum p t + smooth) / (sum p + sum t + smooth)
 *
 * smooth (TT_DICE_SMOOTH_DEFAULT = 1, the "smooth" of smp / nnU-Net variants;
 * must be > 0) keeps an empty plane finite: an all-background plane predicted
 * empty scores dice = 1.  The loss is reduced as
 *
 *   sum  = sum over images n of mean over classes c of (1 - dice(n, c))
 *   count = N (images)
 *
 * so sum / count over a window is the mean Dice loss per image and class, and
 * each image weighs the same whatever its size.
 */
#ifndef TT_OPS_DICE_H
#define TT_OPS_DICE_H

#include "ops/reduce.h"

#define TT_DICE_SMOOTH_DEFAULT 1.0f

/* result (tt_loss_value block) += (sum_n mean_c (1 - dice), N, number of
 * targets > 1 that are not `ignore`).  A workspace of a few floats per
 * (n, c) plane is allocated and freed inside. */
tt_status tt_dice_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                          const tt_loss_desc *desc, float smooth);

/* dlogits (N, C, H, W) += scale * d(sum)/d logits, where sum is the forward's
 * sum_n mean_c (1 - dice):  scale / C * (dice - 2 t) / (sum p + sum t +
 * smooth) * p (1 - p) at valid pixels.  Recomputes the per-plane sums (one
 * extra read of logits and targets), so it needs no state from the forward. */
tt_status tt_dice_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                           const tt_loss_desc *desc, float smooth, float scale);

#endif
