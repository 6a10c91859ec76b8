/* Batch normalisation (torch.nn.BatchNorm2d): host side of opencl/norm.cl.
 *
 * Training forward: partial moments per share of each plane, merged per
 * channel into the mean and biased variance over (N, H, W) (and the running
 * statistics); an element-wise pass writes y.  Eval forward is the
 * element-wise pass with the running statistics.  Training backward:
 * partial sums of g and g * xhat (g = dy, masked by a fused ReLU), merged
 * into dweight, dbias and the means of the element-wise input gradient
 * rstd * (g w - mean(g w) - xhat * mean(g w xhat)).  Eval backward: dinp
 * += g * weight / sqrt(running_var + eps), element-wise.
 *
 * With desc->sync (training only) the per-channel sums cross the host:
 * forward, this process's mean and squared deviations per channel become
 * count, sum and sum of squares in double, one allreduce_sum adds them over
 * the ranks, and the global mean and rstd are written to saved (the running
 * statistics updated here, on the host); backward, the coefficients of the
 * input gradient (sums of g w and g w xhat) are summed the same way.  The
 * parameter gradients stay this process's: the trainer sums the gradients. */
#include "ops/batch_norm.h"

#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"
#include "ops/norm.h"

tt_batch_norm_desc tt_batch_norm_desc_make(int batch, int channels, int height, int width)
{
    return (tt_batch_norm_desc){.batch = batch, .channels = channels, .height = height,
                                .width = width, .eps = TT_NORM_DEFAULT_EPS, .momentum = 0.1f};
}

static tt_norm_layout layout(const tt_batch_norm_desc *d)
{
    tt_norm_layout l = tt_norm_layout_batch(d->batch, d->channels, d->height, d->width);
    l.x_precision = d->input_precision;
    l.g_precision = d->grad_precision;
    return l;
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
    if (d->sync && !d->sync->allreduce_sum)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "batch_norm: the sync has no allreduce_sum; give one, or no sync "
                            "(NULL) for this process's statistics alone");
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

/* ---- statistics summed over ranks (desc->sync) ---------------------------- */

/* One allreduce_sum of values[0] = this process's count and 2 C sums; the
 * summed count must be at least our own.  A backend that runs nothing
 * (memory estimates) makes no call: its numbers mean nothing, and an
 * estimate on one rank must not wait for the others. */
static tt_status sum_over_ranks(tt_backend *be, const tt_norm_sync *sync, double *values,
                                size_t n, const char *what)
{
    if (be->ops->runs_nothing) return NULL;
    double own = values[0];
    tt_status s = sync->allreduce_sum(sync->ctx, values, n);
    if (s) return tt_error_prefix(s, "batch_norm: summing the %s over the ranks", what);
    if (!(values[0] >= own))
        return tt_error_new(TT_ERR_INTERNAL,
                            "batch_norm: summing the %s over the ranks gave a count of %g, less "
                            "than this process's %g: allreduce_sum must add in place",
                            what, values[0], own);
    return NULL;
}

/* Training statistics of every rank's batch: count, sum and sum of
 * squares per channel from this process's moments, summed; the mean and
 * rstd of the biased variance into saved, and the running statistics
 * updated with the unbiased one (identical on every rank). */
static tt_status sync_stats(tt_backend *be, const tt_norm_layout *l, tt_mem saved, tt_mem inp,
                            tt_batch_norm_state *state, const tt_batch_norm_desc *d,
                            float momentum)
{
    size_t channels = (size_t)l->stat_count;
    tt_mem scratch = tt_norm_saved_scratch(saved, l);
    tt_mem moments = tt_norm_scratch_coefs(scratch, l);
    double *sums = tt_calloc(2 * channels + 1, sizeof *sums), *mean = sums + 1, *var = mean + channels;
    float *host = tt_calloc(4 * channels, sizeof *host); /* moments or mean|rstd, running m|v */
    tt_status status = NULL;
    if (!sums || !host) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "batch_norm: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_norm_launch_moments(be, l, moments, inp, scratch));
    TT_CHECK(tt_read(be, host, moments, 2 * channels * sizeof *host));
    double count = (double)l->planes_per_stat * l->hw;
    sums[0] = count;
    for (size_t c = 0; c < channels; c++) {
        double mu = host[2 * c], m2 = host[2 * c + 1];
        mean[c] = count * mu;          /* sum */
        var[c] = m2 + count * mu * mu; /* sum of squares */
    }
    TT_CHECK(sum_over_ranks(be, d->sync, sums, 2 * channels + 1, "batch statistics"));
    double total = sums[0];
    for (size_t c = 0; c < channels; c++) {
        mean[c] /= total;
        var[c] = fmax(var[c] / total - mean[c] * mean[c], 0.0);
        host[c] = (float)mean[c];
        host[channels + c] = (float)(1.0 / sqrt(var[c] + (double)d->eps));
    }
    TT_CHECK(tt_write(be, saved, host, 2 * channels * sizeof *host)); /* mean, then rstd */
    if (!state->running_mean.buffer) goto cleanup;
    float *run_mean = host + 2 * channels, *run_var = host + 3 * channels;
    TT_CHECK(tt_read(be, run_mean, state->running_mean, channels * sizeof *host));
    TT_CHECK(tt_read(be, run_var, state->running_var, channels * sizeof *host));
    double m = momentum;
    for (size_t c = 0; c < channels; c++) {
        double unbiased = total > 1 ? var[c] * (total / (total - 1)) : var[c];
        run_mean[c] = (float)((1 - m) * run_mean[c] + m * mean[c]);
        run_var[c] = (float)((1 - m) * run_var[c] + m * unbiased);
    }
    TT_CHECK(tt_write(be, state->running_mean, run_mean, channels * sizeof *host));
    TT_CHECK(tt_write(be, state->running_var, run_var, channels * sizeof *host));
cleanup:
    free(sums), free(host);
    return status;
}

