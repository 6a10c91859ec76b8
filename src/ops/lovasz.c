/* The Lovász losses: host side of opencl/lovasz.cl.
 *
 * Per (image, class) plane, padded to P = the next power of two >= H*W:
 *   1. lovasz_sort_local computes the keys (errors, -INFINITY out of the
 *      plane) and sorts tiles of T = min(P, 2 group) slots; then, for each
 *      bitonic stage k > T, lovasz_sort_global runs the steps j >= T and
 *      lovasz_sort_local the steps j < T;
 *   2. the slots are cut in `chunks` chunks of group * K slots (K grows so
 *      that chunks <= TT_LOVASZ_MAX_CHUNKS: every work-item's loops stay
 *      short); with more than one chunk, lovasz_count and lovasz_offsets
 *      give each chunk the positives ranked before it;
 *   3. lovasz_steps walks the sorted slots: the loss per chunk (forward),
 *      the hinge gradient, or softmax's dloss/dp per pixel;
 *   4. lovasz_finish (forward) adds each image's weighted class mean into
 *      the result block; lovasz_softmax_backward (softmax backward) takes
 *      dloss/dp through the softmax into dlogits.
 * A small plane (P <= 2 group, one chunk) takes 3 launches forward.
 *
 * Workspace layout (planes = N*C), 4-byte words, in this order:
 *   keys            (planes, P) float       sorted errors
 *   index           (planes, P) int         their pixel indices
 *   chunk_loss      (planes, chunks) float
 *   chunk_invalid   (planes, chunks) uint
 *   chunk_offset    (planes, chunks) uint   positives before the chunk
 *   plane_positive  (planes) uint           G per plane
 *   (unused up to 3 planes min(TT_LOVASZ_MAX_CHUNKS, P) + planes words
 *    after index: the most chunks any work-group size plans, so that
 *    tt_lovasz_workspace_bytes needs no device)
 *   grad            (planes, H*W) float     softmax backward only: dloss/dp
 */
#include "ops/lovasz.h"

#include <limits.h>
#include <math.h>

#include "core/status.h"

#define TT_LOVASZ_MAX_CHUNKS 256

typedef struct lovasz_plan {
    size_t planes, hw, padded; /* P */
    size_t tile;               /* T */
    size_t per_item;           /* K */
    size_t chunks;
    size_t group;
    char options[32];
} lovasz_plan;

static void make_plan(const tt_backend *be, const tt_loss_desc *d, lovasz_plan *plan)
{
    plan->group = be ? (size_t)tt_reduce_group_size(be) : 256;
    plan->planes = (size_t)d->n * d->c;
    plan->hw = (size_t)d->h * d->w;
    plan->padded = 1;
    while (plan->padded < plan->hw) plan->padded *= 2;
    plan->tile = plan->padded < 2 * plan->group ? plan->padded : 2 * plan->group;
    plan->per_item = 1;
    while (plan->padded / (plan->group * plan->per_item) > TT_LOVASZ_MAX_CHUNKS)
        plan->per_item *= 2;
    plan->chunks = plan->padded / (plan->group * plan->per_item);
    if (plan->chunks < 1) plan->chunks = 1;
    if (be) tt_reduce_options(be, plan->options, sizeof plan->options);
}

/* Words of the workspace before `grad`, for any work-group size: the
 * chunk arrays sized for min(TT_LOVASZ_MAX_CHUNKS, P) chunks, the most a
 * plan makes. */
static size_t sort_words(const lovasz_plan *p)
{
    size_t chunks = p->padded < TT_LOVASZ_MAX_CHUNKS ? p->padded : TT_LOVASZ_MAX_CHUNKS;
    return 2 * p->planes * p->padded + 3 * p->planes * chunks + p->planes;
}

size_t tt_lovasz_workspace_bytes(const tt_loss_desc *desc, int softmax)
{
    lovasz_plan plan;
    make_plan(NULL, desc, &plan);
    size_t words = sort_words(&plan);
    if (softmax) words += plan.planes * plan.hw;
    return words * sizeof(float);
}

