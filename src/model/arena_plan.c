/* A model's activation arena planned from one recorded step; see arena_plan.h. */
#include "model/arena_plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/knobs.h"
#include "core/status.h"

void tt_arena_plan_add(tt_arena_plan *p, const char *name, size_t bytes, tt_mem *dest)
{
    if (p->count == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 128;
        tt_plan_item *items = tt_realloc(p->items, sizeof *items * (size_t)cap);
        if (items) p->items = items;
        tt_mem **dests = tt_realloc(p->dests, sizeof *dests * (size_t)cap);
        if (dests) p->dests = dests;
        char(*names)[48] = tt_realloc(p->names, sizeof *names * (size_t)cap);
        if (names) p->names = names;
        if (!items || !dests || !names) {
            p->failed = 1;
            return;
        }
        p->capacity = cap;
    }
    snprintf(p->names[p->count], sizeof p->names[0], "%s", name);
    p->items[p->count] = (tt_plan_item){NULL, bytes, 0, 0, 0, 0};
    p->dests[p->count] = dest;
    p->count++;
}

void tt_arena_plan_free(tt_arena_plan *p)
{
    free(p->items);
    free(p->dests);
    free(p->names);
    *p = (tt_arena_plan){0};
}

void tt_arena_free(tt_arena *a)
{
    for (int i = 0; a->buffers && i < a->count; i++) tt_buffer_free(a->buffers[i]);
    free(a->buffers);
    *a = (tt_arena){0};
}

/* The record: every operation is one step; a touch of the virtual space
 * widens the life of the tensor there. */
typedef struct trace {
    tt_arena_plan *plan;
    const tt_buffer *space;
    int step;
    size_t stray;            /* an offset no tensor holds (+1), 0: none */
} trace;

static void on_operation(void *ctx, const tt_mem *places, int count)
{
    trace *t = ctx;
    for (int i = 0; i < count; i++)
        if (places[i].buffer == t->space &&
            tt_plan_touch(t->plan->items, t->plan->count, places[i].offset, t->step) < 0 &&
            !t->stray)
            t->stray = places[i].offset + 1;
    t->step++;
}

/* Debugging ($TT_PLAN_DUMP): each tensor's life and size on stderr, and
 * the bytes alive at the busiest step: the lower bound any placement has
 * to meet. */
static void dump(const tt_arena_plan *p, int steps)
{
    size_t peak = 0;
    int peak_step = 0;
    for (int s = 0; s < steps; s++) {
        size_t live = 0;
        for (int i = 0; i < p->count; i++)
            if (p->items[i].first <= s && s <= p->items[i].last) live += p->items[i].bytes;
        if (live > peak) peak = live, peak_step = s;
    }
    for (int i = 0; i < p->count; i++)
        fprintf(stderr, "%-32s %10.2f MiB  steps %5d..%5d%s\n", p->names[i],
                p->items[i].bytes / 1048576.0, p->items[i].first, p->items[i].last,
                p->items[i].first <= peak_step && peak_step <= p->items[i].last ? "  (busiest)"
                                                                                : "");
    fprintf(stderr, "%d steps; busiest step %d: %.1f MiB alive\n", steps, peak_step,
            peak / 1048576.0);
}

/* Runs the step on a dry backend standing in for `be`, with every tensor
 * at its own place of a virtual space (*space), each operation reported
 * to `on_op` (may be NULL) and each convolution to `log` (may be NULL). */
static tt_status run_recorded(tt_arena_plan *p, tt_backend *be, tt_arena_step_fn step,
                              void *model, tt_buffer *space, trace *t, tt_conv_log *log,
                              tt_buffer *stand_in)
{
    size_t align = be->device.base_align_bytes > 64 ? be->device.base_align_bytes : 64;
    tt_plan_lay_out(p->items, p->count, align, &space->bytes);
    snprintf(space->record.name, sizeof space->record.name, "activations (being planned)");
    tt_backend *recorder = NULL;
    TT_TRY(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                   .stands_for = be->kernels_of,
                                                   .record = t ? on_operation : NULL,
                                                   .record_ctx = t, .conv_log = log},
                             &recorder));
    space->backend = recorder;
    if (stand_in) stand_in->backend = recorder;
    for (int i = 0; i < p->count; i++) *p->dests[i] = tt_mem_at(tt_mem_of(space), p->items[i].offset);
    tt_status status = step(model, recorder);
    tt_backend_destroy(recorder);
    return status;
}

