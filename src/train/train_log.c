/* The run's JSON Lines log (OUT/train.jsonl, and stdout with --log-format
 * jsonl); see train_log.h. */
#include "train/train_log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "train/recipe.h"
#include "train/validate.h"

/* One whole line (no newline) to the recipe's sink and to OUT/train.jsonl;
 * after an append fails, none to the file (the run stops with it). */
static void emit_line(tt_trainer *t, const char *line)
{
    if (t->on_log_line) t->on_log_line(t->log_ctx, line);
    if (t->log_fd >= 0 && !t->log_failed)
        t->log_failed = tt_file_append_line(t->log_fd, t->log_path, line);
}

/* The text onto the pending line; each whole line out.  A piece that finds
 * no memory drops that line. */
static void to_lines(tt_trainer *t, const char *format, va_list ap, size_t length)
{
    size_t need = t->log_pending_length + length + 1;
    if (need > t->log_pending_capacity) {
        char *grown = tt_realloc(t->log_pending, need * 2);
        if (!grown) {
            t->log_pending_length = 0;
            return;
        }
        t->log_pending = grown, t->log_pending_capacity = need * 2;
    }
    vsnprintf(t->log_pending + t->log_pending_length, length + 1, format, ap);
    t->log_pending_length += length;
    char *line = t->log_pending, *end;
    while ((end = strchr(line, '\n'))) {
        *end = '\0';
        emit_line(t, line);
        line = end + 1;
    }
    t->log_pending_length = strlen(line);
    memmove(t->log_pending, line, t->log_pending_length + 1);
}

int tt_trainer_logging(const tt_trainer *t)
{
    return t->log_fd >= 0 || t->log_echo || t->on_log_line;
}

tt_status tt_trainer_log_status(const tt_trainer *t)
{
    return t->log_failed ? tt_error_new(TT_ERR_IO, "%s", tt_status_message(t->log_failed)) : NULL;
}

void tt_trainer_log(tt_trainer *t, const char *format, ...)
{
    if (t->on_log_line || t->log_fd >= 0) {
        va_list ap;
        va_start(ap, format);
        int length = vsnprintf(NULL, 0, format, ap);
        va_end(ap);
        if (length >= 0) {
            va_start(ap, format);
            to_lines(t, format, ap, (size_t)length);
            va_end(ap);
        }
    }
    if (t->log_echo) {
        va_list ap;
        va_start(ap, format);
        vfprintf(t->log_echo, format, ap);
        va_end(ap);
        fflush(t->log_echo);
    }
}

void tt_trainer_log_json(tt_trainer *t, cJSON *object)
{
    char *line = object ? cJSON_PrintUnformatted(object) : NULL;
    if (line) tt_trainer_log(t, "%s\n", line);
    cJSON_free(line);
    cJSON_Delete(object);
}

void tt_train_log_start(tt_trainer *t)
{
    cJSON *start = cJSON_CreateObject();
    cJSON *device = tt_device_info_json(&t->be->device);
    if (device) cJSON_AddStringToObject(device, "backend", t->be->ops->name);
    cJSON_AddItemToObject(start, "device", device);
    cJSON *cfg = tt_recipe_json(&t->opt, &t->model);
    if (cfg) cJSON_AddNumberToObject(cfg, "steps", (double)t->max_steps);
    if (cfg && t->dist.size > 1) {
        cJSON_AddNumberToObject(cfg, "ranks", t->dist.size);
        cJSON_AddBoolToObject(cfg, "sync_bn", t->opt.sync_bn);
    }
    if (cfg && t->counters.loss_scale.scale > 0) /* the scale the run starts (or resumes) with */
        cJSON_AddNumberToObject(cfg, "loss_scale", t->counters.loss_scale.scale);
    if (cfg && t->precision_reason[0])
        cJSON_AddStringToObject(cfg, "precision_auto", t->precision_reason);
    cJSON_AddItemToObject(start, "config", cfg);
    tt_trainer_log_json(t, start);
}

void tt_train_log_augment(tt_trainer *t, int gallery_count)
{
    char spec[1024];
    cJSON *root = cJSON_CreateObject(), *a = cJSON_AddObjectToObject(root, "augment");
    cJSON_AddStringToObject(a, "spec", tt_augment_format(&t->augment, spec, sizeof spec));
    cJSON *files = cJSON_AddArrayToObject(a, "gallery");
    for (int k = 0; k < gallery_count; k++) {
        char rel[32];
        snprintf(rel, sizeof rel, "augment/crop%d.png", k);
        cJSON_AddItemToArray(files, cJSON_CreateString(rel));
    }
    tt_trainer_log_json(t, root);
}

