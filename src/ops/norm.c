/* Normalisation kinds (none | group | batch) and the launches of opencl/norm.cl
 * that group norm and batch norm share.  See norm.h. */
#include "ops/norm.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>

#include "core/status.h"

const char *const tt_norm_kind_names[TT_NORM_KIND_COUNT] = {
    [TT_NORM_NONE] = "none",
    [TT_NORM_GROUP] = "group",
    [TT_NORM_BATCH] = "batch",
};
_Static_assert(sizeof tt_norm_kind_names / sizeof tt_norm_kind_names[0] == TT_NORM_KIND_COUNT,
               "every tt_norm_kind needs a name");

const char *tt_norm_kind_name(tt_norm_kind kind)
{
    if ((int)kind < 0 || kind >= TT_NORM_KIND_COUNT) return "?";
    return tt_norm_kind_names[kind];
}

static int equals_ignoring_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

tt_status tt_norm_kind_parse(const char *text, tt_norm_kind *kind)
{
    if (text)
        for (int k = 0; k < TT_NORM_KIND_COUNT; k++)
            if (equals_ignoring_case(text, tt_norm_kind_names[k])) {
                *kind = (tt_norm_kind)k;
                return NULL;
            }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "normalisation \"%s\" is unknown: use one of none, group, batch",
                        text ? text : "(null)");
}

size_t tt_norm_kind_param_floats(tt_norm_kind kind, int channels)
{
    return (kind == TT_NORM_GROUP || kind == TT_NORM_BATCH) && channels > 0 ? 2 * (size_t)channels
                                                                            : 0;
}

size_t tt_norm_kind_state_floats(tt_norm_kind kind, int channels)
{
    return kind == TT_NORM_BATCH && channels > 0 ? 2 * (size_t)channels : 0;
}

/* ---- shared launch helpers ------------------------------------------------ */

tt_status tt_norm_check_shape(const char *op, int batch, int channels, int height, int width)
{
    if (batch <= 0 || channels <= 0 || height <= 0 || width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: shape (N=%d, C=%d, H=%d, W=%d) must be positive", op, batch,
                            channels, height, width);
    double total = (double)batch * channels * height * width;
    if (total > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: shape (N=%d, C=%d, H=%d, W=%d) has %.0f elements, more than one "
                            "launch takes (%d); use a smaller micro-batch or tile",
                            op, batch, channels, height, width, total, INT_MAX);
    return NULL;
}

tt_norm_layout tt_norm_layout_group(int batch, int channels, int height, int width, int groups)
{
    int hw = height * width, per_group = channels / groups;
    return (tt_norm_layout){
        .batch = batch, .channels = channels, .hw = hw,
        .stat_count = batch * groups, .stat_n_stride = groups, .channels_per_stat = per_group,
        .stat_stride = (uint64_t)per_group * hw, .segments = per_group, .seg_len = hw,
        .seg_stride = (uint64_t)hw,
    };
}

tt_norm_layout tt_norm_layout_batch(int batch, int channels, int height, int width)
{
    int hw = height * width;
    return (tt_norm_layout){
        .batch = batch, .channels = channels, .hw = hw,
        .stat_count = channels, .stat_n_stride = 0, .channels_per_stat = 1,
        .stat_stride = (uint64_t)hw, .segments = batch, .seg_len = hw,
        .seg_stride = (uint64_t)channels * hw,
    };
}

/* Work-group size of the reducing kernels: the largest power of two up to
 * 256 that the device allows. */
static size_t reduce_work_group(const tt_backend *be)
{
    size_t limit = be->device.max_work_group_size ? be->device.max_work_group_size : 1;
    size_t wg = 256;
    while (wg > limit) wg /= 2;
    return wg;
}

/* A launch of `groups` work-groups of the reducing size, NORM_WG defined. */
static tt_status launch_reduce(tt_backend *be, const char *kernel, int groups, int arg_count,
                               const tt_arg *args)
{
    size_t wg = reduce_work_group(be);
    char options[32];
    snprintf(options, sizeof options, "-DNORM_WG=%zu", wg);
    size_t global = (size_t)groups * wg;
    return tt_launch_kernel(be, "norm", kernel, options, 1, &global, &wg, arg_count, args);
}

static int present(tt_mem m) { return m.buffer != NULL; }
/* Absent buffers reach the kernel as a stand-in that a flag keeps unused. */
static tt_mem or_stand_in(tt_mem m, tt_mem stand_in) { return present(m) ? m : stand_in; }

tt_status tt_norm_launch_stats(tt_backend *be, const tt_norm_layout *l, tt_mem mean, tt_mem rstd,
                               tt_mem running_mean, tt_mem running_var, tt_mem x, float eps,
                               float momentum)
{
    int update = present(running_mean) && present(running_var);
    return launch_reduce(
        be, "norm_stats", l->stat_count,
        TT_ARGS(tt_arg_mem(mean), tt_arg_mem(rstd), tt_arg_mem(or_stand_in(running_mean, mean)),
                tt_arg_mem(or_stand_in(running_var, rstd)), tt_arg_mem(x),
                tt_arg_u64(l->stat_stride), tt_arg_i32(l->segments), tt_arg_i32(l->seg_len),
                tt_arg_u64(l->seg_stride), tt_arg_f32(eps), tt_arg_i32(update),
                tt_arg_f32(momentum)));
}

