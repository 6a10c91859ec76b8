/* Group normalisation (torch.nn.GroupNorm): host side of opencl/norm.cl.
 *
 * Forward: partial moments per share of each plane, merged per (n, g) into
 * mean and biased variance, then an element-wise pass writes y (with the
 * fused ReLU when the descriptor asks).  Backward: partial sums of g and
 * g * xhat per share (g = dy, masked by the ReLU), merged per channel into
 * dweight and dbias and per (n, g) into the two means that the element-wise
 * input gradient rstd * (g w - mean(g w) - xhat * mean(g w xhat)) needs. */
#include "ops/group_norm.h"

#include "core/status.h"
#include "ops/norm.h"

tt_group_norm_desc tt_group_norm_desc_make(int batch, int channels, int height, int width,
                                           int groups)
{
    return (tt_group_norm_desc){.batch = batch, .channels = channels, .height = height,
                                .width = width, .groups = groups, .eps = TT_NORM_DEFAULT_EPS};
}

size_t tt_group_norm_saved_floats(const tt_group_norm_desc *desc)
{
    if (desc->batch <= 0 || desc->channels <= 0 || desc->height <= 0 || desc->width <= 0 ||
        desc->groups <= 0 || desc->channels % desc->groups)
        return 0;
    tt_norm_layout l = tt_norm_layout_group(desc->batch, desc->channels, desc->height,
                                            desc->width, desc->groups);
    return tt_norm_saved_floats(&l);
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

static tt_norm_layout layout(const tt_group_norm_desc *d)
{
    tt_norm_layout l = tt_norm_layout_group(d->batch, d->channels, d->height, d->width, d->groups);
    l.x_precision = d->input_precision;
    l.g_precision = d->grad_precision;
    return l;
}

/* What the element-wise and backward passes read of a forward's saved. */
static tt_norm_params params(const tt_group_norm_desc *d, const tt_norm_layout *l, tt_mem saved,
                             tt_mem weight, tt_mem bias)
{
    return (tt_norm_params){tt_norm_saved_mean(saved), tt_norm_saved_rstd(saved, l), 0, d->eps,
                            weight, bias, d->relu};
}

/* The checks of a call that reads inp and saved and `dst` (called `what`),
 * and its layout. */
static tt_status begin(const tt_group_norm_desc *desc, tt_mem dst, const char *what, tt_mem inp,
                       tt_mem saved, tt_norm_layout *l)
{
    TT_TRY(need(dst, what));
    TT_TRY(need(inp, "input"));
    *l = layout(desc);
    return tt_norm_check_saved("group_norm", saved, l);
}

tt_status tt_group_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(tt_group_norm_check(desc));
    TT_TRY(begin(desc, saved, "saved", inp, saved, &l));
    tt_norm_params p = params(desc, &l, saved, weight, bias);
    TT_TRY(tt_norm_launch_stats(be, &l, p.mean, p.stat, (tt_mem){0}, (tt_mem){0}, inp,
                                tt_norm_saved_scratch(saved, &l), desc->eps, 0));
    return out.buffer ? tt_norm_launch_apply(be, &l, out, inp, &p) : NULL;
}

tt_status tt_group_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved, tt_mem weight,
                                 tt_mem bias, const tt_group_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(tt_group_norm_check(desc));
    if (!dinp.buffer && !dweight.buffer && !dbias.buffer) return NULL;
    TT_TRY(begin(desc, dout, "output gradient", inp, saved, &l));
    tt_norm_params p = params(desc, &l, saved, weight, bias);
    return tt_norm_launch_backward(be, &l, dinp, dweight, dbias, dout, inp, &p, 1,
                                   tt_norm_saved_scratch(saved, &l));
}

tt_status tt_group_norm_apply_saved_band(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                         tt_mem weight, tt_mem bias,
                                         const tt_group_norm_desc *desc, const tt_band *band)
{
    tt_norm_layout l;
    TT_TRY(tt_group_norm_check(desc));
    TT_TRY(begin(desc, out, "output", inp, saved, &l));
    tt_norm_params p = params(desc, &l, saved, weight, bias);
    if (band) return tt_norm_launch_apply_band(be, &l, out, inp, &p, band);
    return tt_norm_launch_apply(be, &l, out, inp, &p);
}

tt_status tt_group_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc)
{
    return tt_group_norm_apply_saved_band(be, out, inp, saved, weight, bias, desc, NULL);
}