/* Training backward over every rank's batch: the parameter gradients from
 * this process's elements, the input gradient's coefficients (means of
 * g w and g w xhat; w, the weight, is the same on every rank) from the sums
 * over all ranks.  Calls allreduce_sum once, whichever gradients are
 * asked for. */
static tt_status sync_backward(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                               tt_mem dweight, tt_mem dbias, tt_mem dy, tt_mem x,
                               const tt_norm_params *p, tt_mem scratch, const tt_norm_sync *sync)
{
    size_t channels = (size_t)l->stat_count;
    tt_mem coefs = tt_norm_scratch_coefs(scratch, l);
    double *sums = tt_calloc(2 * channels + 1, sizeof *sums);
    float *host = tt_calloc(2 * channels, sizeof *host);
    tt_status status = NULL;
    if (!sums || !host) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "batch_norm: out of host memory");
        goto cleanup;
    }
    if (dinp.buffer) TT_CHECK(tt_norm_check_in_place("batch_norm backward", l, dinp, dy));
    TT_CHECK(tt_norm_launch_grad_sums(be, l, dweight, dbias, dy, x, p, 1, scratch));
    TT_CHECK(tt_read(be, host, coefs, 2 * channels * sizeof *host));
    double count = (double)l->planes_per_stat * l->hw;
    sums[0] = count;
    for (size_t i = 0; i < 2 * channels; i++) sums[1 + i] = host[i] * count;
    TT_CHECK(sum_over_ranks(be, sync, sums, 2 * channels + 1, "input gradient's sums"));
    for (size_t i = 0; i < 2 * channels; i++) host[i] = (float)(sums[1 + i] / sums[0]);
    if (!dinp.buffer) goto cleanup;
    TT_CHECK(tt_write(be, coefs, host, 2 * channels * sizeof *host));
    TT_CHECK(tt_norm_launch_input_grad(be, l, dinp, dy, x, p, 1, scratch));
cleanup:
    free(sums), free(host);
    return status;
}

tt_status tt_batch_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                int training)
{
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(need(inp, "input"));
    TT_TRY(check_running(state));
    tt_norm_layout l = layout(desc);
    tt_norm_params p = params(desc, &l, saved, state, training);
    if (!training) {
        TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
        return out.buffer ? tt_norm_launch_apply(be, &l, out, inp, &p) : NULL;
    }
    TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    float momentum = desc->momentum;
    if (state->running_mean.buffer) {
        state->num_batches_tracked++;
        if (momentum == TT_BATCH_NORM_CUMULATIVE_AVERAGE)
            momentum = 1.0f / (float)state->num_batches_tracked;
    }
    if (desc->sync)
        TT_TRY(sync_stats(be, &l, saved, inp, state, desc, momentum));
    else
        TT_TRY(tt_norm_launch_stats(be, &l, p.mean, p.stat, state->running_mean,
                                    state->running_var, inp, tt_norm_saved_scratch(saved, &l),
                                    desc->eps, momentum));
    return out.buffer ? tt_norm_launch_apply(be, &l, out, inp, &p) : NULL;
}

tt_status tt_batch_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved,
                                 const tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                 int training)
{
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(check_running(state));
    int synced = training && desc->sync; /* then one allreduce_sum, whatever is asked */
    if (!dinp.buffer && !dweight.buffer && !dbias.buffer && !synced) return NULL;
    TT_TRY(need(dout, "output gradient"));
    TT_TRY(need(inp, "input"));
    if (!training) TT_TRY(need(state->running_mean, "running_mean (eval mode)"));
    tt_norm_layout l = layout(desc);
    /* eval mode needs the scratch only for the parameter gradients */
    if (training || dweight.buffer || dbias.buffer)
        TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    tt_norm_params p = params(desc, &l, saved, state, training);
    if (synced)
        return sync_backward(be, &l, dinp, dweight, dbias, dout, inp, &p,
                             tt_norm_saved_scratch(saved, &l), desc->sync);
    return tt_norm_launch_backward(be, &l, dinp, dweight, dbias, dout, inp, &p, training,
                                   tt_norm_saved_scratch(saved, &l));
}

tt_status tt_batch_norm_apply_saved_band(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                         const tt_batch_norm_state *state,
                                         const tt_batch_norm_desc *desc, const tt_band *band)
{
    int training = saved.buffer != NULL;
    TT_TRY(tt_batch_norm_check(desc, training));
    TT_TRY(need(out, "output"));
    TT_TRY(need(inp, "input"));
    tt_norm_layout l = layout(desc);
    if (training)
        TT_TRY(tt_norm_check_saved("batch_norm", saved, &l));
    else
        TT_TRY(need(state->running_mean, "running_mean (no saved statistics: eval mode)"));
    tt_norm_params p = params(desc, &l, saved, state, training);
    if (band) return tt_norm_launch_apply_band(be, &l, out, inp, &p, band);
    return tt_norm_launch_apply(be, &l, out, inp, &p);
}

tt_status tt_batch_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    const tt_batch_norm_state *state,
                                    const tt_batch_norm_desc *desc)
{
    return tt_batch_norm_apply_saved_band(be, out, inp, saved, state, desc, NULL);
}
