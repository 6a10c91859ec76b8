/* Options -> model spec, step configuration, schedule; see recipe.h. */
#include "train/recipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "model/params.h"
#include "optim/optimizer.h"

tt_status tt_recipe_model(const tt_train_options *o, int data_classes, tt_model_spec *out)
{
    if (o->classes && o->classes < data_classes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--classes %d is fewer than the %d classes of data set '%s'",
                            o->classes, data_classes, o->data);
    tt_model_spec m = tt_model_spec_default();
    const char *kind = tt_model_choice_name(o->model);
    if (strlen(kind) >= sizeof m.kind)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--model '%.40s' is unknown", kind);
    memcpy(m.kind, kind, strlen(kind) + 1);
    const char *encoder_only = o->freeze_encoder_bn ? "--freeze-encoder-bn"
                               : o->freeze_bn       ? "--freeze-bn"
                               : o->encoder_lr[0]   ? "--encoder-lr"
                               : o->freeze_encoder_steps ? "--freeze-encoder-steps" : NULL;
    if (encoder_only && !tt_model_spec_resnet_encoder(&m))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s is for a model over an encoder: give "
                            "--model unet-resnet34, fpn-efficientnet-b2 or another (--help)",
                            encoder_only);
    if (o->drop_path > 0 && !strstr(kind, "-efficientnet-"))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--drop-path is for an EfficientNet encoder: "
                            "give --model unet-efficientnet-b2 or another");
    m.drop_path = (float)o->drop_path;
    m.freeze_encoder_bn = o->freeze_encoder_bn || o->freeze_bn;
    m.freeze_decoder_bn = o->freeze_bn;
    m.classes = o->classes ? o->classes : data_classes ? data_classes : 4;
    m.base_channels = o->base_channels;
    m.depth = o->depth;
    m.groups = o->groups;
    m.checkpointing = o->checkpointing;
    m.norm = o->norm;
    if (tt_model_spec_resnet_encoder(&m)) m.norm = TT_NORM_BATCH; /* whatever --norm says */
    m.algo = o->algo;
    m.precision = o->precision;
    if (m.precision == TT_PRECISION_AUTO) { /* chosen on the device (precision_auto.h) */
        m.precision = TT_PRECISION_FP32;
        TT_TRY(tt_model_spec_check(&m));
        m.precision = TT_PRECISION_AUTO;
    } else {
        TT_TRY(tt_model_spec_check(&m));
    }
    *out = m;
    return NULL;
}

/* --encoder-lr's scale, 1 where it does not parse (resolving refused it). */
static double encoder_scale_or_one(const tt_train_options *o)
{
    double scale = 1.0;
    tt_status_free(tt_recipe_encoder_scale(o, &scale));
    return scale;
}

tt_status tt_recipe_loss(const tt_train_options *o, tt_mask_kind kind, int classes,
                         tt_step_config *out)
{
    TT_TRY(tt_loss_spec_parse(o->loss, kind, &out->loss));
    out->class_weighted = o->class_weights[0] != '\0';
    return tt_class_weights_parse(o->class_weights, classes, out->class_weights);
}

tt_step_config tt_recipe_step(const tt_train_options *o, const tt_model_spec *model,
                              tt_mask_kind kind, int planes)
{
    tt_step_config c = {
        .model = *model,
        .micro_batch = o->micro_batch,
        .height = o->tile[0],
        .width = o->tile[1],
        .seed = o->seed,
        .mask_kind = kind,
        .planes = planes,
        .clip_norm = o->clip_norm,
        .optimizer = {.name = tt_optimizer_choice_name(o->optimizer), .lr = o->lr, .weight_decay = o->weight_decay,
                      .momentum = o->momentum, .nesterov = o->nesterov},
        .encoder_group = o->encoder_lr[0] || o->freeze_encoder_steps,
        .ema_decay = o->ema,
        .encoder_lr_scale = encoder_scale_or_one(o),
    };
    tt_status bad = tt_recipe_loss(o, kind, model->classes, &c);
    if (bad) { /* resolving refused it: the kind's default */
        tt_status_free(bad);
        tt_status_free(tt_loss_spec_parse("auto", kind, &c.loss));
        c.class_weighted = 0;
    }
    return c;
}

tt_status tt_recipe_backend(const tt_train_options *o, tt_backend_request *out)
{
    *out = (tt_backend_request){.profiling = o->profile};
    return tt_error_prefix(tt_backend_choose(tt_backend_choice_name(o->backend), o->device, out), "--backend");
}