void tt_train_log_postprocess(tt_trainer *t, double mean, double default_mean, double seconds)
{
    cJSON *root = cJSON_CreateObject(), *pp = cJSON_AddObjectToObject(root, "postprocess");
    cJSON_AddNumberToObject(root, "step", (double)t->counters.step);
    cJSON *classes = cJSON_AddArrayToObject(pp, "classes");
    for (int c = 0; c < t->model.classes; c++) {
        const tt_pp_choice *ch = &t->postprocess[c];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", c < tt_dataset_classes(t->dataset)
                                               ? tt_dataset_class_name(t->dataset, c) : "");
        cJSON_AddNumberToObject(o, "threshold", round(ch->threshold * 1000.0) / 1000.0);
        cJSON_AddNumberToObject(o, "min_size", ch->min_size);
        cJSON_AddNumberToObject(o, "dice", ch->dice);
        cJSON_AddNumberToObject(o, "default_dice", ch->default_dice);
        cJSON_AddItemToArray(classes, o);
    }
    cJSON_AddNumberToObject(pp, "mean_dice", mean);
    cJSON_AddNumberToObject(pp, "default_mean_dice", default_mean);
    cJSON_AddNumberToObject(pp, "threshold_default", t->opt.threshold);
    cJSON_AddNumberToObject(pp, "min_size_default", t->opt.min_size);
    cJSON_AddNumberToObject(pp, "seconds", seconds);
    tt_trainer_log_json(t, root);
}

void tt_train_log_step(tt_trainer *t, const tt_step_report *r)
{
    tt_trainer_log(t,
            "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, "
            "\"skipped\": %s, \"images\": %lld, \"valid_items\": %lld, "
            "\"images_per_s\": %.4g, \"data_wait_s\": %.4g, \"peak_device_bytes\": %llu",
            (long long)r->step, r->loss, r->lr, r->grad_norm, r->skipped ? "true" : "false",
            (long long)r->images, (long long)r->valid_items,
            r->seconds > 0 ? r->images / r->seconds : 0.0, r->data_wait_seconds,
            (unsigned long long)r->peak_bytes);
    /* dynamic loss scaling: the window's scale, and the clean windows since
     * it last changed after this one */
    if (r->loss_scale > 0)
        tt_trainer_log(t, ", \"loss_scale\": %.17g, \"loss_scale_clean\": %lld", r->loss_scale,
                       (long long)t->counters.loss_scale.clean);
    /* data parallel: the gradient sum over the ranks (staging copies included) */
    if (t->dist.size > 1) tt_trainer_log(t, ", \"allreduce_s\": %.4g", r->sum_seconds);
    /* a loss of several terms: each one's value, unweighted */
    const tt_loss_spec *loss = &t->engine->config.loss;
    for (int i = 0; i < r->terms && loss->count > 1; i++)
        tt_trainer_log(t, "%s\"%s\": %.9g%s", i ? ", " : ", \"losses\": {",
                       tt_loss_kind_name(loss->terms[i].kind), r->term_loss[i],
                       i + 1 == r->terms ? "}" : "");
    tt_trainer_log(t, "}\n");
}

void tt_train_log_validation(tt_trainer *t, const tt_metrics *m, int gallery_count,
                             const tt_metrics *raw)
{
    const char **names = tt_malloc(sizeof *names * (size_t)t->model.classes);
    for (int c = 0; names && c < t->model.classes; c++)
        names[c] = t->dataset && c < tt_dataset_classes(t->dataset)
                       ? tt_dataset_class_name(t->dataset, c) : "";
    char *json = tt_metrics_json(m, t->dataset ? names : NULL); /* rasters: "0", "1", ... */
    cJSON *parsed = json ? cJSON_Parse(json) : NULL; /* one line, for JSON Lines */
    char *line = parsed ? cJSON_PrintUnformatted(parsed) : NULL;
    if (raw) /* --ema: the metrics are the average's; the raw weights' mean beside them */
        tt_trainer_log(t, "{\"step\": %lld, \"validation\": %s, \"raw_mean_dice\": %.9g}\n",
                       (long long)t->counters.step, line ? line : "null", tt_metrics_mean_dice(raw));
    else
        tt_trainer_log(t, "{\"step\": %lld, \"validation\": %s}\n", (long long)t->counters.step,
                       line ? line : "null");
    if (gallery_count) { /* the pictures, relative to OUT */
        cJSON *g = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(g, "gallery");
        cJSON_AddNumberToObject(g, "step", (double)t->counters.step);
        for (int i = 0; i < t->val_count && i < gallery_count; i++) {
            char file[1024], rel[1040];
            tt_validate_gallery_file(t->val_cache, t->val_items[i], file, sizeof file);
            snprintf(rel, sizeof rel, "gallery/%s", file);
            cJSON_AddItemToArray(files, cJSON_CreateString(rel));
        }
        tt_trainer_log_json(t, g);
    }
    cJSON_free(line);
    cJSON_Delete(parsed);
    free(json);
    free(names);
}
