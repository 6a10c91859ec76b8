/* Checkpoints as safetensors files; see checkpoint.h. */
#include "train/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "io/safetensors.h"
#include "train/trainer.h"

/* Every block of the model, in a fixed order, for num_batches_tracked. */
static int blocks_of(tt_unet *u, tt_unet_block **out)
{
    int n = 0;
    for (int i = 0; i < u->config.depth; i++) out[n++] = &u->enc[i];
    out[n++] = &u->bottleneck;
    for (int i = 0; i < u->config.depth; i++) out[n++] = &u->dec[i];
    return n;
}

static void shape_of(const tt_param *p, int64_t *shape)
{
    for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
}

/* Adds each parameter's slice of a host arena under prefix + name + suffix. */
static tt_status add_arena(tt_st_writer *w, const tt_param_table *t, const float *arena,
                           int trainable, const char *prefix, const char *suffix)
{
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        if (p->trainable != trainable) continue;
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", prefix, p->name, suffix);
        int64_t shape[4];
        shape_of(p, shape);
        TT_TRY(tt_st_writer_add(w, name, TT_ST_F32, p->ndim, shape, arena + p->offset));
    }
    return NULL;
}

/* A host copy of a device arena; without a buffer, a zeroed one (the
 * alignment gaps between tensors must not carry heap garbage to the device). */
static tt_status download(tt_backend *be, tt_buffer *buf, size_t floats, float **out)
{
    *out = calloc(floats ? floats : 1, sizeof(float));
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    if (buf) return tt_read(be, *out, tt_mem_of(buf), floats * sizeof(float));
    return NULL;
}

static tt_status meta_i64(tt_st_writer *w, const char *key, int64_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRId64, v);
    return tt_st_writer_metadata(w, key, text);
}

static void model_json(const tt_unet_config *c, char *buf, size_t size)
{
    snprintf(buf, size,
             "{\"in_channels\": %d, \"classes\": %d, \"base_channels\": %d, \"depth\": %d, "
             "\"norm\": \"%s\", \"groups\": %d}",
             c->in_channels, c->classes, c->base_channels, c->depth, tt_norm_kind_name(c->norm),
             c->groups);
}

/* What prediction needs to know of the data: class names, mask kind and
 * the input normalisation (infer/model_load.h reads these). */
static tt_status describe_data(tt_st_writer *w, tt_trainer *t)
{
    cJSON *names = cJSON_CreateArray();
    for (int c = 0; c < t->model.classes; c++) {
        char unnamed[24]; /* --classes above the data set's: no name there */
        snprintf(unnamed, sizeof unnamed, "class%d", c);
        cJSON_AddItemToArray(names, cJSON_CreateString(c < tt_dataset_classes(t->dataset)
                                                           ? tt_dataset_class_name(t->dataset, c)
                                                           : unnamed));
    }
    char *text = cJSON_PrintUnformatted(names);
    cJSON_Delete(names);
    if (!text) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    tt_status status = tt_st_writer_metadata(w, "classes", text);
    cJSON_free(text);
    TT_TRY(status);
    TT_TRY(tt_st_writer_metadata(w, "mask_kind", t->mask_kind == TT_MASK_MULTI_LABEL
                                                     ? "multi-label" : "class-index"));
    if (t->normalize) {
        char triple[160];
        snprintf(triple, sizeof triple, "[%.9g, %.9g, %.9g]", t->mean[0], t->mean[1], t->mean[2]);
        TT_TRY(tt_st_writer_metadata(w, "mean", triple));
        snprintf(triple, sizeof triple, "[%.9g, %.9g, %.9g]", t->std[0], t->std[1], t->std[2]);
        TT_TRY(tt_st_writer_metadata(w, "std", triple));
    }
    return NULL;
}

