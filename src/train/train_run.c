/* A whole training run, for the command line and the library's API; see
 * train_run.h. */
#include "train/train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/profile.h"
#include "core/fs.h"
#include "core/status.h"
#include "train/report.h"
#include "train/run_plan.h"
#include "train/train_log.h"

static tt_status checkpoint(tt_trainer *t)
{
    char path[TT_OPT_STRING_MAX + 32];
    snprintf(path, sizeof path, "%s/last.safetensors", t->opt.out);
    return tt_trainer_save(t, path);
}

static tt_status validate(tt_trainer *t, const tt_train_hooks *hooks)
{
    tt_metrics *m = NULL;
    TT_TRY(tt_trainer_validate(t, &m));
    if (m && hooks->on_validation) hooks->on_validation(hooks->ctx, t, m);
    tt_metrics_destroy(m);
    return NULL;
}

/* {"recipe": ...}: every option, where its value came from, and why; then
 * {"plan": plan.json}: the fingerprint and every choice with its reason. */
static tt_status log_recipe(tt_trainer *t, const tt_recipe *recipe)
{
    if (tt_trainer_logging(t)) {
        cJSON *root = cJSON_CreateObject();
        tt_train_options final = t->opt;
        final.steps = (int)t->max_steps;
        if (root) cJSON_AddItemToObject(root, "recipe", tt_recipe_table_json(recipe, &final));
        tt_trainer_log_json(t, root);
    }
    if (!recipe->plan_file[0] || t->log_fd < 0) return NULL;
    cJSON *plan = NULL;
    TT_TRY(tt_run_plan_read(recipe->plan_file, &plan));
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cJSON_Delete(plan);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    cJSON_AddItemToObject(root, "plan", plan);
    tt_trainer_log_json(t, root);
    return NULL;
}

/* --profile: the device seconds of every kind of op over the run, into
 * train.jsonl ({"profile": {...}}). */
static void log_profile(tt_trainer *t)
{
    tt_status finished = tt_finish(t->be); /* the last launches' times arrive here */
    tt_status_free(finished);
    cJSON *root = cJSON_CreateObject();
    if (root) cJSON_AddItemToObject(root, "profile", tt_profile_json(t->be->profile));
    tt_trainer_log_json(t, root);
}

/* The windows until the run's end, an interrupt or an error. */
static tt_status loop(tt_trainer *t, const tt_train_hooks *hooks)
{
    const tt_train_options *opt = &t->opt;
    while (t->counters.step < t->max_steps && !t->finished && !t->stopped_early) {
        TT_TRY(tt_trainer_log_status(t));
        tt_step_report r;
        tt_status status = tt_trainer_step(t, &r);
        int ran = !status && r.images > 0;
        if (hooks->on_step) hooks->on_step(hooks->ctx, t, ran ? &r : NULL);
        if (!ran) return status;
        int more = t->counters.step < t->max_steps;
        if (opt->val_every > 0 && t->counters.step % opt->val_every == 0 && more)
            TT_TRY(validate(t, hooks));
        if (opt->checkpoint_every > 0 && t->counters.step % opt->checkpoint_every == 0 && more)
            TT_TRY(checkpoint(t));
    }
    return NULL;
}

static void fill_outcome(const tt_trainer *t, tt_train_outcome *outcome)
{
    const tt_validation_state *v = &t->counters.validation;
    outcome->steps = t->counters.step;
    outcome->skipped_steps = t->counters.skipped_steps;
    outcome->interrupted = t->interrupted;
    outcome->stopped_early = t->stopped_early;
    outcome->best_step = v->best_step;
    outcome->validations_since_best = v->since_best;
    outcome->best_dice = v->best;
    outcome->stopped_together = t->stopped_together;
    outcome->trainer_made = 1;
}

tt_status tt_train_run(tt_recipe *recipe, const tt_dist *dist, const tt_train_hooks *hooks,
                       tt_train_outcome *outcome)
{
    memset(outcome, 0, sizeof *outcome);
    const tt_train_hooks none = {0};
    if (!hooks) hooks = &none;
    if (recipe->plan && recipe->opt.out[0] && (!dist || dist->rank == 0)) {
        TT_TRY(tt_make_dirs(recipe->opt.out)); /* --plan auto's, made this run */
        TT_TRY(tt_run_plan_write(recipe->plan, recipe->plan_file));
    }
    tt_trainer *t = NULL;
    TT_TRY(tt_trainer_create_ranked(recipe, dist, &t));
    tt_status status = log_recipe(t, recipe);
    if (!status && hooks->on_start) hooks->on_start(hooks->ctx, t);
    t->interrupt = hooks->interrupt;
    t->on_micro_batch = hooks->on_micro_batch;
    t->progress_ctx = hooks->ctx;
    if (!status) status = loop(t, hooks);
    if (!status && t->interrupted) {
        status = checkpoint(t); /* resumes at the dropped window's start */
        fill_outcome(t, outcome);
        if (hooks->on_finish) hooks->on_finish(hooks->ctx, t, status);
        tt_trainer_destroy(t);
        return status;
    }
    if (!status && !t->stopped_early) status = validate(t, hooks); /* an early stop has just */
    if (!status) status = checkpoint(t);
    char *memory = tt_memory_report_json(t->be, 8); /* the peaks per category */
    if (memory) tt_trainer_log(t, "{\"memory\": %s}\n", memory);
    free(memory);
    if (t->be->profile) log_profile(t);
    if (!status) status = tt_trainer_log_status(t);
    if (!status && t->log_fd >= 0) {
        tt_status report = tt_report_write(t->opt.out);
        if (report)
            snprintf(outcome->report_error, sizeof outcome->report_error, "%s",
                     tt_status_message(report));
        tt_status_free(report);
    }
    fill_outcome(t, outcome);
    if (hooks->on_finish) hooks->on_finish(hooks->ctx, t, status);
    tt_trainer_destroy(t);
    return status;
}
