/* Checkpoints as safetensors files; see checkpoint.h. */
#include "train/checkpoint.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "model/weights.h"

static tt_status meta_i64(tt_st_writer *w, const char *key, int64_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRId64, v);
    return tt_st_writer_metadata(w, key, text);
}

/* A raster run's bands, "[4, 3, 2]", and each one's mean and std in its
 * samples' scale, as JSON arrays (infer/model_load.h reads them). */
static tt_status describe_bands(tt_st_writer *w, const tt_band_norm *b)
{
    static const char *const keys[3] = {"bands", "band_mean", "band_std"};
    char text[TT_RASTER_MAX_BANDS * 24 + 4];
    for (int k = 0; k < 3; k++) {
        size_t used = 0;
        text[used++] = '[';
        for (int c = 0; c < b->count; c++) {
            const char *sep = c ? ", " : "";
            used += (size_t)(k == 0 ? snprintf(text + used, sizeof text - used, "%s%d", sep,
                                               b->bands[c])
                                    : snprintf(text + used, sizeof text - used, "%s%.9g", sep,
                                               (double)(k == 1 ? b->mean[c] : b->std[c])));
        }
        snprintf(text + used, sizeof text - used, "]");
        TT_TRY(tt_st_writer_metadata(w, keys[k], text));
    }
    return NULL;
}

/* Class names, mask kind and the input normalisation (infer/model_load.h
 * reads these). */
static tt_status describe_data(tt_st_writer *w, int classes, const tt_checkpoint_data *d)
{
    cJSON *names = cJSON_CreateArray();
    for (int c = 0; c < classes; c++) {
        char unnamed[24]; /* --classes above the data set's: no name there */
        snprintf(unnamed, sizeof unnamed, "class%d", c);
        cJSON_AddItemToArray(names, cJSON_CreateString(c < d->named_classes ? d->class_names[c]
                                                                            : unnamed));
    }
    char *text = cJSON_PrintUnformatted(names);
    cJSON_Delete(names);
    if (!text) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    tt_status status = tt_st_writer_metadata(w, "classes", text);
    cJSON_free(text);
    TT_TRY(status);
    TT_TRY(tt_st_writer_metadata(w, "mask_kind", d->mask_kind == TT_MASK_MULTI_LABEL
                                                     ? "multi-label" : "class-index"));
    if (d->normalize) {
        char triple[160];
        snprintf(triple, sizeof triple, "[%.9g, %.9g, %.9g]", d->mean[0], d->mean[1], d->mean[2]);
        TT_TRY(tt_st_writer_metadata(w, "mean", triple));
        snprintf(triple, sizeof triple, "[%.9g, %.9g, %.9g]", d->std[0], d->std[1], d->std[2]);
        TT_TRY(tt_st_writer_metadata(w, "std", triple));
    }
    if (d->bands) TT_TRY(describe_bands(w, d->bands));
    if (d->postprocess) { /* the search's choices, which predict and eval take */
        char *json = tt_pp_choices_json(d->postprocess, classes);
        if (!json) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
        status = tt_st_writer_metadata(w, "postprocess", json);
        free(json);
        TT_TRY(status);
    }
    return NULL;
}

/* optim.groups: [[begin, end, lr_scale, updates], ...] of the arena's
 * parameter groups (PyTorch's param_groups; per-group update counts). */
static tt_status describe_groups(tt_st_writer *w, const tt_optimizer *o)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < o->group_count && list; i++) {
        const tt_optimizer_group *g = &o->groups[i];
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(row, cJSON_CreateNumber((double)g->begin));
        cJSON_AddItemToArray(row, cJSON_CreateNumber((double)g->end));
        cJSON_AddItemToArray(row, cJSON_CreateNumber(g->lr_scale));
        cJSON_AddItemToArray(row, cJSON_CreateNumber((double)g->updates));
        cJSON_AddItemToArray(list, row);
    }
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!text) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    tt_status status = tt_st_writer_metadata(w, "optim.groups", text);
    cJSON_free(text);
    return status;
}

/* The groups' update counts from optim.groups, which must have this run's
 * ranges; a checkpoint without it (one group) counts the optimizer's. */
