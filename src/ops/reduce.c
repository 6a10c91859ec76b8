/* Device reductions: launches of opencl/reduce.cl, and the loss result block. */
#include "ops/reduce.h"

#include <limits.h>
#include <string.h>

#include "core/status.h"

int tt_reduce_group_size(const tt_backend *be)
{
    size_t limit = tt_device_group_max(be);
    if (limit == 0 || limit > 256) limit = 256;
    int size = 1;
    while ((size_t)size * 2 <= limit) size *= 2;
    return size;
}

void tt_reduce_options(const tt_backend *be, char *options, size_t size)
{
    snprintf(options, size, "-DTT_WG=%d", tt_reduce_group_size(be));
}

int tt_reduce_groups(const tt_backend *be, size_t items, int max_groups)
{
    size_t group = (size_t)tt_reduce_group_size(be);
    size_t groups = (items + group - 1) / group;
    if (groups < 1) groups = 1;
    if (groups > (size_t)max_groups) groups = (size_t)max_groups;
    return (int)groups;
}

tt_status tt_sum_squares(tt_backend *be, tt_mem acc, tt_mem x, size_t n)
{
    if (n == 0) return NULL;
    tt_status status = NULL;
    tt_buffer *partial = NULL;
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    int groups = tt_reduce_groups(be, n, TT_REDUCE_MAX_GROUPS);
    TT_CHECK(tt_buffer_alloc(be, (size_t)groups * sizeof(float), TT_MEM_WORKSPACE,
                             "sum_squares.partial", &partial));
    size_t global = (size_t)groups * group;
    TT_CHECK(tt_launch_kernel(be, "reduce", "sum_squares_partial", options, 1, &global, &group,
                              TT_ARGS(tt_arg_mem(tt_mem_of(partial)), tt_arg_mem(x),
                                      tt_arg_u64((uint64_t)n))));
    TT_CHECK(tt_launch_kernel(be, "reduce", "sum_squares_finish", options, 1, &group, &group,
                              TT_ARGS(tt_arg_mem(acc), tt_arg_mem(tt_mem_of(partial)),
                                      tt_arg_i32(groups))));
cleanup:
    /* the in-order queue keeps the buffer alive until the kernels using it ran */
    tt_buffer_free(partial);
    return status;
}

tt_status tt_count_nonfinite(tt_backend *be, tt_mem count, tt_mem x, size_t n)
{
    if (n == 0) return NULL;
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    size_t global = (size_t)tt_reduce_groups(be, n, TT_REDUCE_MAX_GROUPS) * group;
    return tt_launch_kernel(be, "reduce", "count_nonfinite", options, 1, &global, &group,
                            TT_ARGS(tt_arg_mem(count), tt_arg_mem(x), tt_arg_u64((uint64_t)n)));
}

tt_status tt_loss_clear(tt_backend *be, tt_mem result)
{
    static const uint32_t zeros[4] = {0, 0, 0, 0};
    return tt_write(be, result, zeros, TT_LOSS_VALUE_BYTES);
}

tt_status tt_loss_read(tt_backend *be, tt_mem result, const char *what, tt_loss_value *out)
{
    _Static_assert(sizeof(tt_loss_value) == TT_LOSS_VALUE_BYTES, "loss block is 4 words");
    memset(out, 0, sizeof *out);
    TT_TRY(tt_read(be, out, result, TT_LOSS_VALUE_BYTES));
    if (out->invalid)
        return tt_error_new(TT_ERR_FORMAT,
                            "%s: %u label values are neither a class index nor the ignore value "
                            "(over %u valid items); check that the masks' class values match the "
                            "model's class count",
                            what, out->invalid, out->count);
    return NULL;
}

tt_status tt_loss_check(const char *op, const tt_loss_desc *d)
{
    if (d->n < 1 || d->c < 1 || d->h < 1 || d->w < 1 ||
        (double)d->n * d->c * d->h * d->w > (double)INT_MAX)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: shape (N=%d, C=%d, H=%d, W=%d) must have every size >= 1 and "
                            "at most %d elements in all; split the batch",
                            op, d->n, d->c, d->h, d->w, INT_MAX);
    if (d->ignore < -1 || d->ignore > 255)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: ignore label %d is not a uint8 value; use 0..255, or -1 for none",
                            op, d->ignore);
    if (d->weights.buffer)
        return tt_mem_check(op, "class weights", d->weights, (size_t)d->c * sizeof(float));
    return NULL;
}

tt_status tt_loss_reduce(tt_backend *be, tt_mem result, const char *kernel, size_t items,
                         int extra_count, const tt_arg *extra)
{
    TT_ASSERT(extra_count >= 0 && extra_count + 3 <= TT_MAX_KERNEL_ARGS);
    tt_status status = NULL;
    tt_buffer *partial = NULL;
    char options[32];
    tt_reduce_options(be, options, sizeof options);
    size_t group = (size_t)tt_reduce_group_size(be);
    int groups = tt_reduce_groups(be, items, TT_REDUCE_MAX_GROUPS);
    TT_CHECK(tt_buffer_alloc(be, 3 * (size_t)groups * sizeof(float), TT_MEM_WORKSPACE,
                             "loss.partial", &partial));
    tt_mem sums = tt_mem_of(partial), counts = tt_mem_f32(sums, (size_t)groups),
           invalid = tt_mem_f32(sums, 2 * (size_t)groups);
    tt_arg args[TT_MAX_KERNEL_ARGS];
    args[0] = tt_arg_mem(sums);
    args[1] = tt_arg_mem(counts);
    args[2] = tt_arg_mem(invalid);
    for (int i = 0; i < extra_count; i++) args[3 + i] = extra[i];
    size_t global = (size_t)groups * group;
    TT_CHECK(tt_launch_kernel(be, "loss", kernel, options, 1, &global, &group, 3 + extra_count,
                              args));
    TT_CHECK(tt_launch_kernel(be, "loss", "loss_finish", options, 1, &group, &group,
                              TT_ARGS(tt_arg_mem(result), tt_arg_mem(sums), tt_arg_mem(counts),
                                      tt_arg_mem(invalid), tt_arg_i32(groups))));
cleanup:
    tt_buffer_free(partial);
    return status;
}
