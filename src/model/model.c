/* The model interface's common half: specs, the table of kinds, the arenas
 * (see model.h). */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/deeplab.h"
#include "model/fpn.h"
#include "model/linknet.h"
#include "model/encoder.h"
#include "model/unet.h"
#include "model/unet_resnet.h"
#include "ops/util.h"

/* One row per decoder: its name (the kind's part before the encoder's:
 * "fpn" of "fpn-resnet34"), smp's class of it, what its tiles' sides must
 * be multiples of (0: 2^depth, the plain UNet), the smallest micro-batch
 * a training step takes, and its constructor.  A
 * kind is the plain "unet", or a decoder's name, "-" and an encoder's
 * (encoder.h). */
typedef struct model_kind {
    const char *name, *smp;
    int unit, least;
    tt_status (*create)(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                        int width, uint64_t seed, tt_model **out);
} model_kind;

static const model_kind plain = {"unet", "", 0, 1, tt_unet_model_create};
static const model_kind decoders[] = {
    {"unet", "Unet", 32, 1, tt_unet_resnet_model_create},
    {"fpn", "FPN", 32, 1, tt_fpn_model_create},
    {"linknet", "Linknet", 32, 1, tt_linknet_model_create},
    /* its image pooling's batch norm sees one value a channel an image */
    {"deeplabv3plus", "DeepLabV3Plus", 16, 2, tt_deeplab_model_create},
};
#define DECODER_COUNT ((int)(sizeof decoders / sizeof decoders[0]))

static const model_kind *kind_of(const char *name)
{
    if (strcmp(name, plain.name) == 0) return &plain;
    size_t n = strcspn(name, "-");
    for (int i = 0; i < DECODER_COUNT; i++)
        if (strlen(decoders[i].name) == n && strncmp(decoders[i].name, name, n) == 0 &&
            tt_encoder_of(name))
            return &decoders[i];
    return NULL;
}

/* The kinds, from the tables: for messages. */
static void kinds_list(char *buf, size_t size)
{
    snprintf(buf, size, "%s, or ", plain.name);
    for (int i = 0; i < DECODER_COUNT; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s-", i ? ", " : "", decoders[i].name);
    }
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, " then an encoder: ");
    used = strlen(buf);
    tt_encoder_names(buf + used, size - used);
}

tt_model_spec tt_model_spec_default(void)
{
    return (tt_model_spec){.kind = "unet", .in_channels = 3, .classes = 4, .base_channels = 16,
                           .depth = 3, .norm = TT_NORM_GROUP, .groups = 8};
}

tt_status tt_model_spec_check(const tt_model_spec *s)
{
    if (!kind_of(s->kind)) {
        char known[512];
        kinds_list(known, sizeof known);
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "model '%s' is unknown: use %s", s->kind,
                            known);
    }
    if ((unsigned)s->algo >= TT_CONV_ALGO_COUNT)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "convolution algorithm %d is unknown: use %s",
                            (int)s->algo, TT_CONV_ALGO_CHOICES);
    if (s->precision != TT_PRECISION_FP32 && s->precision != TT_PRECISION_FP16 &&
        s->precision != TT_PRECISION_BF16)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "precision %s is not a storage: use fp32, fp16 or bf16",
                            tt_precision_name(s->precision));
    return NULL;
}

int tt_model_spec_resnet_encoder(const tt_model_spec *s)
{
    return tt_encoder_of(s->kind);
}

int tt_model_spec_tile_unit(const tt_model_spec *s)
{
    const model_kind *k = kind_of(s->kind);
    return k && k->unit ? k->unit : 1 << s->depth;
}

int tt_model_spec_least_micro_batch(const tt_model_spec *s)
{
    const model_kind *k = kind_of(s->kind);
    return k ? k->least : 1;
}

/* The plain UNet is sized by base_channels, depth and its norm; the
 * ResNet-encoder ones by their kind alone. */
static int sized_by_options(const tt_model_spec *s)
{
    return !tt_model_spec_resnet_encoder(s);
}

void tt_model_spec_describe(const tt_model_spec *s, char *buf, size_t size)
{
    char storage[32] = "";
    if (s->precision != TT_PRECISION_FP32)
        snprintf(storage, sizeof storage, ", %s storage", tt_precision_name(s->precision));
    if (sized_by_options(s))
        snprintf(buf, size, "UNet base %d depth %d %s%s", s->base_channels, s->depth,
                 tt_norm_kind_name(s->norm), storage);
    else
        snprintf(buf, size, "%s (smp %s%s)%s", s->kind, kind_of(s->kind) ? kind_of(s->kind)->smp : "",
                 s->freeze_encoder_bn && s->freeze_decoder_bn ? ", frozen batch norm"
                 : s->freeze_encoder_bn                       ? ", frozen encoder batch norm"
                                                              : "",
                 storage);
}

void tt_model_spec_json(const tt_model_spec *s, char *buf, size_t size)
{
    if (!sized_by_options(s)) {
        snprintf(buf, size, "{\"kind\": \"%s\", \"in_channels\": %d, \"classes\": %d}", s->kind,
                 s->in_channels, s->classes);
        return;
    }
    snprintf(buf, size,
             "{\"kind\": \"%s\", \"in_channels\": %d, \"classes\": %d, \"base_channels\": %d, "
             "\"depth\": %d, \"norm\": \"%s\", \"groups\": %d}",
             s->kind, s->in_channels, s->classes, s->base_channels, s->depth,
             tt_norm_kind_name(s->norm), s->groups);
}

