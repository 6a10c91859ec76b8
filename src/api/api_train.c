/*
 * The front ends' entry points to devices, plans and training
 * (include/tiletrain.h, "front ends"): train's own option table parses the
 * flags, the run is train/train_run.c's, results go out as JSON text.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/options.h"
#include "core/status.h"
#include "tiletrain.h"
#include "train/run_plan.h"
#include "train/train_run.h"

const char *tt_version(void) { return TT_VERSION; }

void tt_string_free(char *text) { cJSON_free(text); }

/* *text: the JSON of `root` on one line (cJSON's allocation), root deleted. */
static tt_status to_text(cJSON *root, char **text)
{
    *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return *text ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
}

tt_status tt_devices_json(char **json)
{
    *json = NULL;
    tt_device_info *devices = NULL;
    int count = 0;
    TT_TRY(tt_devices_list(&devices, &count));
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < count; i++) cJSON_AddItemToArray(list, tt_device_info_json(&devices[i]));
    free(devices);
    return to_text(list, json);
}

/* argv through train's table, as `tiletrain train` parses it (flags given
 * marked); --help has no page to show here. */
static tt_status parse(tt_recipe *recipe, int argc, char **argv)
{
    int help = 0;
    TT_TRY(tt_opt_parse_args_given(tt_train_option_table, tt_train_option_count, &recipe->opt, argc,
                                   argv, 0, &help, recipe->given));
    if (help)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--help has no page here: `tiletrain train "
                            "--help` lists the options (in Python: tiletrain.options())");
    return NULL;
}

tt_status tt_plan_args(int argc, char **argv, char **json)
{
    *json = NULL;
    tt_recipe *recipe = tt_malloc(sizeof *recipe);
    tt_run_plan *plan = tt_calloc(1, sizeof *plan);
    tt_status status = NULL;
    if (!recipe || !plan) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    tt_recipe_init(recipe);
    TT_CHECK(parse(recipe, argc, argv));
    if (!recipe->opt.data[0])
        TT_CHECK(tt_error_new(TT_ERR_INVALID_ARGUMENT, "give --data DIR: the data set to plan for"));
    TT_CHECK(tt_error_prefix(tt_run_plan_for(&recipe->opt, recipe->given, TT_PLAN_IMAGES, plan),
                             "plan for %s", recipe->opt.data));
    status = to_text(tt_run_plan_json(plan), json);
cleanup:
    free(recipe);
    free(plan);
    return status;
}

static tt_status outcome_json(const tt_train_outcome *o, const char *out, char **json)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    cJSON_AddNumberToObject(root, "steps", (double)o->steps);
    cJSON_AddNumberToObject(root, "skipped_steps", (double)o->skipped_steps);
    cJSON_AddBoolToObject(root, "interrupted", o->interrupted);
    cJSON_AddBoolToObject(root, "stopped_early", o->stopped_early);
    cJSON_AddNumberToObject(root, "best_step", (double)o->best_step);
    cJSON_AddNumberToObject(root, "best_dice", o->best_dice);
    cJSON_AddStringToObject(root, "report_error", o->report_error);
    cJSON_AddStringToObject(root, "out", out);
    return to_text(root, json);
}

tt_status tt_train_args(int argc, char **argv, void (*on_log_line)(void *ctx, const char *line),
                        void *ctx, volatile int *interrupt, char **outcome)
{
    if (outcome) *outcome = NULL;
    tt_recipe *recipe = tt_malloc(sizeof *recipe);
    if (!recipe) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_recipe_init(recipe);
    strcpy(recipe->opt.plan, "auto"); /* train's own default, as on the command line */
    tt_status status = NULL;
    TT_CHECK(parse(recipe, argc, argv));
    recipe->on_log_line = on_log_line;
    recipe->log_ctx = ctx;
    TT_CHECK(tt_recipe_resolve(recipe, NULL));
    tt_train_hooks hooks = {.interrupt = interrupt};
    tt_train_outcome result;
    TT_CHECK(tt_train_run(recipe, NULL, &hooks, &result));
    if (outcome) status = outcome_json(&result, recipe->opt.out, outcome);
cleanup:
    tt_recipe_release(recipe);
    free(recipe);
    return status;
}

tt_status tt_train_options_json(char **json)
{
    *json = NULL;
    tt_train_options defaults;
    tt_train_options_default(&defaults);
    strcpy(defaults.plan, "auto"); /* train's own default */
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; list && i < tt_train_option_count; i++) {
        const tt_opt *o = &tt_train_option_table[i];
        char value[TT_OPT_STRING_MAX];
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "name", o->name);
        cJSON_AddBoolToObject(row, "flag", o->kind == TT_OPT_FLAG);
        cJSON_AddStringToObject(row, "metavar", o->metavar ? o->metavar : "");
        cJSON_AddStringToObject(row, "help", o->help);
        cJSON_AddStringToObject(row, "default", tt_opt_format(o, &defaults, value, sizeof value));
        cJSON_AddItemToArray(list, row);
    }
    return to_text(list, json);
}
