/* One window's device work: model, loss, optimizer; see step.h.  Read it
 * top to bottom in the order step.h lists the calls. */
#include "train/step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "ops/bce.h"
#include "ops/focal.h"
#include "ops/lovasz.h"
#include "ops/softmax_ce.h"
#include "ops/tversky.h"
#include "ops/util.h"

/* Floats a term reduced over the window keeps in window_sums: (classes, 3)
 * sums, one uint32 of invalid targets, (classes, 2) stats. */
static size_t window_stride(const tt_step *s)
{
    return (size_t)s->config.model.classes * 5 + 1;
}

/* --sync-bn's sums over the ranks. */
static tt_status norm_sum(void *ctx, double *values, size_t n)
{
    return tt_dist_sum_f64(ctx, values, n);
}

/* The encoder's tensors ("encoder.*") as group 0 at `scale` of the rate,
 * the rest as group 1. */
static tt_status encoder_groups(tt_step *s, double scale)
{
    const tt_param_table *params = s->model->params;
    tt_optimizer *opt = s->optimizer;
    size_t end = 0, rest = opt->floats; /* the encoder's last float, the rest's first */
    for (int i = 0; i < params->count; i++) {
        const tt_param *p = &params->params[i];
        if (!p->trainable) continue;
        if (strncmp(p->name, "encoder.", 8) == 0) {
            if (p->offset + p->count > end) end = p->offset + p->count;
        } else if (p->offset < rest) {
            rest = p->offset;
        }
    }
    if (!end || end > rest)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--encoder-lr / --freeze-encoder-steps: this model's encoder.* "
                            "tensors are %s", end ? "not one range of its parameters" : "none");
    if (rest == opt->floats) /* nothing but the encoder: one group */
        return tt_optimizer_set_groups(opt, &(tt_optimizer_group){0, rest, scale, 0, 0}, 1);
    tt_optimizer_group groups[2] = {{0, rest, scale, 0, 0}, {rest, opt->floats, 1.0, 0, 0}};
    return tt_optimizer_set_groups(opt, groups, 2);
}

tt_status tt_step_create(tt_backend *be, const tt_step_config *config, tt_step **out)
{
    *out = NULL;
    tt_step *s = tt_calloc(1, sizeof *s);
    if (!s) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    s->be = be;
    s->config = *config;
    const tt_step_config *c = &s->config;
    tt_status status = NULL;
    if (!c->loss.count) /* no terms: the mask kind's own loss */
        TT_CHECK(tt_loss_spec_parse("auto", c->mask_kind, &s->config.loss));
    TT_CHECK(tt_model_create(be, &c->model, c->micro_batch, c->height, c->width, c->seed,
                             &s->model));
    s->dist = c->dist;
    if (c->norm_dist) {
        s->norm_sync = (tt_norm_sync){norm_sum, (void *)c->norm_dist};
        s->model->norm_sync = &s->norm_sync;
    }
    TT_CHECK(tt_buffer_alloc(be, (size_t)c->micro_batch * (size_t)c->planes * c->height * c->width,
                             TT_MEM_DATA, "labels", &s->labels));
    TT_CHECK(tt_buffer_alloc(be, (size_t)c->loss.count * TT_LOSS_VALUE_BYTES, TT_MEM_WORKSPACE,
                             "loss", &s->loss_blocks));
    if (c->class_weighted) {
        size_t bytes = (size_t)c->model.classes * sizeof(float);
        TT_CHECK(tt_buffer_alloc(be, bytes, TT_MEM_WORKSPACE, "class weights", &s->class_weights));
        TT_CHECK(tt_write(be, tt_mem_of(s->class_weights), c->class_weights, bytes));
    }
    if (tt_loss_spec_two_pass(&c->loss))
        TT_CHECK(tt_buffer_alloc(be, (size_t)c->loss.count * window_stride(s) * sizeof(float),
                                 TT_MEM_WORKSPACE, "window loss sums", &s->window_sums));
    TT_CHECK(tt_buffer_alloc(be, 2 * sizeof(float), TT_MEM_WORKSPACE, "grad-norm", &s->reduce_block));
    TT_CHECK(tt_optimizer_create(be, &c->optimizer, s->model->params->trainable_floats,
                                 &s->optimizer));
    if (c->encoder_group) TT_CHECK(encoder_groups(s, c->encoder_lr_scale));
    if (c->ema_decay > 0) {
        TT_CHECK(tt_buffer_alloc(be, s->model->params->trainable_floats * sizeof(float),
                                 TT_MEM_PARAMETERS, "ema", &s->ema));
        TT_CHECK(tt_step_ema_reset(s));
    }
    *out = s;
    return NULL;
cleanup:
    tt_step_destroy(s);
    return status;
}

