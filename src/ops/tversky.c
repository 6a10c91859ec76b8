/* The Tversky region loss: host side of opencl/tversky.cl.
 *
 * tt_tversky_sums: (softmax mode) tversky_softmax_stats keeps each pixel's
 * max and sum of exponentials; tversky_partial sums (I, P, T) over `chunks`
 * work-groups per region; tversky_gather ADDS each region's chunks, in
 * order, into the caller's sums.  tt_tversky_finish: tversky_finish, one
 * work-group.  tt_tversky_backward_with: tversky_backward, one work-item an
 * element (sigmoid) or a pixel (softmax).  No atomics anywhere: the sums do
 * not depend on scheduling. */
#include "ops/tversky.h"

#include <limits.h>
#include <math.h>

#include "core/status.h"
#include "ops/util.h"

/* Most work-groups tversky_partial gives one region. */
#define TVERSKY_MAX_CHUNKS 64

size_t tt_tversky_regions(const tt_loss_desc *d, const tt_tversky *t)
{
    return t->per_image ? (size_t)d->n * d->c : (size_t)d->c;
}

/* The shape, the ignore value, the weights and the loss's parameters. */
static tt_status check_params(const char *op, const tt_loss_desc *d, const tt_tversky *t)
{
    TT_TRY(tt_loss_check(op, d));
    if (!(t->alpha >= 0.0f) || !(t->beta >= 0.0f) || !isfinite(t->alpha) ||
        !isfinite(t->beta) || !(t->alpha + t->beta > 0.0f))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: alpha %g and beta %g must be finite, >= 0 and not both 0 "
                            "(0.5 and 0.5 is soft Dice)",
                            op, (double)t->alpha, (double)t->beta);
    if (!(t->smooth > 0.0f) || !isfinite(t->smooth))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: smooth %g must be finite and > 0 (an empty region would divide "
                            "by zero); use %g",
                            op, (double)t->smooth, (double)TT_TVERSKY_SMOOTH_DEFAULT);
    if ((t->softmax != 0 && t->softmax != 1) || (t->per_image != 0 && t->per_image != 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: softmax %d and per_image %d must each be 0 or 1", op,
                            t->softmax, t->per_image);
    if (t->softmax && d->c > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %d classes do not fit uint8 labels (at most 256)", op, d->c);
    return NULL;
}

/* check_params, and logits and targets (or labels) that fit the shape. */
static tt_status check(const char *op, tt_mem logits, tt_mem targets, const tt_loss_desc *d,
                       const tt_tversky *t)
{
    TT_TRY(check_params(op, d, t));
    size_t pixels = (size_t)d->n * d->h * d->w;
    if (t->softmax && 2 * pixels > INT_MAX) /* tversky_partial indexes 2 floats a pixel */
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: %zu pixels are too many for one launch (at most %d); split "
                            "the batch", op, pixels, INT_MAX / 2);
    TT_TRY(tt_mem_check(op, "logits", logits, pixels * d->c * sizeof(float)));
    return tt_mem_check(op, t->softmax ? "labels" : "targets", targets,
                        t->softmax ? pixels : pixels * d->c);
}

/* The class weights for a kernel, and whether there are any: without
 * them, a buffer that is surely bound stands in, unread. */
static tt_mem weights_or(const tt_loss_desc *d, tt_mem stand_in, int *has_weights)
{
    *has_weights = d->weights.buffer != NULL;
    return *has_weights ? d->weights : stand_in;
}