static tt_status apply(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x, tt_mem mean,
                       tt_mem stat, int stat_is_var, float eps, tt_mem weight, tt_mem bias,
                       int relu_mask)
{
    /* one row per (n, c) plane: the kernel divides once per plane */
    size_t global[2] = {(size_t)l->hw, (size_t)l->batch * l->channels};
    return tt_launch_kernel(
        be, "norm", "norm_apply", NULL, 2, global, NULL,
        TT_ARGS(tt_arg_mem(y), tt_arg_mem(x), tt_arg_mem(mean), tt_arg_mem(stat),
                tt_arg_mem(or_stand_in(weight, x)), tt_arg_mem(or_stand_in(bias, x)),
                tt_arg_i32(relu_mask), tt_arg_i32(stat_is_var), tt_arg_f32(eps),
                tt_arg_i32(present(weight)), tt_arg_i32(present(bias)), tt_arg_i32(l->channels),
                tt_arg_i32(l->hw), tt_arg_i32(l->stat_n_stride), tt_arg_i32(l->channels_per_stat)));
}

tt_status tt_norm_launch_apply(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x,
                               tt_mem mean, tt_mem stat, int stat_is_var, float eps,
                               tt_mem weight, tt_mem bias)
{
    return apply(be, l, y, x, mean, stat, stat_is_var, eps, weight, bias, 0);
}

/* dinp at dy's very place: overwrite (in place).  Any other overlap is a
 * caller's mistake. */
static tt_status in_place(const char *op, const tt_norm_layout *l, tt_mem dinp, tt_mem dy,
                          int *overwrite)
{
    size_t bytes = (size_t)l->batch * l->channels * l->hw * sizeof(float);
    *overwrite = dinp.buffer == dy.buffer && dinp.offset == dy.offset;
    if (dinp.buffer == dy.buffer && !*overwrite && dinp.offset < dy.offset + bytes &&
        dy.offset < dinp.offset + bytes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: the input gradient overlaps the output gradient without being "
                            "it; pass the same place to work in place, or separate ones", op);
    return NULL;
}

tt_status tt_norm_launch_relu_backward(tt_backend *be, const tt_norm_layout *l, tt_mem g,
                                       tt_mem x, tt_mem mean, tt_mem rstd, tt_mem weight,
                                       tt_mem bias)
{
    return apply(be, l, g, x, mean, rstd, 0, 0.0f, weight, bias, 1);
}

tt_status tt_norm_launch_backward_input(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                                        tt_mem dy, tt_mem x, tt_mem mean, tt_mem rstd,
                                        tt_mem weight)
{
    int overwrite;
    TT_TRY(in_place("norm backward", l, dinp, dy, &overwrite));
    return launch_reduce(
        be, "norm_backward_input", l->stat_count,
        TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dy), tt_arg_mem(x), tt_arg_mem(mean),
                tt_arg_mem(rstd), tt_arg_mem(or_stand_in(weight, x)), tt_arg_i32(present(weight)),
                tt_arg_i32(!overwrite), tt_arg_u64(l->stat_stride), tt_arg_i32(l->segments), tt_arg_i32(l->seg_len),
                tt_arg_u64(l->seg_stride), tt_arg_i32(l->channels), tt_arg_i32(l->hw)));
}

tt_status tt_norm_launch_param_grads(tt_backend *be, const tt_norm_layout *l, tt_mem dweight,
                                     tt_mem dbias, tt_mem dy, tt_mem x, tt_mem mean, tt_mem stat,
                                     int stat_is_var, float eps)
{
    if (!present(dweight) && !present(dbias)) return NULL;
    tt_mem stand_in = present(dweight) ? dweight : dbias;
    return launch_reduce(
        be, "norm_param_grads", l->channels,
        TT_ARGS(tt_arg_mem(or_stand_in(dweight, stand_in)),
                tt_arg_mem(or_stand_in(dbias, stand_in)),
                tt_arg_mem(dy), tt_arg_mem(x), tt_arg_mem(mean), tt_arg_mem(stat),
                tt_arg_i32(stat_is_var), tt_arg_f32(eps), tt_arg_i32(present(dweight)),
                tt_arg_i32(present(dbias)), tt_arg_i32(l->batch), tt_arg_i32(l->channels),
                tt_arg_i32(l->hw), tt_arg_i32(l->stat_n_stride),
                tt_arg_i32(l->channels_per_stat)));
}

tt_status tt_norm_launch_eval_backward_input(tt_backend *be, const tt_norm_layout *l,
                                             tt_mem dinp, tt_mem dy, tt_mem var, tt_mem weight,
                                             float eps)
{
    int total = l->batch * l->channels * l->hw, overwrite;
    TT_TRY(in_place("batch_norm eval backward", l, dinp, dy, &overwrite));
    return TT_LAUNCH_1D(be, "norm", "norm_eval_backward_input", (size_t)total, tt_arg_mem(dinp),
                        tt_arg_mem(dy), tt_arg_mem(var), tt_arg_mem(or_stand_in(weight, var)),
                        tt_arg_i32(present(weight)), tt_arg_i32(!overwrite), tt_arg_f32(eps), tt_arg_i32(l->channels),
                        tt_arg_i32(l->hw), tt_arg_i32(total));
}