void tt_step_destroy(tt_step *s)
{
    if (!s) return;
    tt_buffer_free(s->labels);
    tt_buffer_free(s->loss_blocks);
    tt_buffer_free(s->class_weights);
    tt_buffer_free(s->window_sums);
    tt_buffer_free(s->reduce_block);
    tt_buffer_free(s->ema);
    tt_optimizer_destroy(s->optimizer);
    tt_model_destroy(s->model);
    free(s);
}

static tt_mem term_block(tt_step *s, int term)
{
    return tt_mem_at(tt_mem_of(s->loss_blocks), (size_t)term * TT_LOSS_VALUE_BYTES);
}

/* Term `term`'s part of window_sums: sums, invalid, stats. */
static void window_parts(tt_step *s, int term, tt_mem *sums, tt_mem *invalid, tt_mem *stats)
{
    size_t classes = (size_t)s->config.model.classes;
    *sums = tt_mem_f32(tt_mem_of(s->window_sums), (size_t)term * window_stride(s));
    *invalid = tt_mem_f32(*sums, classes * 3);
    *stats = tt_mem_f32(*invalid, 1);
}

tt_status tt_step_begin(tt_step *s)
{
    TT_TRY(tt_model_zero_grads(s->model));
    s->window_ready = 0;
    if (s->window_sums)
        TT_TRY(tt_fill(s->be, tt_mem_of(s->window_sums), 0.0f,
                       (size_t)s->config.loss.count * window_stride(s)));
    return tt_fill(s->be, tt_mem_of(s->loss_blocks), 0.0f,
                   (size_t)s->config.loss.count * TT_LOSS_VALUE_BYTES / sizeof(float));
}

tt_status tt_step_upload(tt_step *s, const float *images, const uint8_t *labels, int n)
{
    size_t pixels = (size_t)n * s->config.height * s->config.width;
    tt_backend_phase(s->be, "data");
    TT_TRY(tt_write(s->be, s->model->input, images,
                    pixels * (size_t)s->config.model.in_channels * sizeof(float)));
    return tt_write(s->be, tt_mem_of(s->labels), labels, pixels * (size_t)s->config.planes);
}

/* A Dice or Tversky term as the region op takes it: Dice's smooth is that
 * of (2 I + s) / (P + T + s), the op's (I + s') / (I + (P - I)/2 + (T - I)/2
 * + s') with s' = s / 2. */
static tt_tversky region_of(const tt_step *s, const tt_loss_term *t, int per_image)
{
    double smooth = t->kind == TT_LOSS_DICE ? t->smooth / 2 : t->smooth;
    return (tt_tversky){(float)t->alpha, (float)t->beta, (float)smooth,
                        s->config.mask_kind == TT_MASK_CLASS_INDEX, per_image};
}

static tt_loss_desc desc_of(const tt_step *s, int n)
{
    const tt_step_config *c = &s->config;
    tt_loss_desc d = tt_loss_desc_make(n, c->model.classes, c->height, c->width);
    if (s->class_weights) d.weights = tt_mem_of(s->class_weights);
    return d;
}

/* The model's running statistics and counters, kept across pass 1's
 * forwards (training mode would move them once more per micro-batch). */
typedef struct kept_state {
    float *state;
    int64_t *counters;
} kept_state;

static tt_status keep_state(tt_step *s, kept_state *k)
{
    tt_model *m = s->model;
    *k = (kept_state){0};
    size_t floats = m->params->state_floats;
    k->state = floats ? tt_malloc(floats * sizeof(float)) : NULL;
    k->counters = m->counter_count ? tt_malloc((size_t)m->counter_count * sizeof(int64_t)) : NULL;
    if ((floats && !k->state) || (m->counter_count && !k->counters)) {
        free(k->state), free(k->counters);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < m->counter_count; i++) k->counters[i] = *m->counters[i].value;
    if (floats) return tt_model_get_params(m, NULL, k->state);
    return NULL;
}

static tt_status restore_state(tt_step *s, kept_state *k)
{
    tt_model *m = s->model;
    tt_status status = NULL;
    if (k->state) status = tt_model_set_params(m, NULL, k->state);
    for (int i = 0; i < m->counter_count; i++) *m->counters[i].value = k->counters[i];
    free(k->state), free(k->counters);
    return status;
}

tt_status tt_step_window_sums(tt_step *s, int n)
{
    const tt_loss_spec *loss = &s->config.loss;
    kept_state kept;
    TT_TRY(keep_state(s, &kept));
    tt_status status = tt_model_forward(s->model, n, 1);
    tt_backend_phase(s->be, "loss");
    tt_loss_desc d = desc_of(s, n);
    tt_mem labels = tt_mem_of(s->labels), sums, invalid, stats;
    for (int i = 0; i < loss->count && !status; i++) {
        if (!loss->terms[i].per_window) continue;
        tt_tversky r = region_of(s, &loss->terms[i], 0);
        window_parts(s, i, &sums, &invalid, &stats);
        status = tt_tversky_sums(s->be, sums, invalid, s->model->logits, labels, &d, &r);
    }
    tt_status restored = restore_state(s, &kept);
    if (status) {
        tt_status_free(restored);
        return status;
    }
    return restored;
}