int tt_model_spec_same(const tt_model_spec *a, const tt_model_spec *b)
{
    if (strcmp(a->kind, b->kind) != 0) return 0;
    if (!sized_by_options(a)) return a->in_channels == b->in_channels && a->classes == b->classes;
    return a->in_channels == b->in_channels &&
           a->classes == b->classes && a->base_channels == b->base_channels &&
           a->depth == b->depth && a->norm == b->norm &&
           (a->norm != TT_NORM_GROUP || a->groups == b->groups);
}

/* Reads an integer key of obj into *out when present. */
static tt_status get_int(const cJSON *obj, const char *key, int *out, int required)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return tt_error_new(TT_ERR_FORMAT, "no \"%s\"; it needs e.g. "
                                "{\"classes\": 4, \"base_channels\": 16, \"depth\": 3}", key);
        return NULL;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble)
        return tt_error_new(TT_ERR_FORMAT, "\"%s\" must be a whole number", key);
    *out = (int)v->valuedouble;
    return NULL;
}

/* Reads a string key of obj into buf when present. */
static tt_status get_string(const cJSON *obj, const char *key, char *buf, size_t size,
                            const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v) return NULL;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
        return tt_error_new(TT_ERR_FORMAT, "\"%s\" must be a short string", key);
    snprintf(buf, size, "%s", v->valuestring);
    *out = buf;
    return NULL;
}

tt_status tt_model_spec_parse(const char *json, tt_model_spec *spec)
{
    tt_status status = NULL;
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        status = tt_error_new(TT_ERR_FORMAT, "not a JSON object: '%.80s'", json);
        goto cleanup;
    }
    tt_model_spec s = tt_model_spec_default();
    char norm[32];
    const char *given;
    TT_CHECK(get_string(root, "kind", s.kind, sizeof s.kind, &given));
    TT_CHECK(get_int(root, "in_channels", &s.in_channels, 0));
    TT_CHECK(get_int(root, "classes", &s.classes, 1));
    TT_CHECK(get_int(root, "base_channels", &s.base_channels, 0));
    TT_CHECK(get_int(root, "depth", &s.depth, 0));
    TT_CHECK(get_int(root, "groups", &s.groups, 0));
    TT_CHECK(get_string(root, "norm", norm, sizeof norm, &given));
    if (given) TT_CHECK(tt_norm_kind_parse(norm, &s.norm));
    TT_CHECK(tt_model_spec_check(&s));
    if (!sized_by_options(&s)) s.norm = TT_NORM_BATCH; /* a ResNet's */
    if (strcmp(s.kind, "unet") == 0) {
        tt_unet_config c = tt_unet_config_of(&s);
        TT_CHECK(tt_unet_config_check(&c));
    }
    *spec = s;
cleanup:
    cJSON_Delete(root);
    if (status) status = tt_error_prefix(status, "model metadata");
    return status;
}

tt_status tt_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                          int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    TT_TRY(tt_model_spec_check(spec));
    return kind_of(spec->kind)->create(be, spec, capacity, height, width, seed, out);
}

size_t tt_model_conv_out_plane(const tt_model_conv *c)
{
    if (c->transposed) return (size_t)c->height * c->stride * c->width * c->stride;
    tt_conv2d_desc d = tt_model_conv_desc(c, 1, TT_CONV_ALGO_AUTO);
    return (size_t)tt_conv2d_out_h(&d) * (size_t)tt_conv2d_out_w(&d);
}

tt_conv2d_desc tt_model_conv_desc(const tt_model_conv *c, int batch, tt_conv_algo algo)
{
    int dil = c->dilation > 1 ? c->dilation : 1;
    return (tt_conv2d_desc){.batch = batch, .in_channels = c->in_channels, .in_h = c->height,
                            .in_w = c->width, .out_channels = c->out_channels,
                            .kernel_h = c->kernel, .kernel_w = c->kernel,
                            .stride_h = c->stride, .stride_w = c->stride,
                            .pad_h = dil * (c->kernel / 2), .pad_w = dil * (c->kernel / 2),
                            .dilation_h = dil, .dilation_w = dil,
                            .groups = c->groups > 1 ? c->groups : 1,
                            .no_input_grad = c->no_input_grad, .algo = algo};
}

tt_status tt_model_conv_shapes(tt_backend *like, const tt_model_spec *spec, int height, int width,
                               tt_model_conv **out, int *count)
{
    *out = NULL, *count = 0;
    tt_model_spec plain = *spec; /* the layers' shapes, not the banded step's bands */
    plain.precision = TT_PRECISION_FP32;
    plain.checkpointing = 0;
    if (sized_by_options(&plain))
        plain.norm = TT_NORM_NONE; /* no norm changes a convolution: any groups will do */
    TT_TRY(tt_model_spec_check(&plain));
    tt_backend *dry = NULL;
    tt_model *m = NULL;
    tt_status status = NULL;
    TT_CHECK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &like->device,
                                                     .stands_for = like->kernels_of},
                               &dry));
    TT_CHECK(tt_model_create(dry, &plain, 1, height, width, 0, &m));
    *out = tt_malloc(sizeof **out * (size_t)(m->conv_count ? m->conv_count : 1));
    if (!*out) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s's convolution shapes: out of host memory",
                              spec->kind);
        goto cleanup;
    }
    memcpy(*out, m->convs, sizeof **out * (size_t)m->conv_count);
    *count = m->conv_count;
cleanup:
    tt_model_destroy(m);
    tt_backend_destroy(dry);
    return status;
}

void tt_model_destroy(tt_model *model)
{
    if (model) model->ops->destroy(model);
}
