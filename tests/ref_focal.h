/*
 * The plain-C double-precision reference of the sigmoid focal loss
 * (src/ops/focal.h), for the loss suites (the class-weighted BCE and
 * softmax cross-entropy are ref_loss.h's).
 * Logits are (n, c, hw); per-class targets (n, c, hw) and labels (n, hw)
 * uint8; `ignore` a uint8 value or -1 for none; `weights` c doubles, or
 * NULL for every class 1.  dlogits (nullable) += d sum / d logits.
 */
#ifndef TT_TESTS_REF_FOCAL_H
#define TT_TESTS_REF_FOCAL_H

#include <stddef.h>
#include <stdint.h>

/* The focal loss of one logit x and target t (0/1): a_t (1 - pt)^gamma
 * BCE(x, t), alpha < 0 for a_t = 1.  *grad (nullable) = d/dx, from the
 * textbook form a_t (p - t) [gamma (1 - pt)^(gamma-1) pt b + (1 - pt)^gamma]
 * (the kernels use an equivalent one). */
double ref_focal_term(double x, int t, double gamma, double alpha, double *grad);

/* Sum over valid items of the weighted focal terms; *count valid items,
 * *invalid items whose target is > 1 (class_index 0) or label >= c
 * (class_index 1) and not `ignore` (both nullable).  class_index 1: an item
 * is a pixel of `targets` (labels), the sum of its c planes' terms with
 * target (label == k). */
double ref_focal(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                 int class_index, double gamma, double alpha, const double *weights, long *count,
                 long *invalid, double *dlogits);

#endif