static tt_status restore_groups(const tt_safetensors *f, tt_optimizer *o)
{
    const char *text = tt_safetensors_metadata(f, "optim.groups");
    for (int i = 0; i < o->group_count; i++) o->groups[i].updates = o->updates;
    if (!text) return NULL;
    cJSON *list = cJSON_Parse(text);
    int ok = cJSON_IsArray(list) && cJSON_GetArraySize(list) == o->group_count;
    for (int i = 0; ok && i < o->group_count; i++) {
        cJSON *row = cJSON_GetArrayItem(list, i);
        ok = cJSON_IsArray(row) && cJSON_GetArraySize(row) == 4 &&
             (size_t)cJSON_GetArrayItem(row, 0)->valuedouble == o->groups[i].begin &&
             (size_t)cJSON_GetArrayItem(row, 1)->valuedouble == o->groups[i].end;
        if (ok) o->groups[i].updates = (int64_t)cJSON_GetArrayItem(row, 3)->valuedouble;
    }
    cJSON_Delete(list);
    if (ok) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "--resume %s: the checkpoint's parameter groups %s are not this run's %d; "
                        "give the same per-group options (--encoder-lr, ...)",
                        tt_safetensors_path(f), text, o->group_count);
}

/* world_size and sampler.ranks: [next crop of rank 0, of rank 1, ...]. */
static tt_status describe_ranks(tt_st_writer *w, const tt_checkpoint_ranks *r)
{
    TT_TRY(meta_i64(w, "world_size", r->world_size));
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < r->world_size && list; i++)
        cJSON_AddItemToArray(list, cJSON_CreateNumber((double)r->next[i]));
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!text) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    tt_status status = tt_st_writer_metadata(w, "sampler.ranks", text);
    cJSON_free(text);
    return status;
}

/* "optim.<tensor>.<state>", the suffix of one state buffer. */
static void state_suffix(const tt_optimizer *o, int i, char *buf, size_t size)
{
    snprintf(buf, size, ".%s", o->state_names[i]);
}

static tt_status meta_int(const tt_safetensors *f, const char *key, int64_t *out);

/* validation.best "score@step", validation.since_best, validation.kept
 * "step:score,..." (scores %.17g: read back exactly). */
static tt_status describe_validation(tt_st_writer *w, const tt_validation_state *v)
{
    if (v->best < 0) return NULL; /* no validation yet */
    char text[TT_KEEP_BEST_MAX * 48 + 64];
    snprintf(text, sizeof text, "%.17g@%lld", v->best, (long long)v->best_step);
    TT_TRY(tt_st_writer_metadata(w, "validation.best", text));
    TT_TRY(meta_i64(w, "validation.since_best", v->since_best));
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < v->kept && i < TT_KEEP_BEST_MAX; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld:%.17g", i ? "," : "",
                                 (long long)v->keep[i].step, v->keep[i].score);
    return v->kept ? tt_st_writer_metadata(w, "validation.kept", text) : NULL;
}

/* The same read back, where the checkpoint has it (older ones do not: the
 * record starts afresh). */
static tt_status restore_validation(const tt_safetensors *f, tt_validation_state *v)
{
    const char *best = tt_safetensors_metadata(f, "validation.best");
    if (!best) return NULL;
    long long step = 0;
    int n = 0;
    if (sscanf(best, "%lf@%lld%n", &v->best, &step, &n) != 2 || best[n])
        return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': metadata validation.best = '%s' is "
                            "not score@step", tt_safetensors_path(f), best);
    v->best_step = step;
    TT_TRY(meta_int(f, "validation.since_best", &v->since_best));
    const char *kept = tt_safetensors_metadata(f, "validation.kept");
    v->kept = 0;
    for (const char *p = kept; p && *p && v->kept < TT_KEEP_BEST_MAX;) {
        double score;
        if (sscanf(p, "%lld:%lf%n", &step, &score, &n) != 2)
            return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': metadata validation.kept = '%s' "
                                "is not step:score,...", tt_safetensors_path(f), kept);
        v->keep[v->kept].step = step, v->keep[v->kept].score = score, v->kept++;
        p += n;
        if (*p == ',') p++;
    }
    return NULL;
}

