/* Batch normalisation (torch.nn.BatchNorm2d): host side of opencl/norm.cl.
 *
 * Training forward: partial moments per share of each plane, merged per
 * channel into the mean and biased variance over (N, H, W) (and the running
 * statistics); an element-wise pass writes y.  Eval forward is the
 * element-wise pass with the running statistics.  Training backward:
 * partial sums of g and g * xhat (g = dy, masked by a fused ReLU), merged
 * into dweight, dbias and the means of the element-wise input gradient
 * rstd * (g w - mean(g w) - xhat * mean(g w xhat)).  Eval backward: dinp
 * += g * weight / sqrt(running_var + eps), element-wise. */
#include "ops/batch_norm.h"

#include "core/status.h"
#include "ops/norm.h"

tt_batch_norm_desc tt_batch_norm_desc_make(int batch, int channels, int height, int width)
{
    return (tt_batch_norm_desc){batch, channels, height, width, TT_NORM_DEFAULT_EPS, 0.1f, 0, NULL};
}

static tt_norm_layout layout(const tt_batch_norm_desc *d)
{
    return tt_norm_layout_batch(d->batch, d->channels, d->height, d->width);
}

size_t tt_batch_norm_saved_floats(const tt_batch_norm_desc *desc)
{
    if (desc->batch <= 0 || desc->channels <= 0 || desc->height <= 0 || desc->width <= 0)
        return 0;
    tt_norm_layout l = layout(desc);
    return tt_norm_saved_floats(&l);
}

tt_status tt_batch_norm_check(const tt_batch_norm_desc *d, int training)
{
    TT_TRY(tt_norm_check_shape("batch_norm", d->batch, d->channels, d->height, d->width));
    if (!(d->eps > 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "batch_norm: eps must be positive (got %g); PyTorch uses 1e-5",
                            (double)d->eps);
    if (!(d->momentum <= 1) || (d->momentum < 0 && d->momentum != TT_BATCH_NORM_CUMULATIVE_AVERAGE))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "batch_norm: momentum %g is outside [0, 1]; PyTorch uses 0.1 "
                            "(TT_BATCH_NORM_CUMULATIVE_AVERAGE for momentum=None)",
                            (double)d->momentum);
    if (training && (long long)d->batch * d->height * d->width < 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "batch_norm: training on (N=%d, C=%d, H=%d, W=%d) has one value per "
                            "channel, so no batch variance; use a micro-batch above 1 or larger "
                            "crops, or group norm",
                            d->batch, d->channels, d->height, d->width);
    return NULL;
}

static tt_status need(tt_mem m, const char *what)
{
    if (m.buffer) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "batch_norm: %s buffer is missing", what);
}

/* Eval mode and running-statistics updates need both running buffers. */
static tt_status check_running(const tt_batch_norm_state *state)
{
    if (!state->running_mean.buffer != !state->running_var.buffer)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "batch_norm: running_mean and running_var must both be given or both "
                            "be absent");
    return NULL;
}

/* What the element-wise and backward passes read: the saved batch
 * statistics (training) or the running ones (eval). */
static tt_norm_params params(const tt_batch_norm_desc *d, const tt_norm_layout *l, tt_mem saved,
                             const tt_batch_norm_state *state, int training)
{
    tt_norm_params p = {tt_norm_saved_mean(saved), tt_norm_saved_rstd(saved, l), 0, d->eps,
                        state->weight, state->bias, d->relu};
    if (!training) p.mean = state->running_mean, p.stat = state->running_var, p.stat_is_var = 1;
    return p;
}

tt_status tt_batch_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                int training)
{
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(need(out, "output"));
    TT_TRY(need(inp, "input"));
    TT_TRY(check_running(state));
    tt_norm_layout l = layout(desc);
    tt_norm_params p = params(desc, &l, saved, state, training);
    if (!training) {
        TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
        return tt_norm_launch_apply(be, &l, out, inp, &p);
    }
    TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    float momentum = desc->momentum;
    if (state->running_mean.buffer) {
        state->num_batches_tracked++;
        if (momentum == TT_BATCH_NORM_CUMULATIVE_AVERAGE)
            momentum = 1.0f / (float)state->num_batches_tracked;
    }
    TT_TRY(tt_norm_launch_stats(be, &l, p.mean, p.stat, state->running_mean, state->running_var,
                                inp, tt_norm_saved_scratch(saved, &l), desc->eps, momentum));
    return tt_norm_launch_apply(be, &l, out, inp, &p);
}

tt_status tt_batch_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved,
                                 const tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                 int training)
{
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(check_running(state));
    if (!dinp.buffer && !dweight.buffer && !dbias.buffer) return NULL;
    TT_TRY(need(dout, "output gradient"));
    TT_TRY(need(inp, "input"));
    if (!training) TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
    tt_norm_layout l = layout(desc);
    /* eval mode needs the scratch only for the parameter gradients */
    if (training || dweight.buffer || dbias.buffer)
        TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    tt_norm_params p = params(desc, &l, saved, state, training);
    return tt_norm_launch_backward(be, &l, dinp, dweight, dbias, dout, inp, &p, training,
                                   tt_norm_saved_scratch(saved, &l));
}

tt_status tt_batch_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    const tt_batch_norm_state *state,
                                    const tt_batch_norm_desc *desc)
{
    TT_TRY(tt_batch_norm_check(desc, 1));
    TT_TRY(need(out, "output"));
    TT_TRY(need(inp, "input"));
    tt_norm_layout l = layout(desc);
    TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    tt_norm_params p = params(desc, &l, saved, state, 1);
    return tt_norm_launch_apply(be, &l, out, inp, &p);
}
