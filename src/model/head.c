/*
 * The model head's functions (model.h, head.h): its buffers, allocated,
 * placed and freed in one place for every kind; the places of its named
 * tensors; and what is derived from the step recorded on a dry backend:
 * the convolution workspace, the FLOPs and the convolution shapes.
 */
#include "model/head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "ops/conv_autotune.h"
#include "ops/util.h"

/* Multiply-adds of a logged call (2 x this is its FLOPs).  A transposed
 * convolution runs conv2d's geometry with input and output swapped: its
 * input plane times every kernel tap. */
static double macs_of(const tt_conv_log_entry *e)
{
    if (e->transposed) {
        const tt_conv_transpose2d_desc *d = &e->convt;
        int groups = d->groups ? d->groups : 1;
        return (double)d->batch * d->in_h * d->in_w * d->in_channels * (d->out_channels / groups) *
               d->kernel_h * d->kernel_w;
    }
    const tt_conv2d_desc *d = &e->conv;
    int groups = d->groups ? d->groups : 1;
    return (double)d->batch * tt_conv2d_out_h(d) * tt_conv2d_out_w(d) * d->out_channels *
           (d->in_channels / groups) * d->kernel_h * d->kernel_w;
}

/* The workspace that serves every logged call on `be`. */
static size_t workspace_of(const tt_conv_log *log, tt_backend *be)
{
    size_t ws = 0;
    for (int i = 0; i < log->count; i++) {
        const tt_conv_log_entry *e = &log->entries[i];
        size_t b = e->transposed ? tt_conv_transpose2d_workspace_bytes_on(be, &e->convt)
                                 : tt_conv2d_workspace_bytes_on(be, &e->conv);
        if (b > ws) ws = b;
    }
    return ws;
}

/* The logged call as a model convolution shape (count 1). */
static tt_model_conv shape_of(const tt_conv_log_entry *e)
{
    tt_model_conv c = {.count = 1, .transposed = e->transposed, .dilation = 1, .groups = 1};
    if (e->transposed) {
        const tt_conv_transpose2d_desc *d = &e->convt;
        c.in_channels = d->in_channels, c.out_channels = d->out_channels;
        c.kernel = d->kernel_h, c.stride = d->stride_h, c.height = d->in_h, c.width = d->in_w;
    } else {
        const tt_conv2d_desc *d = &e->conv;
        c.in_channels = d->in_channels, c.out_channels = d->out_channels;
        c.kernel = d->kernel_h, c.stride = d->stride_h, c.height = d->in_h, c.width = d->in_w;
        c.no_input_grad = d->no_input_grad;
        c.dilation = d->dilation_h > 1 ? d->dilation_h : 1, c.groups = d->groups > 1 ? d->groups : 1;
    }
    if (e->layer[0])
        snprintf(c.label, sizeof c.label, "%s", e->layer);
    else
        snprintf(c.label, sizeof c.label, "%s %dx%d", e->transposed ? "transposed" : "conv",
                 c.kernel, c.kernel);
    return c;
}

static int same_shape(const tt_model_conv *a, const tt_model_conv *b)
{
    return a->in_channels == b->in_channels && a->out_channels == b->out_channels &&
           a->kernel == b->kernel && a->stride == b->stride && a->height == b->height &&
           a->width == b->width && a->no_input_grad == b->no_input_grad &&
           a->transposed == b->transposed && a->dilation == b->dilation && a->groups == b->groups;
}

/* m->convs and m->flops_per_image from the forward's convolutions (the
 * step ran a whole micro-batch of m->capacity images). */
static tt_status note_convs(tt_model *m, const tt_conv_log *log)
{
    free(m->convs);
    m->convs = tt_calloc((size_t)log->count + 1, sizeof *m->convs);
    m->conv_count = 0;
    if (!m->convs) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "model: out of host memory");
    double macs = 0;
    for (int i = 0; i < log->count; i++) {
        const tt_conv_log_entry *e = &log->entries[i];
        if (!e->forward_phase || e->dir != TT_CONV_DIR_FORWARD) continue;
        macs += macs_of(e);
        tt_model_conv c = shape_of(e);
        int k = 0;
        while (k < m->conv_count && !same_shape(&m->convs[k], &c)) k++;
        if (k < m->conv_count)
            m->convs[k].count++;
        else
            m->convs[m->conv_count++] = c;
    }
    m->flops_per_image = 2.0 * macs / m->capacity;
    return NULL;
}

