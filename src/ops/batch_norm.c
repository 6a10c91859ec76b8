/* Batch normalisation (torch.nn.BatchNorm2d): host side of opencl/norm.cl.
 *
 * Training forward: one work-group per channel reduces the mean and biased
 * variance over (N, H, W) (two passes, local-memory tree) and updates the
 * running statistics; an element-wise pass writes y.  Eval forward is the
 * element-wise pass with the running statistics.  Training backward: one
 * work-group per channel adds rstd * (g - mean(g) - xhat * mean(g xhat)),
 * g = dy * weight[c], to dinp; another reduces dweight and dbias.  Eval
 * backward: dinp += dy * weight / sqrt(running_var + eps), element-wise. */
#include "ops/batch_norm.h"

#include "core/status.h"
#include "ops/norm.h"

tt_batch_norm_desc tt_batch_norm_desc_make(int batch, int channels, int height, int width)
{
    return (tt_batch_norm_desc){batch, channels, height, width, TT_NORM_DEFAULT_EPS, 0.1f};
}

size_t tt_batch_norm_saved_floats(const tt_batch_norm_desc *desc)
{
    return 2 * (size_t)(desc->channels > 0 ? desc->channels : 0);
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

tt_status tt_batch_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                int training)
{
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(need(out, "output"));
    TT_TRY(need(inp, "input"));
    TT_TRY(check_running(state));
    tt_norm_layout l = tt_norm_layout_batch(desc->batch, desc->channels, desc->height, desc->width);
    if (!training) {
        TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
        return tt_norm_launch_apply(be, &l, out, inp, state->running_mean, state->running_var, 1,
                                    desc->eps, state->weight, state->bias);
    }
    TT_TRY(need(saved, "saved statistics"));
    tt_mem mean = saved, rstd = tt_mem_f32(saved, (size_t)l.stat_count);
    float momentum = desc->momentum;
    if (state->running_mean.buffer) {
        state->num_batches_tracked++;
        if (momentum == TT_BATCH_NORM_CUMULATIVE_AVERAGE)
            momentum = 1.0f / (float)state->num_batches_tracked;
    }
    TT_TRY(tt_norm_launch_stats(be, &l, mean, rstd, state->running_mean, state->running_var, inp,
                                desc->eps, momentum));
    return tt_norm_launch_apply(be, &l, out, inp, mean, rstd, 0, desc->eps, state->weight,
                                state->bias);
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
    tt_norm_layout l = tt_norm_layout_batch(desc->batch, desc->channels, desc->height, desc->width);
    if (!training) {
        TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
        /* the parameter gradients first: dinp may be dout itself */
        TT_TRY(tt_norm_launch_param_grads(be, &l, dweight, dbias, dout, inp, state->running_mean,
                                          state->running_var, 1, desc->eps));
        if (!dinp.buffer) return NULL;
        return tt_norm_launch_eval_backward_input(be, &l, dinp, dout, state->running_var,
                                                  state->weight, desc->eps);
    }
    TT_TRY(need(saved, "saved statistics"));
    tt_mem mean = saved, rstd = tt_mem_f32(saved, (size_t)l.stat_count);
    TT_TRY(tt_norm_launch_param_grads(be, &l, dweight, dbias, dout, inp, mean, rstd, 0, desc->eps));
    if (!dinp.buffer) return NULL;
    return tt_norm_launch_backward_input(be, &l, dinp, dout, inp, mean, rstd, state->weight);
}

/* The checks and layout of a call that reads a training forward's input
 * and saved statistics and writes `dst` (called `what`). */
static tt_status from_saved(const tt_batch_norm_desc *desc, tt_mem dst, const char *what,
                            tt_mem inp, tt_mem saved, tt_norm_layout *l)
{
    TT_TRY(tt_batch_norm_check(desc, 1));
    TT_TRY(need(dst, what));
    TT_TRY(need(inp, "input"));
    TT_TRY(need(saved, "saved statistics"));
    *l = tt_norm_layout_batch(desc->batch, desc->channels, desc->height, desc->width);
    return NULL;
}

tt_status tt_batch_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    const tt_batch_norm_state *state,
                                    const tt_batch_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(from_saved(desc, out, "output", inp, saved, &l));
    return tt_norm_launch_apply(be, &l, out, inp, saved, tt_mem_f32(saved, (size_t)l.stat_count), 0,
                                desc->eps, state->weight, state->bias);
}

tt_status tt_batch_norm_relu_backward(tt_backend *be, tt_mem d, tt_mem inp, tt_mem saved,
                                      const tt_batch_norm_state *state,
                                      const tt_batch_norm_desc *desc)
{
    tt_norm_layout l;
    TT_TRY(from_saved(desc, d, "gradient", inp, saved, &l));
    return tt_norm_launch_relu_backward(be, &l, d, inp, saved, tt_mem_f32(saved, (size_t)l.stat_count),
                                        state->weight, state->bias);
}
