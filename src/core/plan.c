/* Greedy-by-size liveness planning; see plan.h. */
#include "core/plan.h"

#include <stdlib.h>

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

tt_status tt_plan_solve(tt_plan_item *items, int count, size_t alignment, size_t max_buffer_bytes,
                        tt_plan *plan)
{
    TT_ASSERT(alignment && (alignment & (alignment - 1)) == 0);
    *plan = (tt_plan){0};
    tt_plan_item **order = malloc(sizeof *order * (size_t)(count ? count : 1));
    tt_plan_item **placed = malloc(sizeof *placed * (size_t)(count ? count : 1));
    tt_plan_item **scratch = malloc(sizeof *scratch * (size_t)(count ? count : 1));
    tt_status status = NULL;
    if (!order || !placed || !scratch) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
        goto cleanup;
    }
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
        order[i] = &items[i];
        plan->unplanned_bytes += items[i].bytes;
    }
    qsort(order, (size_t)count, sizeof *order, by_size_desc);
    int nplaced = 0;
    for (int i = 0; i < count; i++) {
        tt_plan_item *item = order[i];
        int b = 0;
        for (;; b++) {
            if (b == plan->buffer_count) {
                if (b == TT_PLAN_MAX_BUFFERS) {
                    status = tt_error_new(TT_ERR_TOO_LARGE, "memory plan: more than %d buffers",
                                          TT_PLAN_MAX_BUFFERS);
                    goto cleanup;
                }
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
cleanup:
    free(order);
    free(placed);
    free(scratch);
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