tt_status tt_checkpoint_save(tt_step *s, const tt_train_counters *c, const tt_checkpoint_data *d,
                             const char *path)
{
    tt_model *m = s->model;
    tt_optimizer *o = s->optimizer;
    tt_status status = NULL;
    tt_st_writer *w = NULL;
    float *state[TT_OPTIMIZER_MAX_STATE] = {0}, *ema = NULL;
    TT_CHECK(tt_st_writer_create(&w));
    TT_CHECK(tt_weights_add(w, m));
    for (int i = 0; i < o->state_count; i++) {
        char suffix[64];
        state_suffix(o, i, suffix, sizeof suffix);
        TT_CHECK(tt_weights_download(s->be, o->state[i], m->params->trainable_floats, &state[i]));
        TT_CHECK(tt_weights_add_arena(w, m->params, state[i], 1, "optim.", suffix));
    }
    if (s->ema) { /* the moving average under ema.<name>; prediction takes it */
        char decay[40];
        snprintf(decay, sizeof decay, "%.17g", s->config.ema_decay);
        TT_CHECK(tt_weights_download(s->be, s->ema, m->params->trainable_floats, &ema));
        TT_CHECK(tt_weights_add_arena(w, m->params, ema, 1, "ema.", ""));
        TT_CHECK(tt_st_writer_metadata(w, "ema", decay));
    }
    char model[512];
    tt_model_spec_json(&m->spec, model, sizeof model);
    TT_CHECK(tt_st_writer_metadata(w, "format", TT_CHECKPOINT_FORMAT));
    TT_CHECK(tt_st_writer_metadata(w, "model", model));
    char tile[32]; /* the crop it trains on: export's default input size */
    snprintf(tile, sizeof tile, "%dx%d", m->height, m->width);
    TT_CHECK(tt_st_writer_metadata(w, "tile", tile));
    TT_CHECK(tt_st_writer_metadata(w, "optimizer", o->ops->name));
    TT_CHECK(describe_data(w, m->spec.classes, d));
    TT_CHECK(meta_i64(w, "step", c->step));
    TT_CHECK(meta_i64(w, "updates", o->updates));
    TT_CHECK(describe_groups(w, o));
    TT_CHECK(meta_i64(w, "micro_batches", c->micro_batches));
    TT_CHECK(meta_i64(w, "images_seen", c->images_seen));
    TT_CHECK(meta_i64(w, "skipped_steps", c->skipped_steps));
    if (c->loss_scale.scale > 0) { /* a power of two: %.17g writes it exactly */
        char scale[40];
        snprintf(scale, sizeof scale, "%.17g", c->loss_scale.scale);
        TT_CHECK(tt_st_writer_metadata(w, "loss_scale", scale));
        TT_CHECK(meta_i64(w, "loss_scale.clean", c->loss_scale.clean));
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, c->sampler.seed);
    TT_CHECK(tt_st_writer_metadata(w, "sampler.seed", seed));
    TT_CHECK(meta_i64(w, "sampler.epoch", c->sampler.epoch));
    TT_CHECK(meta_i64(w, "sampler.position", c->sampler.position));
    if (d->ranks.world_size > 1) TT_CHECK(describe_ranks(w, &d->ranks));
    TT_CHECK(describe_validation(w, &c->validation));
    TT_CHECK(tt_st_writer_write(w, path));
cleanup:
    tt_st_writer_destroy(w);
    for (int i = 0; i < TT_OPTIMIZER_MAX_STATE; i++) free(state[i]);
    free(ema);
    return status;
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

/* Dynamic loss scaling where the checkpoint has it (loss_scale.h): the
 * scale and the clean windows since it changed, so the run goes on as if
 * never stopped; without (or when this run does not scale), the scale the
 * run starts with stays. */
static tt_status restore_loss_scale(const tt_safetensors *f, tt_loss_scale *s)
{
    const char *text = tt_safetensors_metadata(f, "loss_scale");
    if (!text || s->scale <= 0) return NULL;
    char *end;
    double scale = strtod(text, &end);
    if (*end || !(scale > 0) || !isfinite(scale))
        return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': metadata loss_scale = '%s' is not a "
                            "positive number", tt_safetensors_path(f), text);
    TT_TRY(meta_int(f, "loss_scale.clean", &s->clean));
    s->scale = scale;
    return NULL;
}

/* The file's model and optimizer must be the engine's. */
static tt_status same_run(const tt_step *s, const tt_safetensors *f, const char *path)
{
    const char *format = tt_safetensors_metadata(f, "format");
    if (!format || strcmp(format, TT_CHECKPOINT_FORMAT) != 0)
        return tt_error_new(TT_ERR_FORMAT,
                            "--resume %s: not a tiletrain checkpoint (format '%s'); use --init "
                            "to start from plain weights", path, format ? format : "none");
    char model[512];
    tt_model_spec_json(&s->model->spec, model, sizeof model);
    const char *theirs = tt_safetensors_metadata(f, "model");
    tt_model_spec spec;
    tt_status parsed = theirs ? tt_model_spec_parse(theirs, &spec) : NULL;
    int same = theirs && !parsed && tt_model_spec_same(&spec, &s->model->spec);
    tt_status_free(parsed);
    if (!same)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--resume %s: the checkpoint's model %s differs from this run's %s; "
                            "give the same model options", path, theirs ? theirs : "(none)", model);
    const char *opt = tt_safetensors_metadata(f, "optimizer");
    const char *ours = s->optimizer->ops->name;
    if (!opt || strcmp(opt, ours) != 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--resume %s: the checkpoint was trained with --optimizer %s, this "
                            "run uses %s", path, opt ? opt : "(none)", ours);
    return NULL;
}