/* A kind's step as the head records it: the host counters the step
 * advances (batch norm's num_batches_tracked) put back after, since a
 * recorded step trains on nothing. */
typedef struct recorded_step {
    tt_model *m;
    tt_arena_step_fn step;
    void *kind;
} recorded_step;

static tt_status step_keeping_counters(void *ctx, tt_backend *recorder)
{
    recorded_step *r = ctx;
    tt_model *m = r->m;
    int64_t *kept = tt_malloc(sizeof *kept * (size_t)(m->counter_count + 1));
    if (!kept) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", m->spec.kind);
    for (int i = 0; i < m->counter_count; i++) kept[i] = *m->counters[i].value;
    tt_status status = r->step(r->kind, recorder);
    for (int i = 0; i < m->counter_count; i++) *m->counters[i].value = kept[i];
    free(kept);
    return status;
}

/* More than one buffer may hold, or than an eighth of the device. */
static int too_large(const tt_backend *be, size_t ws)
{
    return ws > be->device.max_alloc_bytes || ws > be->device.global_mem_bytes / 8;
}

/* AUTO's workspace limit for the step of `plan` on `be`: no convolution
 * algorithm may need more than the largest tensor the step holds anyway,
 * or than TT_WORKSPACE_FLOOR where that is smaller, so that the workspace
 * never outgrows the activations at full-resolution tiles (im2col's
 * columns of one 3x3 layer are nine times its input) while small tiles
 * keep every candidate; nor more than too_large allows (one buffer, an
 * eighth of the device). */
#define TT_WORKSPACE_FLOOR ((size_t)128 << 20)

static size_t workspace_limit(const tt_arena_plan *plan, const tt_backend *be)
{
    size_t most = TT_WORKSPACE_FLOOR;
    for (int i = 0; i < plan->count; i++)
        if (plan->items[i].bytes > most) most = plan->items[i].bytes;
    if (most > be->device.max_alloc_bytes) most = be->device.max_alloc_bytes;
    if (most > be->device.global_mem_bytes / 8) most = be->device.global_mem_bytes / 8;
    return most;
}

tt_status tt_model_size_convs(tt_model *m, tt_arena_plan *plan, tt_arena_step_fn step,
                              void *kind, tt_conv_algo *algo)
{
    tt_status status = NULL;
    tt_conv_log log = {0};
    recorded_step r = {m, step, kind};
    m->memory.workspace_limit = workspace_limit(plan, m->be);
    TT_CHECK(tt_arena_plan_record_convs(plan, m->be, step_keeping_counters, &r,
                                        &m->workspace_buffer, &log));
    size_t ws = workspace_of(&log, m->be);
    if (too_large(m->be, ws)) {
        tt_conv_algo forced = *algo;
        *algo = tt_conv_direct_row(m->be);
        if (forced != TT_CONV_ALGO_AUTO)
            fprintf(stderr, "tiletrain: warning: --algo %s needs a %.0f MiB convolution workspace "
                    "at this tile, more than the device gives one buffer; running %s\n",
                    tt_conv_algo_name(forced), ws / 1048576.0, tt_conv_algo_name(*algo));
        TT_CHECK(tt_arena_plan_record_convs(plan, m->be, step_keeping_counters, &r,
                                            &m->workspace_buffer, &log));
        ws = workspace_of(&log, m->be);
    }
    TT_CHECK(note_convs(m, &log));
    if (ws)
        TT_CHECK(tt_buffer_alloc(m->be, ws, TT_MEM_WORKSPACE, "conv.workspace",
                                 &m->workspace_buffer));
    m->memory.workspace = ws;
cleanup:
    tt_conv_log_free(&log);
    return status;
}

/* A model to load (spec.predict_only): zeros, its alignment gaps too,
 * with no host copy and no gradients. */
static tt_status zero_params(tt_model *m)
{
    TT_TRY(tt_fill(m->be, tt_mem_of(m->param_buffer), 0.0f, m->params->trainable_floats));
    if (m->state_buffer)
        TT_TRY(tt_fill(m->be, tt_mem_of(m->state_buffer), 0.0f, m->params->state_floats));
    return NULL;
}