static tt_status check(const char *op, tt_mem logits, tt_mem targets, const tt_loss_desc *d,
                       int softmax)
{
    TT_TRY(tt_loss_check(op, d));
    if (softmax != 0 && softmax != 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: softmax is %d; use 0 (hinge) or 1",
                            op, softmax);
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "logits", logits, total * sizeof(float)));
    TT_TRY(tt_mem_check(op, softmax ? "labels" : "targets", targets,
                        softmax ? (size_t)d->n * d->h * d->w : total));
    lovasz_plan plan;
    make_plan(NULL, d, &plan);
    /* the kernels index the sort slots with int */
    if (plan.planes * plan.padded > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: %zu planes of %zu sort slots exceed the kernels' int "
                            "indices; use fewer images or smaller tiles",
                            op, plan.planes, plan.padded);
    return NULL;
}

typedef struct lovasz_views {
    tt_mem keys, index, chunk_loss, chunk_invalid, chunk_offset, plane_positive, grad;
} lovasz_views;

/* Allocates the workspace (grad only when with_grad) and runs steps 1 and 2.
 * The caller frees *workspace, also on error. */
static tt_status sort_planes(tt_backend *be, const lovasz_plan *p, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *d, int softmax, int with_grad,
                             tt_buffer **workspace, lovasz_views *v)
{
    size_t words = sort_words(p) + (with_grad ? p->planes * p->hw : 0);
    TT_TRY(tt_buffer_alloc(be, words * sizeof(float), TT_MEM_WORKSPACE, "lovasz.sort", workspace));
    v->keys = tt_mem_of(*workspace);
    v->index = tt_mem_f32(v->keys, p->planes * p->padded);
    v->chunk_loss = tt_mem_f32(v->index, p->planes * p->padded);
    v->chunk_invalid = tt_mem_f32(v->chunk_loss, p->planes * p->chunks);
    v->chunk_offset = tt_mem_f32(v->chunk_invalid, p->planes * p->chunks);
    v->plane_positive = tt_mem_f32(v->chunk_offset, p->planes * p->chunks);
    v->grad = tt_mem_f32(v->keys, sort_words(p));

    size_t local[2] = {p->group, 1};
    size_t tiles[2] = {p->padded / p->tile * p->group, p->planes};
    int hw = (int)p->hw, padded = (int)p->padded;
    for (size_t k = 0; k <= p->padded; k = k ? k * 2 : p->tile * 2) {
        for (size_t j = k / 2; k && j >= p->tile; j /= 2) {
            size_t pairs[2] = {p->padded / 2, p->planes};
            TT_TRY(tt_launch_kernel(be, "lovasz", "lovasz_sort_global", p->options, 2, pairs,
                                    local,
                                    TT_ARGS(tt_arg_mem(v->keys), tt_arg_mem(v->index),
                                            tt_arg_i32(padded), tt_arg_i32((int)k),
                                            tt_arg_i32((int)j))));
        }
        TT_TRY(tt_launch_kernel(be, "lovasz", "lovasz_sort_local", p->options, 2, tiles, local,
                                TT_ARGS(tt_arg_mem(v->keys), tt_arg_mem(v->index),
                                        tt_arg_mem(logits), tt_arg_mem(targets), tt_arg_i32(hw),
                                        tt_arg_i32(padded), tt_arg_i32(d->c),
                                        tt_arg_i32(d->ignore), tt_arg_i32(softmax),
                                        tt_arg_i32((int)k))));
    }
    if (p->chunks == 1) return NULL;
    size_t chunk_items[2] = {p->chunks * p->group, p->planes};
    TT_TRY(tt_launch_kernel(be, "lovasz", "lovasz_count", p->options, 2, chunk_items, local,
                            TT_ARGS(tt_arg_mem(v->chunk_offset), tt_arg_mem(v->index),
                                    tt_arg_mem(targets), tt_arg_i32(hw), tt_arg_i32(padded),
                                    tt_arg_i32(d->c), tt_arg_i32(d->ignore),
                                    tt_arg_i32(softmax), tt_arg_i32((int)p->per_item),
                                    tt_arg_i32((int)p->chunks))));
    size_t one_group[2] = {p->group, p->planes};
    return tt_launch_kernel(be, "lovasz", "lovasz_offsets", p->options, 2, one_group, local,
                            TT_ARGS(tt_arg_mem(v->chunk_offset), tt_arg_mem(v->plane_positive),
                                    tt_arg_i32((int)p->chunks)));
}

