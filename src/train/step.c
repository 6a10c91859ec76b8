/* One window's device work: model, loss, optimizer; see step.h.  Read it
 * top to bottom in the order step.h lists the calls. */
#include "train/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/bce.h"
#include "ops/dice.h"
#include "ops/softmax_ce.h"
#include "ops/util.h"

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
    tt_step *s = calloc(1, sizeof *s);
    if (!s) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    s->be = be;
    s->config = *config;
    const tt_step_config *c = &s->config;
    tt_status status = NULL;
    TT_CHECK(tt_model_create(be, &c->model, c->micro_batch, c->height, c->width, c->seed,
                             &s->model));
    s->dist = c->dist;
    if (c->norm_dist) {
        s->norm_sync = (tt_norm_sync){norm_sum, (void *)c->norm_dist};
        s->model->norm_sync = &s->norm_sync;
    }
    TT_CHECK(tt_buffer_alloc(be, (size_t)c->micro_batch * (size_t)c->planes * c->height * c->width,
                             TT_MEM_DATA, "labels", &s->labels));
    TT_CHECK(tt_buffer_alloc(be, 2 * TT_LOSS_VALUE_BYTES, TT_MEM_WORKSPACE, "loss", &s->loss_blocks));
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
    tt_buffer_free(s->reduce_block);
    tt_buffer_free(s->ema);
    tt_optimizer_destroy(s->optimizer);
    tt_model_destroy(s->model);
    free(s);
}

static tt_mem dice_block(tt_step *s)
{
    return tt_mem_at(tt_mem_of(s->loss_blocks), TT_LOSS_VALUE_BYTES);
}

tt_status tt_step_begin(tt_step *s)
{
    TT_TRY(tt_model_zero_grads(s->model));
    TT_TRY(tt_loss_clear(s->be, tt_mem_of(s->loss_blocks)));
    return tt_loss_clear(s->be, dice_block(s));
}

tt_status tt_step_upload(tt_step *s, const float *images, const uint8_t *labels, int n)
{
    size_t pixels = (size_t)n * s->config.height * s->config.width;
    tt_backend_phase(s->be, "data");
    TT_TRY(tt_write(s->be, s->model->input, images,
                    pixels * (size_t)s->config.model.in_channels * sizeof(float)));
    return tt_write(s->be, tt_mem_of(s->labels), labels, pixels * (size_t)s->config.planes);
}

tt_status tt_step_micro_batch(tt_step *s, int n, float dice_scale, float loss_scale)
{
    tt_model *m = s->model;
    const tt_step_config *c = &s->config;
    int h = c->height, w = c->width, classes = c->model.classes;
    size_t pixels = (size_t)n * h * w;
    TT_TRY(tt_model_forward(m, n, 1));
    tt_backend_phase(s->be, "loss");
    TT_TRY(tt_fill(s->be, m->dlogits, 0.0f, pixels * (size_t)classes));
    tt_mem primary = tt_mem_of(s->loss_blocks), labels = tt_mem_of(s->labels);
    tt_loss_desc d = tt_loss_desc_make(n, classes, h, w);
    if (c->mask_kind == TT_MASK_CLASS_INDEX) {
        TT_TRY(tt_softmax_ce_forward(s->be, primary, m->logits, labels, &d));
        TT_TRY(tt_softmax_ce_backward(s->be, m->dlogits, m->logits, labels, &d, loss_scale));
    } else {
        TT_TRY(tt_bce_forward(s->be, primary, m->logits, labels, &d));
        TT_TRY(tt_bce_backward(s->be, m->dlogits, m->logits, labels, &d, loss_scale));
        if (c->dice_weight > 0) {
            TT_TRY(tt_dice_forward(s->be, dice_block(s), m->logits, labels, &d,
                                   TT_DICE_SMOOTH_DEFAULT));
            TT_TRY(tt_dice_backward(s->be, m->dlogits, m->logits, labels, &d,
                                    TT_DICE_SMOOTH_DEFAULT, dice_scale * loss_scale));
        }
    }
    return tt_model_backward(m);
}

tt_status tt_step_losses(tt_step *s, tt_loss_value *primary, tt_loss_value *dice)
{
    memset(dice, 0, sizeof *dice);
    TT_TRY(tt_loss_read(s->be, tt_mem_of(s->loss_blocks), "training loss", primary));
    if (s->config.dice_weight > 0 && s->config.mask_kind == TT_MASK_MULTI_LABEL)
        TT_TRY(tt_loss_read(s->be, dice_block(s), "Dice loss", dice));
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
