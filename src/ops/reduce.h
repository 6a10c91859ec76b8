/*
 * Reductions done on the device, so the host reads a few numbers instead of
 * an array: the sum of squares of a flat float array (the global gradient
 * norm), a count of non-finite elements (skip a step after an overflow), and
 * the small result block every loss reduces into.
 *
 * Both array reductions ADD into a device accumulator, so several arrays (the
 * gradient arena split over buffers) can be summed and read once.  Zero the
 * accumulator with tt_fill() / tt_loss_clear() first.
 */
#ifndef TT_OPS_REDUCE_H
#define TT_OPS_REDUCE_H

#include <stdint.h>

#include "backend/backend.h"

/* acc[0] += sum_i x[i]^2 over n floats; acc is one device float.  Two-stage
 * work-group reduction, deterministic for a given device; stage 1 keeps a
 * compensated sum per work-item.  n = 0 adds nothing.  A workspace of at most
 * TT_REDUCE_MAX_GROUPS floats is allocated and freed inside. */
tt_status tt_sum_squares(tt_backend *be, tt_mem acc, tt_mem x, size_t n);

/* count[0] += number of elements of x (n floats) that are NaN or +-Inf;
 * count is one device uint32. */
tt_status tt_count_nonfinite(tt_backend *be, tt_mem count, tt_mem x, size_t n);

/* ---- the result block of a loss ------------------------------------------
 * A loss ADDS into 4 device words: the sum of the loss over valid items
 * (float), the number of valid items (uint32, exact), the number of items
 * whose label/target is neither a class nor the ignore value (uint32; they
 * are skipped), and a reserved word.  Clear it once per accumulation window,
 * run the forwards of the window, read it once. */
typedef struct tt_loss_value {
    float sum;            /* sum of the loss over valid items */
    uint32_t count;       /* valid items (pixels, elements or images) */
    uint32_t invalid;     /* labels out of range: a data error */
    uint32_t reserved;
} tt_loss_value;

#define TT_LOSS_VALUE_BYTES 16

/* Sets the block at `result` to zero. */
tt_status tt_loss_clear(tt_backend *be, tt_mem result);
/* Reads the block (blocking).  A block with invalid > 0 is returned in *out
 * AND reported as TT_ERR_FORMAT naming `what` (the loss), because such labels
 * mean the masks do not match the class count. */
tt_status tt_loss_read(tt_backend *be, tt_mem result, const char *what, tt_loss_value *out);

/* The shape every loss takes: logits (n, c, h, w) floats; labels (n, h, w)
 * or targets (n, c, h, w) as uint8.  `ignore` is the label value whose items
 * are skipped (no loss, not counted, no gradient), or TT_LOSS_NO_IGNORE.
 * `weights`, when its buffer is set, is c floats on the device, one per
 * class (--class-weights): each loss multiplies the terms of class k by
 * weights[k] (an element of plane k; a pixel labelled k; a region loss's
 * class term, whose mean over classes becomes sum_k w_k term_k / sum_k w_k).
 * Counts stay unweighted: the trainer divides by the weighted normaliser it
 * counts on the host.  A zeroed struct would ignore class 0: start from
 * tt_loss_desc_make(). */
typedef struct tt_loss_desc {
    int n, c, h, w;
    int ignore;
    tt_mem weights; /* c floats, or {NULL, 0}: every class 1 */
} tt_loss_desc;

#define TT_LOSS_IGNORE_DEFAULT 255
#define TT_LOSS_NO_IGNORE (-1)

/* (n, c, h, w) with ignore = TT_LOSS_IGNORE_DEFAULT and no class weights. */
static inline tt_loss_desc tt_loss_desc_make(int n, int c, int h, int w)
{
    return (tt_loss_desc){n, c, h, w, TT_LOSS_IGNORE_DEFAULT, {NULL, 0}};
}

/* TT_ERR_INVALID_ARGUMENT naming `op` and the shape unless every size is
 * >= 1, n*c*h*w fits an int, ignore is -1 or in [0, 255], and weights (when
 * set) holds c floats. */
tt_status tt_loss_check(const char *op, const tt_loss_desc *desc);

/* ---- shared by the reduction kernels (losses included) ------------------- */

/* Most work-groups a stage-1 reduction launches. */
#define TT_REDUCE_MAX_GROUPS 512

/* The work-group size of the reductions on this device: the largest power of
 * two <= min(256, the device's maximum). */
int tt_reduce_group_size(const tt_backend *be);
/* The build options that go with it: "-DTT_WG=<size>". */
void tt_reduce_options(const tt_backend *be, char *options, size_t size);
/* Stage-1 work-groups for `items` items: ceil(items / group), at most max. */
int tt_reduce_groups(const tt_backend *be, size_t items, int max_groups);

/* Runs the stage-1 kernel `kernel` of opencl/loss.cl over `items` items, then
 * loss_finish, which ADDS the totals into the block at `result`.  The kernel's
 * parameters are the partial sums, counts and invalid counts (made here, in a
 * workspace freed before return) followed by `extra`. */
tt_status tt_loss_reduce(tt_backend *be, tt_mem result, const char *kernel, size_t items,
                         int extra_count, const tt_arg *extra);

#endif