tt_status tt_tversky_sums(tt_backend *be, tt_mem sums, tt_mem invalid, tt_mem logits,
                          tt_mem targets, const tt_loss_desc *d, const tt_tversky *t)
{
    const char *op = "Tversky sums";
    TT_TRY(check(op, logits, targets, d, t));
    size_t regions = tt_tversky_regions(d, t);
    TT_TRY(tt_mem_check(op, "sums", sums, regions * 3 * sizeof(float)));
    TT_TRY(tt_mem_check(op, "invalid", invalid, sizeof(uint32_t)));
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    size_t hw = (size_t)d->h * d->w, pixels = (size_t)d->n * hw;
    size_t items = t->per_image ? hw : pixels;
    /* about 4 items per work-item, at most TVERSKY_MAX_CHUNKS groups per region */
    size_t chunks = (items + 4 * group - 1) / (4 * group);
    if (chunks > TVERSKY_MAX_CHUNKS) chunks = TVERSKY_MAX_CHUNKS;
    if (chunks < 1) chunks = 1;
    size_t floats = regions * chunks * 4 + (t->softmax ? 2 * pixels : 0);
    tt_status status = NULL;
    tt_buffer *workspace = NULL;
    TT_CHECK(tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_WORKSPACE, "tversky.partial",
                             &workspace));
    tt_mem part = tt_mem_of(workspace);
    tt_mem part_invalid = tt_mem_f32(part, regions * chunks * 3);
    tt_mem pixel_stats = t->softmax ? tt_mem_f32(part_invalid, regions * chunks) : logits;
    if (t->softmax)
        TT_CHECK(tt_launch_kernel(be, "tversky", "tversky_softmax_stats", options, 1, &pixels,
                                  NULL,
                                  TT_ARGS(tt_arg_mem(pixel_stats), tt_arg_mem(logits),
                                          tt_arg_i32(d->n), tt_arg_i32(d->c),
                                          tt_arg_i32((int)hw))));
    size_t global[2] = {chunks * group, regions}, local[2] = {group, 1};
    TT_CHECK(tt_launch_kernel(be, "tversky", "tversky_partial", options, 2, global, local,
                              TT_ARGS(tt_arg_mem(part), tt_arg_mem(part_invalid),
                                      tt_arg_mem(logits), tt_arg_mem(targets),
                                      tt_arg_mem(pixel_stats), tt_arg_i32(d->n),
                                      tt_arg_i32(d->c), tt_arg_i32((int)hw),
                                      tt_arg_i32(t->softmax), tt_arg_i32(t->per_image),
                                      tt_arg_i32((int)chunks), tt_arg_i32(d->ignore))));
    TT_CHECK(tt_launch_kernel(be, "tversky", "tversky_gather", options, 1, &group, &group,
                              TT_ARGS(tt_arg_mem(sums), tt_arg_mem(invalid), tt_arg_mem(part),
                                      tt_arg_mem(part_invalid), tt_arg_i32((int)regions),
                                      tt_arg_i32((int)chunks))));
cleanup:
    tt_buffer_free(workspace);
    return status;
}

tt_status tt_tversky_finish(tt_backend *be, tt_mem result, tt_mem stats, tt_mem sums,
                            tt_mem invalid, const tt_loss_desc *d, const tt_tversky *t)
{
    const char *op = "Tversky finish";
    TT_TRY(check_params(op, d, t));
    size_t regions = tt_tversky_regions(d, t);
    TT_TRY(tt_mem_check(op, "stats", stats, regions * 2 * sizeof(float)));
    TT_TRY(tt_mem_check(op, "sums", sums, regions * 3 * sizeof(float)));
    TT_TRY(tt_mem_check(op, "invalid", invalid, sizeof(uint32_t)));
    int add_result = result.buffer != NULL;
    if (add_result) TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    int has_weights;
    tt_mem weights = weights_or(d, sums, &has_weights);
    return tt_launch_kernel(
        be, "tversky", "tversky_finish", options, 1, &group, &group,
        TT_ARGS(tt_arg_mem(add_result ? result : stats), tt_arg_mem(stats), tt_arg_mem(sums),
                tt_arg_mem(invalid), tt_arg_mem(weights), tt_arg_i32(has_weights),
                tt_arg_i32(d->n), tt_arg_i32(d->c), tt_arg_i32((int)regions),
                tt_arg_f32(t->alpha), tt_arg_f32(t->beta), tt_arg_f32(t->smooth),
                tt_arg_i32(t->per_image), tt_arg_i32(add_result)));
}

