/* Greedy liveness planning in a few orders, the best kept; see plan.h. */
#include "core/plan.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"

static int by_size_desc(const void *a, const void *b)
{
    const tt_plan_item *x = *(tt_plan_item *const *)a, *y = *(tt_plan_item *const *)b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first; /* stable enough: earlier first */
}

static int by_offset(const void *a, const void *b)
{
    const tt_plan_item *x = *(tt_plan_item *const *)a, *y = *(tt_plan_item *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/* The lowest aligned offset in `buffer` where `item` clears every placed
 * item that is alive at the same time. */
static size_t lowest_fit(tt_plan_item **placed, int nplaced, const tt_plan_item *item, int buffer,
                         size_t alignment, tt_plan_item **scratch)
{
    int n = 0;
    for (int i = 0; i < nplaced; i++) {
        const tt_plan_item *p = placed[i];
        if (p->buffer == buffer && p->first <= item->last && item->first <= p->last)
            scratch[n++] = placed[i];
    }
    qsort(scratch, (size_t)n, sizeof *scratch, by_offset);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (offset + item->bytes <= scratch[i]->offset) break; /* fits in the gap */
        size_t end = align_up(scratch[i]->offset + scratch[i]->bytes, alignment);
        if (end > offset) offset = end;
    }
    return offset;
}

/* Other orders to place in: greedy by size leaves gaps that another order
 * fills (a tensor of a block's backward between two long-lived halves);
 * the smallest total of them all is kept. */
static int by_area_desc(const void *a, const void *b)
{
    const tt_plan_item *x = *(tt_plan_item *const *)a, *y = *(tt_plan_item *const *)b;
    double ax = (double)x->bytes * (x->last - x->first + 1);
    double ay = (double)y->bytes * (y->last - y->first + 1);
    if (ax != ay) return ax < ay ? 1 : -1;
    return by_size_desc(a, b);
}

static int by_life_desc(const void *a, const void *b)
{
    const tt_plan_item *x = *(tt_plan_item *const *)a, *y = *(tt_plan_item *const *)b;
    int lx = x->last - x->first, ly = y->last - y->first;
    if (lx != ly) return lx < ly ? 1 : -1;
    return by_size_desc(a, b);
}

static int by_first(const void *a, const void *b)
{
    const tt_plan_item *x = *(tt_plan_item *const *)a, *y = *(tt_plan_item *const *)b;
    if (x->first != y->first) return x->first - y->first;
    return by_size_desc(a, b);
}

/* Places the items in `order`, each at its lowest fit; plan gets the
 * buffers' sizes. */
static tt_status place(tt_plan_item **order, int count, size_t alignment,
                       size_t max_buffer_bytes, tt_plan_item **placed, tt_plan_item **scratch,
                       tt_plan *plan)
{
    int nplaced = 0;
    for (int i = 0; i < count; i++) {
        tt_plan_item *item = order[i];
        int b = 0;
        for (;; b++) {
            if (b == plan->buffer_count) {
                if (b == TT_PLAN_MAX_BUFFERS)
                    return tt_error_new(TT_ERR_TOO_LARGE, "memory plan: more than %d buffers",
                                        TT_PLAN_MAX_BUFFERS);
                plan->buffer_count++;
            }
            item->buffer = b;
            size_t offset = lowest_fit(placed, nplaced, item, b, alignment, scratch);
            if (offset + item->bytes <= max_buffer_bytes) {
                item->offset = offset;
                break;
            }
        }
        if (item->offset + item->bytes > plan->buffer_bytes[b])
            plan->buffer_bytes[b] = item->offset + item->bytes;
        placed[nplaced++] = item;
    }
    for (int b = 0; b < plan->buffer_count; b++) plan->total_bytes += plan->buffer_bytes[b];
    return NULL;
}

tt_status tt_plan_solve(tt_plan_item *items, int count, size_t alignment, size_t max_buffer_bytes,
                        tt_plan *plan)
{
    TT_ASSERT(alignment && (alignment & (alignment - 1)) == 0);
    *plan = (tt_plan){0};
    size_t n = (size_t)(count ? count : 1);
    tt_plan_item **order = tt_malloc(sizeof *order * n);
    tt_plan_item **placed = tt_malloc(sizeof *placed * n);
    tt_plan_item **scratch = tt_malloc(sizeof *scratch * n);
    tt_plan_item *best_items = tt_malloc(sizeof *best_items * n);
    tt_status status = NULL;
    if (!order || !placed || !scratch || !best_items) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
        goto cleanup;
    }
    size_t unplanned = 0;
    for (int i = 0; i < count; i++) {
        if (items[i].last < items[i].first) {
            status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "memory plan: '%s' dies (step %d) "
                                  "before it is made (step %d)", items[i].name, items[i].last,
                                  items[i].first);
            goto cleanup;
        }
        if (items[i].bytes > max_buffer_bytes) {
            status = tt_error_new(TT_ERR_TOO_LARGE,
                                  "memory plan: '%s' needs %zu bytes, more than the device's "
                                  "largest buffer a kernel can address (%zu: its largest "
                                  "allocation, or on Vulkan maxStorageBufferRange); use a "
                                  "smaller tile or micro-batch", items[i].name, items[i].bytes, max_buffer_bytes);
            goto cleanup;
        }
        unplanned += items[i].bytes;
    }
    int (*const orders[])(const void *, const void *) = {by_size_desc, by_area_desc, by_life_desc,
                                                         by_first};
    tt_plan best = {0};
    for (size_t k = 0; k < sizeof orders / sizeof orders[0]; k++) {
        for (int i = 0; i < count; i++) order[i] = &items[i];
        qsort(order, (size_t)count, sizeof *order, orders[k]);
        tt_plan tried = {0};
        TT_CHECK(place(order, count, alignment, max_buffer_bytes, placed, scratch, &tried));
        if (k == 0 || tried.total_bytes < best.total_bytes) { /* ties: the earlier order */
            best = tried;
            for (int i = 0; i < count; i++) best_items[i] = items[i];
        }
    }
    for (int i = 0; i < count; i++) items[i].buffer = best_items[i].buffer,
                                    items[i].offset = best_items[i].offset;
    *plan = best;
    plan->unplanned_bytes = unplanned;
cleanup:
    free(order);
    free(placed);
    free(scratch);
    free(best_items);
    return status;
}

void tt_plan_lay_out(tt_plan_item *items, int count, size_t alignment, size_t *span)
{
    TT_ASSERT(alignment && (alignment & (alignment - 1)) == 0);
    size_t offset = 0;
    for (int i = 0; i < count; i++) {
        items[i].buffer = 0;
        items[i].offset = offset;
        items[i].first = items[i].last = -1;
        offset = align_up(offset + items[i].bytes, alignment) + alignment;
    }
    *span = offset;
}

int tt_plan_touch(tt_plan_item *items, int count, size_t offset, int step)
{
    int lo = 0, hi = count - 1; /* the last item starting at or before offset */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (items[mid].offset <= offset) lo = mid;
        else hi = mid - 1;
    }
    if (count == 0 || items[lo].offset > offset || offset - items[lo].offset >= items[lo].bytes)
        return -1;
    tt_plan_item *item = &items[lo];
    if (item->first < 0 || step < item->first) item->first = step;
    if (step > item->last) item->last = step;
    return lo;
}
