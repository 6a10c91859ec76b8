/*
 * --loss: the training loss as a weighted sum of terms, and
 * --class-weights: a weight per class that every term applies.
 *
 *   SPEC  = auto | TERM ( "+" TERM )*
 *   TERM  = [ WEIGHT "*" ] NAME ( ":" KEY "=" VALUE )*
 *
 * e.g. "bce+0.5*dice", "focal:gamma=2:alpha=0.25", "ce+tversky:alpha=0.3:beta=0.7",
 * "bce+dice:reduce=window".  The names, the mask kinds each takes and
 * their keys are one table (loss_spec.c).  "auto" is BCE for multi-label
 * masks and cross-entropy for class-index masks.
 *
 * Every term is normalised so that a window of N micro-batches of B images
 * gives the loss (and gradient) of one batch of N*B images, across ranks
 * too: its normaliser (valid elements, valid pixels, the class weights of
 * valid pixels, or images) is counted on the host over the whole window
 * before its first micro-batch (tt_loss_count), and a term reduced over
 * the window (dice/tversky with reduce=window) gathers the window's sums
 * in a forward pass before the backward pass (tt_loss_spec_two_pass).
 */
#ifndef TT_TRAIN_LOSS_SPEC_H
#define TT_TRAIN_LOSS_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/source.h"

#define TT_LOSS_TERMS_MAX 4
#define TT_LOSS_CLASSES_MAX 256

typedef enum tt_loss_kind {
    TT_LOSS_BCE,      /* sigmoid binary cross-entropy (multi-label) */
    TT_LOSS_CE,       /* softmax cross-entropy (class index) */
    TT_LOSS_FOCAL,    /* sigmoid focal loss (both; class index: one per class, summed) */
    TT_LOSS_DICE,     /* soft Dice (both: sigmoid / softmax) */
    TT_LOSS_TVERSKY,  /* Tversky (both) */
    TT_LOSS_LOVASZ,   /* Lovász hinge (multi-label) / Lovász softmax (class index) */
    TT_LOSS_KIND_COUNT
} tt_loss_kind;

/* What a term's sum is divided by: counted on the host per window. */
typedef enum tt_loss_normaliser {
    TT_NORMALISE_ITEMS,    /* valid elements (multi-label) or valid pixels (class index) */
    TT_NORMALISE_WEIGHTS,  /* class index: the class weights of the valid pixels (PyTorch's
                              weighted cross-entropy); multi-label: as ITEMS */
    TT_NORMALISE_IMAGES,   /* images of the window */
    TT_NORMALISE_ONE,      /* a ratio of the window's sums: already a mean */
} tt_loss_normaliser;

typedef struct tt_loss_term {
    tt_loss_kind kind;
    double weight;          /* its factor in the sum, > 0 */
    double gamma, alpha;    /* focal: gamma >= 0, alpha in [0, 1] or < 0 for none;
                               tversky: alpha (false positives) */
    double beta;            /* tversky: false negatives */
    double smooth;          /* dice / tversky, > 0 */
    int per_window;         /* dice / tversky: one region per class over the window
                               (reduce=window) rather than per (image, class) */
} tt_loss_term;

typedef struct tt_loss_spec {
    int count;
    tt_loss_term terms[TT_LOSS_TERMS_MAX];
} tt_loss_spec;

/* The kind's name ("bce", "dice", ...). */
const char *tt_loss_kind_name(tt_loss_kind kind);
/* What the term's sum is divided by under this mask kind. */
tt_loss_normaliser tt_loss_term_normaliser(const tt_loss_term *term, tt_mask_kind kind);

/* Parses `text` for masks of `kind` ("auto" or "" gives the kind's
 * default).  Errors name --loss, the term and what to write instead. */
tt_status tt_loss_spec_parse(const char *text, tt_mask_kind kind, tt_loss_spec *out);
/* The shortest text that parses to `spec` (keys at their defaults left out). */
void tt_loss_spec_format(const tt_loss_spec *spec, char *text, size_t size);
/* 1 when a term needs the window's sums before its backward. */
int tt_loss_spec_two_pass(const tt_loss_spec *spec);

/* --class-weights "w0,w1,...": exactly `classes` finite values >= 0, not
 * all 0; "" gives all 1.  out holds TT_LOSS_CLASSES_MAX floats. */
tt_status tt_class_weights_parse(const char *text, int classes, float *out);

/* The normalisers of a window (summed over its micro-batches and ranks). */
typedef struct tt_loss_counts {
    double items;    /* valid elements (multi-label) or valid pixels (class index) */
    double weights;  /* class index: sum of the weights of the valid pixels' labels;
                        multi-label: = items */
    double images;
} tt_loss_counts;

/* counts += those of n images' labels (n, planes, hw) bytes: a label is
 * valid when it is not `ignore` and is a class (class index: < classes;
 * multi-label: 0 or 1).  weights: `classes` floats or NULL (all 1). */
void tt_loss_count(tt_loss_counts *counts, const uint8_t *labels, int n, int planes, size_t hw,
                   int classes, tt_mask_kind kind, int ignore, const float *weights);
/* The term's normaliser from the window's counts (0: nothing to divide). */
double tt_loss_counts_of(const tt_loss_counts *counts, const tt_loss_term *term,
                         tt_mask_kind kind);

#endif
