/*
 * Plain-C double-precision reference of the Tversky region loss
 * (src/ops/tversky.h): sigmoid or softmax probabilities, regions per image
 * or over the batch, class weights, ignored and invalid items; and the
 * random cases and device round trips of tests/test_tversky.c.
 */
#ifndef TT_TESTS_REF_TVERSKY_H
#define TT_TESTS_REF_TVERSKY_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "ops/tversky.h"

typedef struct ref_tversky_case {
    int n, c, hw;
    int ignore;            /* a uint8 value, or -1 for none */
    double alpha, beta, smooth;
    int softmax;           /* 1: labels (n, hw); 0: targets (n, c, hw) */
    int per_image;         /* 1: a region per (image, class); 0: per class */
    const double *weights; /* c class weights, or NULL: all 1 */
} ref_tversky_case;

/* The loss of src/ops/tversky.h: the sum over images (per_image; else over
 * one batch) of sum_k w_k (1 - score) / sum_k w_k.  *invalid (nullable) =
 * invalid targets (per element) or labels (per pixel).  dlogits (nullable,
 * (n, c, hw)) += d loss / d logits. */
double ref_tversky(const double *logits, const uint8_t *targets, const ref_tversky_case *k,
                   long *invalid, double *dlogits);

/* ---- the suite's cases ---- */

typedef struct ref_tversky_shape {
    int n, c, h, w;
    int ignore_fraction; /* percent of items ignored (255) */
} ref_tversky_shape;

/* A case: its shape and loss, host logits and targets, class weights. */
typedef struct ref_tversky_data {
    tt_loss_desc desc;  /* weights set by ref_tversky_upload */
    tt_tversky tv;
    size_t total, target_bytes;
    float *logits;      /* (n, c, h, w) */
    uint8_t *targets;   /* (n, c, h, w) 0/1, or labels (n, h, w) when softmax */
    double weights[8];  /* c of them, used when has_weights */
    int has_weights;
} ref_tversky_data;

/* Uniform logits in [-range, range), targets 0/1 with 30 % ones (labels
 * uniform over the classes when softmax), ignore_fraction percent 255; soft
 * Dice's alpha = beta = 0.5, smooth 1, no weights.  Free with
 * ref_tversky_free. */
ref_tversky_data ref_tversky_make(const ref_tversky_shape *s, int softmax, int per_image,
                                  uint64_t seed, float range);
void ref_tversky_free(ref_tversky_data *d);
/* The reference's view of a case. */
ref_tversky_case ref_tversky_case_of(const ref_tversky_data *d);

/* Device copies of a case. */
typedef struct ref_tversky_device {
    tt_buffer *logits, *targets, *weights;
} ref_tversky_device;
/* Uploads logits, targets and (when the case has them) the class weights,
 * which it sets in d->desc.  Fails the test on error. */
ref_tversky_device ref_tversky_upload(ref_tversky_data *d);
void ref_tversky_device_free(ref_tversky_device *b);
/* tt_tversky_forward into a cleared block, read back (invalid targets are
 * left for the caller to check). */
tt_loss_value ref_tversky_device_forward(ref_tversky_data *d);
/* `start` (NULL: zeros) after `times` tt_tversky_backward at `scale`;
 * malloc'd. */
float *ref_tversky_device_backward(ref_tversky_data *d, const float *start, float scale,
                                   int times);

#endif