tt_status tt_checkpoint_save(tt_trainer *t, const char *path)
{
    tt_unet *u = t->unet;
    const tt_param_table *pt = &u->params;
    tt_status status = NULL;
    tt_st_writer *w = NULL;
    float *params = NULL, *state = NULL, *m1 = NULL, *m2 = NULL;
    TT_CHECK(tt_st_writer_create(&w));
    TT_CHECK(download(t->be, u->param_buffer, pt->trainable_floats, &params));
    TT_CHECK(download(t->be, u->state_buffer, pt->state_floats, &state));
    TT_CHECK(add_arena(w, pt, params, 1, "", ""));
    TT_CHECK(add_arena(w, pt, state, 0, "", ""));
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = blocks_of(u, blocks);
    if (u->config.norm == TT_NORM_BATCH)
        for (int i = 0; i < nb; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s.norm1.num_batches_tracked", blocks[i]->name);
            TT_CHECK(tt_st_writer_add(w, name, TT_ST_I64, 0, NULL, &blocks[i]->bn1.num_batches_tracked));
            snprintf(name, sizeof name, "%s.norm2.num_batches_tracked", blocks[i]->name);
            TT_CHECK(tt_st_writer_add(w, name, TT_ST_I64, 0, NULL, &blocks[i]->bn2.num_batches_tracked));
        }
    if (t->moment1) {
        TT_CHECK(download(t->be, t->moment1, pt->trainable_floats, &m1));
        TT_CHECK(add_arena(w, pt, m1, 1, "optim.", t->use_sgd ? ".momentum_buffer" : ".exp_avg"));
    }
    if (t->moment2) {
        TT_CHECK(download(t->be, t->moment2, pt->trainable_floats, &m2));
        TT_CHECK(add_arena(w, pt, m2, 1, "optim.", ".exp_avg_sq"));
    }
    char model[512];
    model_json(&u->config, model, sizeof model);
    TT_CHECK(tt_st_writer_metadata(w, "format", TT_CHECKPOINT_FORMAT));
    TT_CHECK(tt_st_writer_metadata(w, "model", model));
    TT_CHECK(tt_st_writer_metadata(w, "optimizer", t->use_sgd ? "sgd" : "adamw"));
    TT_CHECK(describe_data(w, t));
    TT_CHECK(meta_i64(w, "step", t->step));
    TT_CHECK(meta_i64(w, "updates", t->updates));
    TT_CHECK(meta_i64(w, "micro_batches", t->micro_batches));
    TT_CHECK(meta_i64(w, "images_seen", t->images_seen));
    TT_CHECK(meta_i64(w, "skipped_steps", t->skipped_steps));
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, t->sampler_state.seed);
    TT_CHECK(tt_st_writer_metadata(w, "sampler.seed", seed));
    TT_CHECK(meta_i64(w, "sampler.epoch", t->sampler_state.epoch));
    TT_CHECK(meta_i64(w, "sampler.position", t->sampler_state.position));
    TT_CHECK(tt_st_writer_write(w, path));
cleanup:
    tt_st_writer_destroy(w);
    free(params), free(state), free(m1), free(m2);
    return status;
}

/* Reads each parameter of the table from the file into a host arena. */
static tt_status read_arena(const tt_safetensors *f, const tt_param_table *t, float *arena,
                            int trainable, const char *prefix, const char *suffix)
{
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        if (p->trainable != trainable) continue;
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", prefix, p->name, suffix);
        int64_t shape[4];
        shape_of(p, shape);
        TT_TRY(tt_safetensors_get_f32(f, name, p->ndim, shape, arena + p->offset));
    }
    return NULL;
}

static tt_status upload(tt_backend *be, tt_buffer *buf, const float *host, size_t floats)
{
    return buf ? tt_write(be, tt_mem_of(buf), host, floats * sizeof(float)) : NULL;
}

tt_status tt_checkpoint_read_weights(tt_unet *u, const tt_safetensors *f, tt_checkpoint_need need)
{
    int need_stats = need >= TT_CHECKPOINT_NEED_STATS, need_counts = need >= TT_CHECKPOINT_NEED_ALL;
    const tt_param_table *pt = &u->params;
    tt_status status = NULL;
    float *params = NULL, *state = NULL;
    TT_CHECK(download(u->be, NULL, pt->trainable_floats, &params));
    TT_CHECK(download(u->be, u->state_buffer, pt->state_floats, &state));
    TT_CHECK(read_arena(f, pt, params, 1, "", ""));
    /* running statistics: required on resume and for prediction, taken when present for --init */
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        if (p->trainable || (!need_stats && !tt_safetensors_find(f, p->name))) continue;
        int64_t shape[4];
        shape_of(p, shape);
        TT_CHECK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, state + p->offset));
    }
    TT_CHECK(upload(u->be, u->param_buffer, params, pt->trainable_floats));
    TT_CHECK(upload(u->be, u->state_buffer, state, pt->state_floats));
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = blocks_of(u, blocks);
    if (u->config.norm == TT_NORM_BATCH)
        for (int i = 0; i < nb; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s.norm1.num_batches_tracked", blocks[i]->name);
            if (tt_safetensors_find(f, name) || need_counts)
                TT_CHECK(tt_safetensors_get_i64(f, name, 0, NULL, &blocks[i]->bn1.num_batches_tracked));
            snprintf(name, sizeof name, "%s.norm2.num_batches_tracked", blocks[i]->name);
            if (tt_safetensors_find(f, name) || need_counts)
                TT_CHECK(tt_safetensors_get_i64(f, name, 0, NULL, &blocks[i]->bn2.num_batches_tracked));
        }
