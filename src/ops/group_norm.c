/* Group normalisation (torch.nn.GroupNorm): host side of opencl/norm.cl.
 *
 * Forward: one work-group per (n, g) reduces mean and biased variance
 * (two passes, local-memory tree), then an element-wise pass writes y.
 * Backward: one work-group per (n, g) reduces sum(g) and sum(g * xhat),
 * g = dy * weight[c], and adds rstd * (g - mean(g) - xhat * mean(g xhat)) to
 * dinp; one work-group per channel reduces dweight and dbias over n and the
 * pixels. */
#include "ops/group_norm.h"

#include "core/status.h"
#include "ops/norm.h"

tt_group_norm_desc tt_group_norm_desc_make(int batch, int channels, int height, int width,
                                           int groups)
{
    return (tt_group_norm_desc){batch, channels, height, width, groups, TT_NORM_DEFAULT_EPS};
}

size_t tt_group_norm_saved_floats(const tt_group_norm_desc *desc)
{
    if (desc->batch <= 0 || desc->groups <= 0) return 0;
    return 2 * (size_t)desc->batch * (size_t)desc->groups;
}

tt_status tt_group_norm_check(const tt_group_norm_desc *d)
{
    TT_TRY(tt_norm_check_shape("group_norm", d->batch, d->channels, d->height, d->width));
    if (d->groups <= 0 || d->channels % d->groups != 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "group_norm: %d groups do not divide C=%d channels evenly; choose a "
                            "group count that divides the channel count",
                            d->groups, d->channels);
    if (!(d->eps > 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "group_norm: eps must be positive (got %g); PyTorch uses 1e-5",
                            (double)d->eps);
    return NULL;
}

static tt_status need(tt_mem m, const char *what)
{
    if (m.buffer) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "group_norm: %s buffer is missing", what);
}

tt_status tt_group_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc)
{
    TT_TRY(tt_group_norm_check(desc));
    TT_TRY(need(out, "output"));
    TT_TRY(need(saved, "saved statistics"));
    TT_TRY(need(inp, "input"));
    tt_norm_layout l = tt_norm_layout_group(desc->batch, desc->channels, desc->height,
                                            desc->width, desc->groups);
    tt_mem mean = saved, rstd = tt_mem_f32(saved, (size_t)l.stat_count);
    TT_TRY(tt_norm_launch_stats(be, &l, mean, rstd, (tt_mem){0}, (tt_mem){0}, inp, desc->eps, 0));
    return tt_norm_launch_apply(be, &l, out, inp, mean, rstd, 0, desc->eps, weight, bias);
}

tt_status tt_group_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved, tt_mem weight,
                                 const tt_group_norm_desc *desc)
{
    TT_TRY(tt_group_norm_check(desc));
    if (!dinp.buffer && !dweight.buffer && !dbias.buffer) return NULL;
    TT_TRY(need(dout, "output gradient"));
    TT_TRY(need(inp, "input"));
    TT_TRY(need(saved, "saved statistics"));
    tt_norm_layout l = tt_norm_layout_group(desc->batch, desc->channels, desc->height,
                                            desc->width, desc->groups);
    tt_mem mean = saved, rstd = tt_mem_f32(saved, (size_t)l.stat_count);
    /* the parameter gradients first: dinp may be dout itself */
    TT_TRY(tt_norm_launch_param_grads(be, &l, dweight, dbias, dout, inp, mean, rstd, 0, desc->eps));
    if (!dinp.buffer) return NULL;
    return tt_norm_launch_backward_input(be, &l, dinp, dout, inp, mean, rstd, weight);
}

/* The checks and layout of a call that reads a forward's input and saved
 * statistics and writes `dst` (called `what`). */
static tt_status from_saved(const tt_group_norm_desc *desc, tt_mem dst, const char *what,
                            tt_mem inp, tt_mem saved, tt_norm_layout *l)
{
    TT_TRY(tt_group_norm_check(desc));
    TT_TRY(need(dst, what));
    TT_TRY(need(inp, "input"));
    TT_TRY(need(saved, "saved statistics"));
    *l = tt_norm_layout_group(desc->batch, desc->channels, desc->height, desc->width, desc->groups);
    return NULL;
}

tt_status tt_group_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(from_saved(desc, out, "output", inp, saved, &l));
    return tt_norm_launch_apply(be, &l, out, inp, saved, tt_mem_f32(saved, (size_t)l.stat_count), 0,
                                desc->eps, weight, bias);
}

tt_status tt_group_norm_relu_backward(tt_backend *be, tt_mem d, tt_mem inp, tt_mem saved,
                                      tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(from_saved(desc, d, "gradient", inp, saved, &l));
    return tt_norm_launch_relu_backward(be, &l, d, inp, saved, tt_mem_f32(saved, (size_t)l.stat_count),
                                        weight, bias);
}