/* Runs the step recorded and takes each tensor's life from the record. */
static tt_status record_lives(tt_arena_plan *p, tt_backend *be, tt_arena_step_fn step,
                              void *model)
{
    tt_buffer space = {0};
    trace t = {p, &space, 0, 0};
    tt_status status = run_recorded(p, be, step, model, &space, &t, NULL, NULL);
    if (status) return tt_error_prefix(status, "memory plan: recording one step");
    if (t.stray)
        return tt_error_new(TT_ERR_INTERNAL, "memory plan: an operation touched offset %zu, "
                            "which no planned tensor holds", t.stray - 1);
    if (tt_knob_set(TT_KNOB_PLAN_DUMP)) dump(p, t.step);
    return NULL;
}

tt_status tt_arena_plan_record_convs(tt_arena_plan *p, tt_backend *be, tt_arena_step_fn step,
                                     void *model, tt_buffer **workspace, tt_conv_log *log)
{
    if (p->failed) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
    tt_conv_log_free(log);
    tt_buffer space = {0};
    /* large enough for any convolution, so that none takes one of its own */
    tt_buffer stand_in = {.bytes = SIZE_MAX / 4};
    snprintf(stand_in.record.name, sizeof stand_in.record.name, "workspace (being sized)");
    tt_buffer *kept = *workspace;
    *workspace = &stand_in;
    tt_status status = run_recorded(p, be, step, model, &space, NULL, log, &stand_in);
    *workspace = kept;
    if (!status && log->failed)
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "convolution log: out of host memory");
    if (status) return tt_error_prefix(status, "recording the step's convolutions");
    return NULL;
}

tt_status tt_arena_plan_place(tt_arena_plan *p, tt_backend *be, tt_arena_step_fn step,
                              void *model, tt_arena *arena)
{
    *arena = (tt_arena){0};
    if (p->failed) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
    for (int i = 0; i < p->count; i++) p->items[i].name = p->names[i];
    size_t align = be->device.base_align_bytes > 64 ? be->device.base_align_bytes : 64;
    TT_TRY(record_lives(p, be, step, model));
    tt_plan plan;
    /* each arena buffer no larger than a kernel can address from its start
     * (Vulkan's maxStorageBufferRange), so any tensor in it can be bound */
    uint64_t limit = be->device.max_alloc_bytes;
    if (be->device.max_binding_bytes && be->device.max_binding_bytes < limit)
        limit = be->device.max_binding_bytes;
    TT_TRY(tt_plan_solve(p->items, p->count, align, (size_t)limit, &plan));
    tt_status status = NULL;
    arena->buffers = tt_calloc((size_t)plan.buffer_count, sizeof *arena->buffers);
    if (!arena->buffers) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
        goto cleanup;
    }
    for (int b = 0; b < plan.buffer_count; b++) {
        char name[32];
        snprintf(name, sizeof name, "activations.%d", b);
        TT_CHECK(tt_buffer_alloc(be, plan.buffer_bytes[b], TT_MEM_ACTIVATIONS, name,
                                 &arena->buffers[b]));
        arena->count++;
    }
    for (int i = 0; i < p->count; i++)
        *p->dests[i] = tt_mem_at(tt_mem_of(arena->buffers[p->items[i].buffer]), p->items[i].offset);
    arena->planned_bytes = plan.total_bytes;
    arena->unplanned_bytes = plan.unplanned_bytes;
cleanup:
    if (status) tt_arena_free(arena);
    return status;
}