cJSON *tt_recipe_json(const tt_train_options *o, const tt_model_spec *m)
{
    cJSON *cfg = cJSON_CreateObject();
    if (!cfg) return NULL;
    cJSON_AddNumberToObject(cfg, "tile_h", o->tile[0]);
    cJSON_AddNumberToObject(cfg, "tile_w", o->tile[1]);
    cJSON_AddNumberToObject(cfg, "micro_batch", o->micro_batch);
    cJSON_AddNumberToObject(cfg, "accum", o->accum);
    cJSON_AddStringToObject(cfg, "model", m->kind);
    cJSON_AddNumberToObject(cfg, "classes", m->classes);
    if (!tt_model_spec_resnet_encoder(m)) {
        cJSON_AddNumberToObject(cfg, "base_channels", m->base_channels);
        cJSON_AddNumberToObject(cfg, "depth", m->depth);
    }
    cJSON_AddStringToObject(cfg, "norm", tt_norm_kind_name(m->norm));
    if (m->norm == TT_NORM_GROUP) cJSON_AddNumberToObject(cfg, "groups", m->groups);
    if (m->freeze_encoder_bn) cJSON_AddBoolToObject(cfg, "freeze_encoder_bn", 1);
    if (m->freeze_decoder_bn) cJSON_AddBoolToObject(cfg, "freeze_decoder_bn", 1);
    if (o->encoder_lr[0]) cJSON_AddStringToObject(cfg, "encoder_lr", o->encoder_lr);
    if (o->freeze_encoder_steps) cJSON_AddNumberToObject(cfg, "freeze_encoder_steps", o->freeze_encoder_steps);
    if (m->drop_path > 0) cJSON_AddNumberToObject(cfg, "drop_path", m->drop_path);
    cJSON_AddBoolToObject(cfg, "checkpointing", m->checkpointing);
    cJSON_AddStringToObject(cfg, "algo", tt_conv_algo_name(m->algo));
    cJSON_AddStringToObject(cfg, "precision", tt_precision_name(m->precision));
    if (strcmp(o->plan, "off") != 0) cJSON_AddStringToObject(cfg, "plan", o->plan);
    cJSON_AddStringToObject(cfg, "optimizer", tt_optimizer_choice_name(o->optimizer));
    cJSON_AddNumberToObject(cfg, "lr", o->lr);
    return cfg;
}

tt_status tt_recipe_schedule(const tt_train_options *o, tt_schedule *out)
{
    char text[256];
    if (strchr(o->schedule, ':')) return tt_schedule_parse(o->schedule, out);
    if (strcmp(o->schedule, "constant") == 0)
        snprintf(text, sizeof text, "constant:warmup=%d", o->warmup);
    else if (strcmp(o->schedule, "cosine") == 0)
        snprintf(text, sizeof text, "cosine:total=%d,warmup=%d,min_lr=%.17g",
                 o->steps > o->warmup ? o->steps : o->warmup + 1, o->warmup, o->min_lr);
    else if (strcmp(o->schedule, "step") == 0)
        snprintf(text, sizeof text, "step:every=%d,gamma=%.17g,warmup=%d",
                 o->step_every > 0 ? o->step_every : (o->steps / 3 > 0 ? o->steps / 3 : 1),
                 o->gamma, o->warmup);
    else
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--schedule '%s' is unknown: use constant, cosine or step", o->schedule);
    return tt_schedule_parse(text, out);
}

tt_status tt_recipe_encoder_scale(const tt_train_options *o, double *scale)
{
    *scale = 1.0;
    if (!o->encoder_lr[0]) return NULL;
    char *end;
    double v = strtod(o->encoder_lr, &end);
    int ratio = *end == 'x' && end[1] == 0;
    if (end == o->encoder_lr || (*end && !ratio) || !(v >= 0) || isinf(v))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--encoder-lr '%s': give a rate (1e-4) or a ratio of --lr (0.1x)",
                            o->encoder_lr);
    if (!ratio && !(o->lr > 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--encoder-lr %s needs a positive --lr to scale against; give a ratio "
                            "(0.1x) instead", o->encoder_lr);
    *scale = ratio ? v : v / o->lr;
    return NULL;
}

void tt_recipe_freeze(const tt_train_options *o, tt_optimizer *opt, int64_t step)
{
    if (o->freeze_encoder_steps && opt->group_count > 0)
        opt->groups[0].frozen = step <= o->freeze_encoder_steps;
}