/* Rank `rank`'s entry of sampler.ranks into *next (-1: none). */
static tt_status rank_next(const tt_safetensors *f, int world, int rank, int64_t *next)
{
    *next = -1;
    const char *text = tt_safetensors_metadata(f, "sampler.ranks");
    if (world < 2 || !text) return NULL;
    cJSON *list = cJSON_Parse(text);
    int ok = cJSON_IsArray(list) && cJSON_GetArraySize(list) == world;
    cJSON *entry = ok && rank < world ? cJSON_GetArrayItem(list, rank) : NULL;
    if (entry && cJSON_IsNumber(entry) && entry->valuedouble >= 0) *next = (int64_t)entry->valuedouble;
    cJSON_Delete(list);
    if (!ok)
        return tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': sampler.ranks '%s' is not a list of "
                            "%d positions", tt_safetensors_path(f), text, world);
    return NULL;
}

tt_status tt_checkpoint_resume(tt_step *s, tt_train_counters *c, const char *path, int rank,
                               int *world_size, int64_t *next)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_error_prefix(tt_safetensors_open(path, &f), "--resume"));
    tt_status status = NULL;
    float *host = NULL;
    tt_model *m = s->model;
    tt_optimizer *o = s->optimizer;
    TT_CHECK(same_run(s, f, path));
    TT_CHECK(tt_weights_read(m, f, TT_WEIGHTS_NEED_ALL));
    size_t n = m->params->trainable_floats;
    TT_CHECK(tt_weights_download(s->be, NULL, n, &host));
    for (int i = 0; i < o->state_count; i++) {
        char suffix[64];
        state_suffix(o, i, suffix, sizeof suffix);
        TT_CHECK(tt_weights_read_arena(f, m->params, host, 1, "optim.", suffix));
        TT_CHECK(tt_write(s->be, tt_mem_of(o->state[i]), host, n * sizeof(float)));
    }
    if (s->ema && tt_safetensors_metadata(f, "ema")) { /* --ema: the average goes on */
        TT_CHECK(tt_weights_read_arena(f, m->params, host, 1, "ema.", ""));
        TT_CHECK(tt_write(s->be, tt_mem_of(s->ema), host, n * sizeof(float)));
    } else if (s->ema) { /* a run without one: it starts at the weights */
        TT_CHECK(tt_step_ema_reset(s));
    }
    int64_t seed, epoch, position;
    TT_CHECK(meta_int(f, "step", &c->step));
    TT_CHECK(meta_int(f, "updates", &o->updates));
    TT_CHECK(restore_groups(f, o));
    TT_CHECK(meta_int(f, "micro_batches", &c->micro_batches));
    TT_CHECK(meta_int(f, "images_seen", &c->images_seen));
    TT_CHECK(meta_int(f, "skipped_steps", &c->skipped_steps));
    TT_CHECK(restore_loss_scale(f, &c->loss_scale));
    TT_CHECK(restore_validation(f, &c->validation));
    TT_CHECK(meta_int(f, "sampler.seed", &seed));
    TT_CHECK(meta_int(f, "sampler.epoch", &epoch));
    TT_CHECK(meta_int(f, "sampler.position", &position));
    c->sampler = (tt_sampler_state){(uint64_t)seed, epoch, position};
    int64_t world = 1;
    if (tt_safetensors_metadata(f, "world_size")) TT_CHECK(meta_int(f, "world_size", &world));
    if (world < 1 || world > 1 << 24) {
        status = tt_error_new(TT_ERR_FORMAT, "checkpoint '%s': world_size %lld", path, (long long)world);
        goto cleanup;
    }
    *world_size = (int)world;
    int64_t mine = -1;
    TT_CHECK(rank_next(f, (int)world, rank, &mine));
    if (next) *next = mine;
cleanup:
    free(host);
    tt_safetensors_close(f);
    return status;
}