tt_status tt_step_window_finish(tt_step *s, const tt_dist *dist)
{
    const tt_loss_spec *loss = &s->config.loss;
    size_t classes = (size_t)s->config.model.classes, values = classes * 3 + 1;
    float *host = tt_malloc(values * sizeof(float));
    double *summed = tt_malloc(values * sizeof(double));
    tt_status status = NULL;
    if (!host || !summed) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    tt_loss_desc d = desc_of(s, 1);
    for (int i = 0; i < loss->count; i++) {
        if (!loss->terms[i].per_window) continue;
        tt_mem sums, invalid, stats;
        window_parts(s, i, &sums, &invalid, &stats);
        TT_CHECK(tt_read(s->be, host, sums, values * sizeof(float)));
        uint32_t bad;
        memcpy(&bad, &host[values - 1], sizeof bad);
        for (size_t k = 0; k + 1 < values; k++) summed[k] = host[k];
        summed[values - 1] = bad;
        if (dist) TT_CHECK(tt_dist_sum_f64(dist, summed, values));
        for (size_t k = 0; k + 1 < values; k++) host[k] = (float)summed[k];
        bad = (uint32_t)summed[values - 1];
        memcpy(&host[values - 1], &bad, sizeof bad);
        TT_CHECK(tt_write(s->be, sums, host, values * sizeof(float)));
        tt_tversky r = region_of(s, &loss->terms[i], 0);
        TT_CHECK(tt_tversky_finish(s->be, term_block(s, i), stats, sums, invalid, &d, &r));
    }
    s->window_ready = 1;
cleanup:
    free(host);
    free(summed);
    return status;
}

/* Term i of the loss on the n images whose logits the model holds: its
 * sums into its block, its gradient times `scale` into dlogits. */
static tt_status run_term(tt_step *s, int i, int n, float scale)
{
    const tt_loss_term *t = &s->config.loss.terms[i];
    tt_backend *be = s->be;
    tt_model *m = s->model;
    tt_mem block = term_block(s, i), labels = tt_mem_of(s->labels);
    tt_loss_desc d = desc_of(s, n);
    int class_index = s->config.mask_kind == TT_MASK_CLASS_INDEX;
    switch (t->kind) {
    case TT_LOSS_BCE:
        TT_TRY(tt_bce_forward(be, block, m->logits, labels, &d));
        return scale ? tt_bce_backward(be, m->dlogits, m->logits, labels, &d, scale) : NULL;
    case TT_LOSS_CE:
        TT_TRY(tt_softmax_ce_forward(be, block, m->logits, labels, &d));
        return scale ? tt_softmax_ce_backward(be, m->dlogits, m->logits, labels, &d, scale) : NULL;
    case TT_LOSS_FOCAL: {
        tt_focal f = {(float)t->gamma, (float)t->alpha, class_index};
        TT_TRY(tt_focal_forward(be, block, m->logits, labels, &d, &f));
        return scale ? tt_focal_backward(be, m->dlogits, m->logits, labels, &d, &f, scale) : NULL;
    }
    case TT_LOSS_DICE:
    case TT_LOSS_TVERSKY: {
        if (t->per_window && s->window_ready) { /* the window's loss is in the block already */
            tt_mem sums, invalid, stats;
            window_parts(s, i, &sums, &invalid, &stats);
            tt_tversky r = region_of(s, t, 0);
            return scale ? tt_tversky_backward_with(be, m->dlogits, stats, m->logits, labels, &d,
                                                    &r, scale)
                         : NULL;
        }
        tt_tversky r = region_of(s, t, !t->per_window);
        TT_TRY(tt_tversky_forward(be, block, m->logits, labels, &d, &r));
        return scale ? tt_tversky_backward(be, m->dlogits, m->logits, labels, &d, &r, scale) : NULL;
    }
    case TT_LOSS_LOVASZ:
        TT_TRY(tt_lovasz_forward(be, block, m->logits, labels, &d, class_index));
        return scale ? tt_lovasz_backward(be, m->dlogits, m->logits, labels, &d, class_index, scale)
                     : NULL;
    default:
        return tt_error_new(TT_ERR_INTERNAL, "loss term %d of unknown kind %d", i, (int)t->kind);
    }
}