tt_status tt_model_head_params(tt_model *m, const tt_param_table *params, uint64_t seed)
{
    m->params = params;
    size_t nt = params->trainable_floats, ns = params->state_floats;
    tt_status status = NULL;
    float *host = NULL, *state = NULL;
    TT_CHECK(tt_buffer_alloc(m->be, nt * sizeof(float), TT_MEM_PARAMETERS, "parameters",
                             &m->param_buffer));
    if (ns)
        TT_CHECK(tt_buffer_alloc(m->be, ns * sizeof(float), TT_MEM_PARAMETERS,
                                 "running statistics", &m->state_buffer));
    if (m->spec.predict_only) return zero_params(m);
    TT_CHECK(tt_buffer_alloc(m->be, nt * sizeof(float), TT_MEM_GRADIENTS, "gradients",
                             &m->grad_buffer));
    host = tt_malloc(nt * sizeof *host);
    state = tt_malloc((ns + 1) * sizeof *state);
    if (!host || !state) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "model: out of host memory");
        goto cleanup;
    }
    tt_params_init(params, seed, host, state);
    TT_CHECK(tt_model_set_params(m, host, state));
    TT_CHECK(tt_model_zero_grads(m));
cleanup:
    free(host);
    free(state);
    return status;
}

tt_status tt_model_head_input(tt_model *m)
{
    size_t bytes = (size_t)m->capacity * m->spec.in_channels * m->height * m->width * sizeof(float);
    TT_TRY(tt_buffer_alloc(m->be, bytes, TT_MEM_DATA, "input", &m->input_buffer));
    m->input = tt_mem_of(m->input_buffer);
    return NULL;
}

tt_status tt_model_head_place(tt_model *m, tt_arena_plan *plan, tt_arena_step_fn step, void *kind)
{
    tt_arena arena;
    recorded_step r = {m, step, kind};
    TT_TRY(tt_arena_plan_place(plan, m->be, step_keeping_counters, &r, &arena));
    m->act_buffers = arena.buffers;
    m->act_count = arena.count;
    m->memory.activations = arena.planned_bytes;
    m->memory.activations_apart = arena.unplanned_bytes;
    return NULL;
}

void tt_model_head_free(tt_model *m)
{
    free(m->counters);
    free(m->convs);
    for (int i = 0; i < m->act_count; i++) tt_buffer_free(m->act_buffers[i]);
    free(m->act_buffers);
    tt_buffer_free(m->input_buffer);
    tt_buffer_free(m->param_buffer);
    tt_buffer_free(m->grad_buffer);
    tt_buffer_free(m->state_buffer);
    tt_buffer_free(m->workspace_buffer);
    m->counters = NULL, m->convs = NULL, m->act_buffers = NULL;
    m->input_buffer = m->param_buffer = m->grad_buffer = m->state_buffer = NULL;
    m->workspace_buffer = NULL;
    m->act_count = m->counter_count = m->conv_count = 0;
}

tt_status tt_model_zero_grads(tt_model *m)
{
    return tt_fill(m->be, tt_mem_of(m->grad_buffer), 0.0f, m->params->trainable_floats);
}

tt_mem tt_model_param(const tt_model *m, int index)
{
    if (index < 0) return (tt_mem){0};
    const tt_param *p = &m->params->params[index];
    return tt_mem_f32(tt_mem_of(p->trainable ? m->param_buffer : m->state_buffer), p->offset);
}

tt_mem tt_model_grad(const tt_model *m, int index)
{
    if (index < 0 || !m->params->params[index].trainable) return (tt_mem){0};
    return tt_mem_f32(tt_mem_of(m->grad_buffer), m->params->params[index].offset);
}

tt_status tt_model_get_params(tt_model *m, float *trainable, float *state)
{
    if (trainable)
        TT_TRY(tt_read(m->be, trainable, tt_mem_of(m->param_buffer),
                       m->params->trainable_floats * sizeof(float)));
    if (state && m->state_buffer)
        TT_TRY(tt_read(m->be, state, tt_mem_of(m->state_buffer),
                       m->params->state_floats * sizeof(float)));
    return NULL;
}

tt_status tt_model_set_params(tt_model *m, const float *trainable, const float *state)
{
    if (trainable)
        TT_TRY(tt_write(m->be, tt_mem_of(m->param_buffer), trainable,
                        m->params->trainable_floats * sizeof(float)));
    if (state && m->state_buffer)
        TT_TRY(tt_write(m->be, tt_mem_of(m->state_buffer), state,
                        m->params->state_floats * sizeof(float)));
    return NULL;
}
