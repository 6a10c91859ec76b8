/*
 * Plain-C double-precision reference of the Lovász losses
 * (src/ops/lovasz.h): per (image, class) plane, the valid pixels' errors
 * sorted with qsort (decreasing, ties by pixel index), the Jaccard steps
 * J_i - J_{i-1} from their definition, and the gradient.
 */
#ifndef TT_TESTS_REF_LOVASZ_H
#define TT_TESTS_REF_LOVASZ_H

#include <stdint.h>

/* The forward's sum: over images of the weighted class mean (softmax: over
 * the classes present in the image's valid labels) of the planes' Lovász
 * losses.  logits (n, c, hw); targets (n, c, hw) 0/1 (hinge) or labels
 * (n, hw) (softmax); ignore a uint8 value or -1; weights c doubles or NULL
 * (all 1).  *invalid (nullable) = targets / labels out of range and not
 * ignored.  dlogits (nullable) += d sum / d logits (at ties and at the
 * hinge's kink, the subgradient of the kernels: relu'(0) = 0). */
double ref_lovasz(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                  int softmax, const double *weights, long *invalid, double *dlogits);

#endif