tt_status tt_step_micro_batch(tt_step *s, int n, const tt_loss_counts *window, float loss_scale)
{
    tt_model *m = s->model;
    const tt_step_config *c = &s->config;
    size_t pixels = (size_t)n * c->height * c->width;
    TT_TRY(tt_model_forward(m, n, 1));
    tt_backend_phase(s->be, "loss");
    TT_TRY(tt_fill(s->be, m->dlogits, 0.0f, pixels * (size_t)c->model.classes));
    for (int i = 0; i < c->loss.count; i++) {
        const tt_loss_term *t = &c->loss.terms[i];
        double count = window ? tt_loss_counts_of(window, t, c->mask_kind) : 1.0;
        /* nothing valid in the whole window: no gradient from this term */
        float scale = count > 0 ? (float)(t->weight / count * loss_scale) : 0.0f;
        TT_TRY(run_term(s, i, n, scale));
    }
    return tt_model_backward(m);
}

tt_status tt_step_losses(tt_step *s, tt_loss_value values[TT_LOSS_TERMS_MAX])
{
    memset(values, 0, sizeof(tt_loss_value) * TT_LOSS_TERMS_MAX);
    for (int i = 0; i < s->config.loss.count; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s loss", tt_loss_kind_name(s->config.loss.terms[i].kind));
        TT_TRY(tt_loss_read(s->be, term_block(s, i), what, &values[i]));
    }
    return NULL;
}

tt_status tt_step_scale_grads(tt_step *s, double scale)
{
    return tt_scale(s->be, tt_mem_of(s->model->grad_buffer), (float)scale,
                    s->model->params->trainable_floats);
}

tt_status tt_step_update(tt_step *s, const tt_schedule *schedule, double base_lr,
                         tt_update_result *r)
{
    tt_backend *be = s->be;
    tt_model *m = s->model;
    memset(r, 0, sizeof *r);
    tt_backend_phase(be, "optimizer");
    size_t nparams = m->params->trainable_floats;
    tt_mem grads = tt_mem_of(m->grad_buffer), block = tt_mem_of(s->reduce_block);
    /* the global norm and a non-finite check, reduced on the device */
    float reduced[2] = {0, 0};
    TT_TRY(tt_write(be, block, reduced, sizeof reduced));
    TT_TRY(tt_sum_squares(be, block, grads, nparams));
    TT_TRY(tt_count_nonfinite(be, tt_mem_at(block, sizeof(float)), grads, nparams));
    TT_TRY(tt_read(be, reduced, block, sizeof reduced));
    memcpy(&r->nonfinite, &reduced[1], sizeof r->nonfinite);
    double agreed[2] = {reduced[0], r->nonfinite};
    /* summed gradients are the same on every rank; their norms agree anyway,
     * so that a device whose reduction rounds differently cannot split them */
    if (s->dist) TT_TRY(tt_dist_max_f64(s->dist, agreed, 2));
    r->nonfinite = (uint32_t)agreed[1];
    r->grad_norm = sqrt(agreed[0]);
    if (r->nonfinite || !isfinite(r->grad_norm)) {
        r->skipped = 1;
        return NULL;
    }
    /* torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1 */
    if (s->config.clip_norm > 0) {
        double coef = s->config.clip_norm / (r->grad_norm + 1e-6);
        if (coef < 1.0) TT_TRY(tt_scale(be, grads, (float)coef, nparams));
    }
    /* one optimizer update at the scheduled rate */
    r->lr = tt_schedule_lr(schedule, base_lr, s->optimizer->updates + 1);
    TT_TRY(tt_optimizer_step(s->optimizer, tt_mem_of(m->param_buffer), grads, r->lr));
    if (s->ema) { /* timm's ModelEmaV2: ema * decay + (1 - decay) * weights */
        double d = s->config.ema_decay;
        TT_TRY(tt_scale(be, tt_mem_of(s->ema), (float)d, nparams));
        TT_TRY(tt_axpy(be, tt_mem_of(s->ema), tt_mem_of(m->param_buffer), (float)(1.0 - d), nparams));
    }
    return tt_finish(be);
}

tt_status tt_step_ema_reset(tt_step *s)
{
    if (!s->ema) return NULL;
    return tt_copy_f32(s->be, tt_mem_of(s->ema), tt_mem_of(s->model->param_buffer),
                       s->model->params->trainable_floats);
}

tt_status tt_step_use_ema(tt_step *s, int on)
{
    if (!s->ema || on == s->ema_in_use) return NULL;
    size_t n = s->model->params->trainable_floats;
    tt_mem params = tt_mem_of(s->model->param_buffer), keep = tt_mem_of(s->model->grad_buffer);
    if (on) {
        TT_TRY(tt_copy_f32(s->be, keep, params, n));
        TT_TRY(tt_copy_f32(s->be, params, tt_mem_of(s->ema), n));
    } else {
        TT_TRY(tt_copy_f32(s->be, params, keep, n));
    }
    s->ema_in_use = on;
    return tt_finish(s->be);
}
