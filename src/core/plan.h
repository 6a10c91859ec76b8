/*
 * Liveness planning: places tensors with known lifetimes in as few bytes as
 * possible, so that memory whose tensor is dead is reused.
 *
 * Each item has a size and an interval of steps [first, last] during which
 * it must keep its bytes.  Two items may share bytes only when their
 * intervals do not meet.  Items are placed one by one, each at the lowest
 * offset that clears every overlapping item already placed, in a few
 * orders (largest first, as TFLite's and tinygrad's planners; largest
 * size x life; longest life; first born), and the order with the smallest
 * total is kept (ties: the earlier in that list).  Buffers are capped at
 * `max_buffer_bytes` (the device's largest single allocation): an item goes
 * into the first buffer with room under the cap, else a new buffer starts.
 * An item never straddles two buffers.  Pure host code: no device here.
 *
 * The lifetimes need not be written by hand: lay the items out end to end
 * (tt_plan_lay_out), each at its own offset of a virtual space, run the
 * work once with every tensor at its virtual place, and tell
 * tt_plan_touch which offsets each step touched: an item's life is then
 * its first and last touching step.
 */
#ifndef TT_CORE_PLAN_H
#define TT_CORE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

typedef struct tt_plan_item {
    const char *name;   /* for reports; not copied */
    size_t bytes;
    int first, last;    /* inclusive steps of life */
    /* results */
    int buffer;
    size_t offset;
} tt_plan_item;

#define TT_PLAN_MAX_BUFFERS 64

typedef struct tt_plan {
    int buffer_count;
    size_t buffer_bytes[TT_PLAN_MAX_BUFFERS];
    size_t total_bytes;     /* sum of buffer_bytes */
    size_t unplanned_bytes; /* sum of item bytes: what no reuse would take */
} tt_plan;

/* Places every item (offsets aligned to `alignment`, a power of two).  An
 * item above max_buffer_bytes is TT_ERR_TOO_LARGE naming it; an interval
 * with last < first is TT_ERR_INVALID_ARGUMENT. */
tt_status tt_plan_solve(tt_plan_item *items, int count, size_t alignment, size_t max_buffer_bytes,
                        tt_plan *plan);

/* Places the items one after another, in order, in one virtual space
 * (buffer 0; an aligned gap after each, so that no offset names two), and
 * gives each the empty life first = last = -1.  *span: the bytes that
 * takes. */
void tt_plan_lay_out(tt_plan_item *items, int count, size_t alignment, size_t *span);
/* Widens the life of the laid-out item whose bytes hold `offset` so that it
 * includes `step` (steps counted from 0).  Returns the item's index, or -1
 * when no item holds that offset. */
int tt_plan_touch(tt_plan_item *items, int count, size_t offset, int step);

#endif