/* Step 3 in `mode` (lovasz_steps): dest is dlogits (1), grad (2), unused (0). */
static tt_status run_steps(tt_backend *be, const lovasz_plan *p, const lovasz_views *v,
                           tt_mem dest, tt_mem targets, const tt_loss_desc *d, int softmax,
                           int mode, float scale)
{
    size_t local[2] = {p->group, 1};
    size_t chunk_items[2] = {p->chunks * p->group, p->planes};
    int has_weights = d->weights.buffer != NULL;
    tt_mem weights = has_weights ? d->weights : v->keys;
    return tt_launch_kernel(
        be, "lovasz", "lovasz_steps", p->options, 2, chunk_items, local,
        TT_ARGS(tt_arg_mem(v->chunk_loss), tt_arg_mem(v->chunk_invalid),
                tt_arg_mem(v->plane_positive), tt_arg_mem(dest), tt_arg_mem(v->keys),
                tt_arg_mem(v->index), tt_arg_mem(v->chunk_offset), tt_arg_mem(targets),
                tt_arg_mem(weights), tt_arg_i32((int)p->hw), tt_arg_i32((int)p->padded),
                tt_arg_i32(d->c), tt_arg_i32((int)p->per_item), tt_arg_i32((int)p->chunks),
                tt_arg_i32(d->ignore), tt_arg_i32(softmax), tt_arg_i32(mode),
                tt_arg_i32(has_weights), tt_arg_f32(scale)));
}

tt_status tt_lovasz_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                            const tt_loss_desc *d, int softmax)
{
    const char *op = softmax ? "Lovasz softmax forward" : "Lovasz hinge forward";
    TT_TRY(check(op, logits, targets, d, softmax));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    tt_status status = NULL;
    tt_buffer *workspace = NULL;
    lovasz_plan p;
    lovasz_views v;
    make_plan(be, d, &p);
    TT_CHECK(sort_planes(be, &p, logits, targets, d, softmax, 0, &workspace, &v));
    TT_CHECK(run_steps(be, &p, &v, v.keys, targets, d, softmax, 0, 0.0f));
    int has_weights = d->weights.buffer != NULL;
    TT_CHECK(tt_launch_kernel(
        be, "lovasz", "lovasz_finish", p.options, 1, &p.group, &p.group,
        TT_ARGS(tt_arg_mem(result), tt_arg_mem(v.chunk_loss), tt_arg_mem(v.chunk_invalid),
                tt_arg_mem(v.plane_positive), tt_arg_mem(has_weights ? d->weights : v.keys),
                tt_arg_i32(d->n), tt_arg_i32(d->c), tt_arg_i32((int)p.chunks),
                tt_arg_i32(softmax), tt_arg_i32(has_weights))));
cleanup:
    tt_buffer_free(workspace);
    return status;
}

tt_status tt_lovasz_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *d, int softmax, float scale)
{
    const char *op = softmax ? "Lovasz softmax backward" : "Lovasz hinge backward";
    TT_TRY(check(op, logits, targets, d, softmax));
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "dlogits", dlogits, total * sizeof(float)));
    tt_status status = NULL;
    tt_buffer *workspace = NULL;
    lovasz_plan p;
    lovasz_views v;
    make_plan(be, d, &p);
    TT_CHECK(sort_planes(be, &p, logits, targets, d, softmax, softmax, &workspace, &v));
    if (!softmax) {
        TT_CHECK(run_steps(be, &p, &v, dlogits, targets, d, 0, 1, scale));
        goto cleanup;
    }
    TT_CHECK(run_steps(be, &p, &v, v.grad, targets, d, 1, 2, scale));
    size_t pixels = (size_t)d->n * p.hw;
    int has_weights = d->weights.buffer != NULL;
    TT_CHECK(tt_launch_kernel(
        be, "lovasz", "lovasz_softmax_backward", p.options, 1, &pixels, NULL,
        TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(v.grad), tt_arg_mem(logits),
                tt_arg_mem(targets), tt_arg_mem(v.plane_positive),
                tt_arg_mem(has_weights ? d->weights : v.keys), tt_arg_i32(d->n),
                tt_arg_i32(d->c), tt_arg_i32((int)p.hw), tt_arg_i32(d->ignore),
                tt_arg_i32(has_weights), tt_arg_f32(scale))));
cleanup:
    tt_buffer_free(workspace);
    return status;
}