cleanup:
    free(params), free(state);
    return status;
}

tt_status tt_checkpoint_load_weights(tt_unet *u, const char *path)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_error_prefix(tt_safetensors_open(path, &f), "--init"));
    tt_status status = tt_checkpoint_read_weights(u, f, TT_CHECKPOINT_NEED_WEIGHTS);
    tt_safetensors_close(f);
    return tt_error_prefix(status, "--init %s", path);
}

static tt_status meta_int(const tt_safetensors *f, const char *key, int64_t *out)
{
    const char *v = tt_safetensors_metadata(f, key);
    char *end;
    if (!v || !*v)
        return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s' lacks metadata '%s'",
                            tt_safetensors_path(f), key);
    long long x = strtoll(v, &end, 10);
    if (*end)
        return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': metadata '%s' = '%s' is not a number",
                            tt_safetensors_path(f), key, v);
    *out = x;
    return NULL;
}

tt_status tt_checkpoint_resume(tt_trainer *t, const char *path)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_error_prefix(tt_safetensors_open(path, &f), "--resume"));
    tt_status status = NULL;
    float *m = NULL;
    const char *format = tt_safetensors_metadata(f, "format");
    if (!format || strcmp(format, TT_CHECKPOINT_FORMAT) != 0) {
        status = tt_error_new(TT_ERR_FORMAT,
                              "--resume %s: not a tiletrain checkpoint (format '%s'); use --init "
                              "to start from plain weights", path, format ? format : "none");
        goto cleanup;
    }
    char model[512];
    model_json(&t->unet->config, model, sizeof model);
    const char *theirs = tt_safetensors_metadata(f, "model");
    if (!theirs || strcmp(theirs, model) != 0) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "--resume %s: the checkpoint's model %s differs from this run's %s; "
                              "give the same model options", path, theirs ? theirs : "(none)", model);
        goto cleanup;
    }
    const char *opt = tt_safetensors_metadata(f, "optimizer");
    const char *ours = t->use_sgd ? "sgd" : "adamw";
    if (!opt || strcmp(opt, ours) != 0) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "--resume %s: the checkpoint was trained with --optimizer %s, this "
                              "run uses %s", path, opt ? opt : "(none)", ours);
        goto cleanup;
    }
    TT_CHECK(tt_checkpoint_read_weights(t->unet, f, TT_CHECKPOINT_NEED_ALL));
    size_t n = t->unet->params.trainable_floats;
    TT_CHECK(download(t->be, NULL, n, &m));
    if (t->moment1) {
        TT_CHECK(read_arena(f, &t->unet->params, m, 1, "optim.",
                            t->use_sgd ? ".momentum_buffer" : ".exp_avg"));
        TT_CHECK(upload(t->be, t->moment1, m, n));
    }
    if (t->moment2) {
        TT_CHECK(read_arena(f, &t->unet->params, m, 1, "optim.", ".exp_avg_sq"));
        TT_CHECK(upload(t->be, t->moment2, m, n));
    }
    int64_t seed, epoch, position;
    TT_CHECK(meta_int(f, "step", &t->step));
    TT_CHECK(meta_int(f, "updates", &t->updates));
    TT_CHECK(meta_int(f, "micro_batches", &t->micro_batches));
    TT_CHECK(meta_int(f, "images_seen", &t->images_seen));
    TT_CHECK(meta_int(f, "skipped_steps", &t->skipped_steps));
    TT_CHECK(meta_int(f, "sampler.seed", &seed));
    TT_CHECK(meta_int(f, "sampler.epoch", &epoch));
    TT_CHECK(meta_int(f, "sampler.position", &position));
    t->sampler_state = (tt_sampler_state){(uint64_t)seed, epoch, position};
    TT_CHECK(tt_error_prefix(tt_sampler_set_state(t->sampler, &t->sampler_state),
                             "--resume %s (give the same --seed and data)", path));
cleanup:
    free(m);
    tt_safetensors_close(f);
    return status;
}

tt_status tt_checkpoint_save_grads(tt_unet *u, const char *path)
{
    tt_status status = NULL;
    tt_st_writer *w = NULL;
    float *grads = NULL;
    TT_CHECK(tt_st_writer_create(&w));
    TT_CHECK(download(u->be, u->grad_buffer, u->params.trainable_floats, &grads));
    TT_CHECK(add_arena(w, &u->params, grads, 1, "", ""));
    TT_CHECK(tt_st_writer_metadata(w, "content", "normalised gradients of the last window"));
    TT_CHECK(tt_st_writer_write(w, path));
cleanup:
    tt_st_writer_destroy(w);
    free(grads);
    return tt_error_prefix(status, "--save-grads");
}
