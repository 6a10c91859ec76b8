/*
 * Liveness planning: places tensors with known lifetimes in as few bytes as
 * possible, so that memory whose tensor is dead is reused.
 *
 * Each item has a size and an interval of steps [first, last] during which
 * it must keep its bytes.  Two items may share bytes only when their
 * intervals do not meet.  Items are placed largest first, each at the lowest
 * offset that clears every overlapping item already placed (greedy by size,
 * as TFLite's and tinygrad's planners).  Buffers are capped at
 * `max_buffer_bytes` (the device's largest single allocation): an item goes
 * into the first buffer with room under the cap, else a new buffer starts.
 * An item never straddles two buffers.  Pure host code: no device here.
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

#endif
