/*
 * Plain-C double-precision references of the losses (softmax cross-entropy,
 * sigmoid BCE, soft Dice) and of the device reductions, plus small helpers
 * the loss suites share (uint8 uploads, reading the loss block, running a
 * PyTorch cross-check).  Shapes and conventions as in src/ops/{softmax_ce,
 * bce,dice}.h; `ignore` is a uint8 value or -1 for none.
 */
#ifndef TT_TESTS_REF_LOSS_H
#define TT_TESTS_REF_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "ops/reduce.h"

/* Sum over valid pixels of logsumexp_c(x) - x_label; *count = valid pixels
 * (labels != ignore and < c).  dlogits (nullable) += d sum / d logits. */
double ref_softmax_ce(const double *logits, const uint8_t *labels, int n, int c, int hw,
                      int ignore, long *count, double *dlogits);

/* Sum over valid elements (targets 0/1, != ignore) of the BCE with logits;
 * *count = valid elements.  dlogits (nullable) += d sum / d logits. */
double ref_bce(const double *logits, const uint8_t *targets, size_t total, int ignore,
               long *count, double *dlogits);

/* Class weights (src/ops/reduce.h; weights: c doubles, NULL for every class
 * 1) over logits (n, c, hw): BCE weights an element by its plane's weight,
 * softmax cross-entropy a pixel by its label's (the counts stay unweighted). */
double ref_bce_weighted(const double *logits, const uint8_t *targets, int n, int c, int hw,
                        int ignore, const double *weights, long *count, double *dlogits);
double ref_softmax_ce_weighted(const double *logits, const uint8_t *labels, int n, int c, int hw,
                               int ignore, const double *weights, long *count, double *dlogits);

/* sum_n mean_c (1 - dice(n, c)), dice over valid pixels of each plane with
 * p = sigmoid(x).  dlogits (nullable) += d sum / d logits. */
double ref_dice(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                double smooth, double *dlogits);

/* sum_i x_i^2 in double */
double ref_sum_squares(const float *x, size_t n);

/* ---- helpers for the loss suites ---- */

/* A device copy of n bytes (fails the test on error). */
tt_buffer *ref_upload_u8(const uint8_t *host, size_t n, const char *name);
/* A zeroed 16-byte loss block. */
tt_buffer *ref_loss_block(void);

/* Runs /usr/bin/python3 on `script` with `dir` as its argument.  Returns 1
 * if it ran and exited 0; 0 after printing why (no python3 or no torch: the
 * script exits 77 when `import torch` fails). */
int ref_python(const char *script, const char *dir);
/* Writes / reads a raw binary file (fails the test on error). */
void ref_write_file(const char *dir, const char *name, const void *data, size_t bytes);
void ref_read_file(const char *dir, const char *name, void *data, size_t bytes);

#endif