tt_status tt_tversky_backward_with(tt_backend *be, tt_mem dlogits, tt_mem stats, tt_mem logits,
                                   tt_mem targets, const tt_loss_desc *d, const tt_tversky *t,
                                   float scale)
{
    const char *op = "Tversky backward";
    TT_TRY(check(op, logits, targets, d, t));
    size_t pixels = (size_t)d->n * d->h * d->w;
    TT_TRY(tt_mem_check(op, "dlogits", dlogits, pixels * d->c * sizeof(float)));
    TT_TRY(tt_mem_check(op, "stats", stats, tt_tversky_regions(d, t) * 2 * sizeof(float)));
    char options[32];
    tt_reduce_options(be, options, sizeof options); /* the program of the sums */
    size_t work = t->softmax ? pixels : pixels * d->c;
    int has_weights;
    tt_mem weights = weights_or(d, stats, &has_weights);
    return tt_launch_kernel(
        be, "tversky", "tversky_backward", options, 1, &work, NULL,
        TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(stats), tt_arg_mem(logits), tt_arg_mem(targets),
                tt_arg_mem(weights), tt_arg_i32(has_weights), tt_arg_i32(d->n),
                tt_arg_i32(d->c), tt_arg_i32(d->h * d->w), tt_arg_i32(t->softmax),
                tt_arg_i32(t->per_image), tt_arg_i32(d->ignore), tt_arg_f32(t->alpha),
                tt_arg_f32(t->beta), tt_arg_f32(scale)));
}

/* A zeroed workspace of sums (regions, 3), stats (regions, 2) and an
 * invalid count, filled with this batch's sums and stats; with a result
 * block, the loss added into it.  The caller frees *workspace (also on
 * error). */
static tt_status batch_stats(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *d, const tt_tversky *t, tt_buffer **workspace,
                             tt_mem *stats_out)
{
    size_t regions = tt_tversky_regions(d, t), floats = regions * 5 + 1;
    TT_TRY(tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_WORKSPACE, "tversky.sums",
                           workspace));
    tt_mem sums = tt_mem_of(*workspace), stats = tt_mem_f32(sums, regions * 3);
    tt_mem invalid = tt_mem_f32(stats, regions * 2);
    TT_TRY(tt_fill(be, sums, 0.0f, floats)); /* the invalid count's bits too */
    TT_TRY(tt_tversky_sums(be, sums, invalid, logits, targets, d, t));
    TT_TRY(tt_tversky_finish(be, result, stats, sums, invalid, d, t));
    *stats_out = stats;
    return NULL;
}

tt_status tt_tversky_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                             const tt_loss_desc *d, const tt_tversky *t)
{
    const char *op = "Tversky forward";
    TT_TRY(check(op, logits, targets, d, t));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    tt_buffer *workspace = NULL;
    tt_mem stats;
    tt_status status = batch_stats(be, result, logits, targets, d, t, &workspace, &stats);
    tt_buffer_free(workspace);
    return status;
}

tt_status tt_tversky_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                              const tt_loss_desc *d, const tt_tversky *t, float scale)
{
    const char *op = "Tversky backward";
    TT_TRY(check(op, logits, targets, d, t));
    TT_TRY(tt_mem_check(op, "dlogits", dlogits,
                        (size_t)d->n * d->c * d->h * d->w * sizeof(float)));
    tt_buffer *workspace = NULL;
    tt_mem stats;
    tt_status status = NULL;
    TT_CHECK(batch_stats(be, (tt_mem){0}, logits, targets, d, t, &workspace, &stats));
    TT_CHECK(tt_tversky_backward_with(be, dlogits, stats, logits, targets, d, t, scale));
cleanup:
    tt_buffer_free(workspace);
    return status;
}
