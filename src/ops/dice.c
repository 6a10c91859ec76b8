/* Soft Dice: host side of opencl/loss.cl (dice_*).
 *
 * Two reductions: dice_partial sums (p t, p, t) over `chunks` work-groups per
 * (n, c) plane; dice_finish (one work-group) turns each plane's sums into
 * (dice, denominator) and, for the forward, adds the loss into the block. */
#include "ops/dice.h"

#include <math.h>

#include "core/status.h"

static tt_status check(const char *op, tt_mem logits, tt_mem targets, const tt_loss_desc *d,
                       float smooth)
{
    TT_TRY(tt_loss_check(op, d));
    if (!(smooth > 0.0f) || !isfinite(smooth))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: smooth %g must be finite and > 0 (an empty plane would divide "
                            "by zero); use %g",
                            op, (double)smooth, (double)TT_DICE_SMOOTH_DEFAULT);
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "logits", logits, total * sizeof(float)));
    return tt_mem_check(op, "targets", targets, total);
}

/* Per-plane sums into a new workspace: *stats_out is (planes, 2) = (dice,
 * denominator) at the start of *workspace.  When add_result, result gets the
 * loss.  The caller frees *workspace (also on error). */
static tt_status dice_stats(tt_backend *be, tt_mem result, int add_result, tt_mem logits,
                            tt_mem targets, const tt_loss_desc *d, float smooth,
                            tt_buffer **workspace, tt_mem *stats_out)
{
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    size_t planes = (size_t)d->n * d->c, hw = (size_t)d->h * d->w;
    /* about 4 elements per work-item, at most 64 groups per plane */
    size_t chunks = (hw + 4 * group - 1) / (4 * group);
    if (chunks > 64) chunks = 64;
    if (chunks < 1) chunks = 1;
    size_t floats = planes * 2 + planes * chunks * 3 + planes * chunks;
    TT_TRY(tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_WORKSPACE, "dice.sums", workspace));
    tt_mem stats = tt_mem_of(*workspace);
    tt_mem part = tt_mem_f32(stats, planes * 2);
    tt_mem part_invalid = tt_mem_f32(part, planes * chunks * 3);
    size_t global[2] = {chunks * group, planes}, local[2] = {group, 1};
    TT_TRY(tt_launch_kernel(be, "loss", "dice_partial", options, 2, global, local,
                            TT_ARGS(tt_arg_mem(part), tt_arg_mem(part_invalid),
                                    tt_arg_mem(logits), tt_arg_mem(targets), tt_arg_i32((int)hw),
                                    tt_arg_i32((int)chunks), tt_arg_i32(d->ignore))));
    TT_TRY(tt_launch_kernel(be, "loss", "dice_finish", options, 1, &group, &group,
                            TT_ARGS(tt_arg_mem(add_result ? result : stats), tt_arg_mem(stats),
                                    tt_arg_mem(part), tt_arg_mem(part_invalid), tt_arg_i32(d->n),
                                    tt_arg_i32(d->c), tt_arg_i32((int)chunks),
                                    tt_arg_f32(smooth), tt_arg_i32(add_result))));
    *stats_out = stats;
    return NULL;
}

tt_status tt_dice_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                          const tt_loss_desc *d, float smooth)
{
    const char *op = "Dice forward";
    TT_TRY(check(op, logits, targets, d, smooth));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    tt_buffer *workspace = NULL;
    tt_mem stats;
    tt_status status = dice_stats(be, result, 1, logits, targets, d, smooth, &workspace, &stats);
    tt_buffer_free(workspace);
    return status;
}

tt_status tt_dice_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                           const tt_loss_desc *d, float smooth, float scale)
{
    const char *op = "Dice backward";
    TT_TRY(check(op, logits, targets, d, smooth));
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "dlogits", dlogits, total * sizeof(float)));
    tt_status status = NULL;
    tt_buffer *workspace = NULL;
    tt_mem stats;
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    TT_CHECK(dice_stats(be, (tt_mem){0}, 0, logits, targets, d, smooth, &workspace, &stats));
    TT_CHECK(tt_launch_kernel(be, "loss", "dice_backward", options, 1, &total, NULL,
                              TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(stats), tt_arg_mem(logits),
                                      tt_arg_mem(targets), tt_arg_i32((int)total),
                                      tt_arg_i32(d->c), tt_arg_i32(d->h * d->w),
                                      tt_arg_i32(d->ignore), tt_arg_f32(scale))));
cleanup:
    tt_buffer_free(workspace);
    return status;
}
