/*
 * One run's recipe, resolved once: defaults, --config and flags (parsed
 * once, each marked given), the data set (opened once), the device, the
 * plan's rules over what was not given, the model, precision, the memory
 * fit and the ranks' agreement; see recipe.h.
 */
#include "train/recipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/fingerprint.h"
#include "data/raster_fingerprint.h"
#include "train/data_parallel.h"
#include "train/fit.h"
#include "train/precision_auto.h"
#include "train/run_plan.h"

void tt_recipe_init(tt_recipe *r)
{
    memset(r, 0, sizeof *r);
    tt_train_options_default(&r->opt);
}

void tt_recipe_release(tt_recipe *r)
{
    tt_dataset_destroy(r->dataset);
    tt_raster_set_destroy(r->rasters);
    tt_backend_destroy(r->be);
    free(r->plan);
    r->dataset = NULL;
    r->rasters = NULL;
    r->be = NULL;
    r->plan = NULL;
}

/* Options that contradict each other, before anything is opened. */
static tt_status check_flags(const tt_train_options *o)
{
    if (o->init[0] && o->resume[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "give --init (weights only) or --resume (the whole state), not both");
    if (o->init_prefix[0] && !o->init[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--init-prefix %s goes with --init FILE",
                            o->init_prefix);
    if (o->val_list[0] && o->val_fraction > 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "give --val-list or --val-fraction, not both");
    tt_augment_config augment; /* parsed again once the plan has had its say */
    TT_TRY(tt_augment_parse(o->augment, &augment));
    double scale;
    return tt_recipe_encoder_scale(o, &scale);
}

/* What validation's options need, once the plan has set its own. */
static tt_status check_validation(const tt_train_options *o)
{
    if ((o->patience || o->keep_best) && !o->val_list[0] && !(o->val_fraction > 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--%s counts validations: hold images out "
                            "with --val-fraction or --val-list (and validate with --val-every)",
                            o->patience ? "patience" : "keep-best");
    if (o->patience && o->val_every <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--patience %d counts validations during "
                            "the run: give --val-every K (steps between them)", o->patience);
    return NULL;
}

/* The classes the data set's labels hold. */
static int data_classes(const tt_recipe *r)
{
    if (!r->rasters) return tt_dataset_classes(r->dataset);
    int classes = 2;
    for (int v = 0; v < 255; v++)
        if (r->raster_stats.class_pixels[v] && v + 1 > classes) classes = v + 1;
    return classes;
}

/* A raster set: its pairs opened and checked, the bands chosen and their
 * statistics (a grid of crops of each raster), which normalise them. */
static tt_status open_rasters(tt_recipe *r)
{
    const tt_train_options *o = &r->opt;
    if (!isnan(o->mean[0]) || !isnan(o->std[0]))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--mean and --std are of RGB pixels / 255; "
                            "the raster data set %s is normalised by each band's own mean and "
                            "std: leave them out", o->data);
    TT_TRY(tt_raster_set_open_flags(o->data, o->bands, o->mask_nodata, &r->rasters));
    TT_TRY(tt_raster_stats_of_set(r->rasters, &r->raster_stats));
    const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(r->rasters, 0));
    r->bands.count = in->channels;
    for (int c = 0; c < in->channels; c++) {
        r->bands.bands[c] = in->bands[c];
        r->bands.mean[c] = (float)r->raster_stats.mean[c];
        r->bands.std[c] = (float)r->raster_stats.std[c];
    }
    r->mask_kind = TT_MASK_CLASS_INDEX;
    r->planes = 1;
    return NULL;
}

static tt_status open_data(tt_recipe *r)
{
    const tt_train_options *o = &r->opt;
    if (!o->data[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "no data set: give --data DIR (make one with `tiletrain data synth`)");
    if (o->format == TT_DATASET_RASTER ||
        (o->format == TT_DATASET_AUTO && tt_raster_set_detect(o->data)))
        return open_rasters(r);
    if (o->bands[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--bands %s picks bands of raster data "
                            "(DIR/images/NAME.tif and DIR/masks/NAME.tif); %s is not one",
                            o->bands, o->data);
    tt_dataset_options dopt = {.dir = o->data, .csv_path = o->csv[0] ? o->csv : NULL,
                               .images_dir = o->images[0] ? o->images : NULL,
                               .format = o->format, .max_pixels = (uint64_t)o->max_pixels,
                               .skip_bad = o->skip_bad};
    TT_TRY(tt_dataset_open(&dopt, &r->dataset));
    for (int i = 0; i < tt_dataset_problem_count(r->dataset); i++) {
        const tt_dataset_problem *p = tt_dataset_problem_at(r->dataset, i);
        fprintf(stderr, "tiletrain: skipped %s: %s\n", p->item, p->reason);
    }
    r->mask_kind = tt_dataset_mask_kind(r->dataset);
    r->planes = r->mask_kind == TT_MASK_MULTI_LABEL ? tt_dataset_classes(r->dataset) : 1;
    return NULL;
}

/* The plan.json a resumed run was trained with: OUT's, else the one beside
 * the checkpoint (a run resumed into another folder); "" when neither
 * exists (the run was trained without a plan). */
static void resumed_plan(const tt_train_options *o, char *path, size_t size)
{
    snprintf(path, size, "%s/plan.json", o->out[0] ? o->out : ".");
    if (access(path, R_OK) == 0) return;
    const char *slash = strrchr(o->resume, '/');
    snprintf(path, size, "%.*s/plan.json", slash ? (int)(slash - o->resume) : 1,
             slash ? o->resume : ".");
    if (access(path, R_OK) != 0) path[0] = '\0';
}

/* --plan auto, FILE or off over what the flags did not give.  auto plans
 * the data set on this run's device; with --resume it reads the plan the
 * run was trained with, or takes none when it had none, so a resumed run
 * keeps its recipe. */
static tt_status plan(tt_recipe *r)
{
    tt_train_options *o = &r->opt;
    if (strcmp(o->plan, "off") == 0) return NULL;
    const char *file = strcmp(o->plan, "auto") != 0 ? o->plan : NULL;
    if (!file && o->resume[0]) {
        resumed_plan(o, r->plan_file, sizeof r->plan_file);
        if (!r->plan_file[0]) {
            fprintf(stderr, "tiletrain: --resume: no plan.json in %s nor beside %s: the run was "
                    "trained without a plan; resumed with the flags given over the built-in "
                    "defaults (--plan off)\n", o->out, o->resume);
            snprintf(o->plan, sizeof o->plan, "off");
            return NULL;
        }
        file = r->plan_file;
    }
    if (file) {
        if (file != r->plan_file) snprintf(r->plan_file, sizeof r->plan_file, "%s", file);
        TT_TRY(tt_error_prefix(tt_run_plan_apply_file(file, o, r->given), "--plan"));
        fprintf(stderr, "tiletrain: the recipe of %s, with the flags given\n", file);
        return NULL;
    }
    r->plan = tt_calloc(1, sizeof *r->plan);
    if (!r->plan) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_fingerprint fp;
    if (r->rasters) TT_TRY(tt_raster_fingerprint(r->rasters, &r->raster_stats, &fp));
    else TT_TRY(tt_fingerprint_compute(r->dataset, TT_PLAN_IMAGES, &fp));
    TT_TRY(tt_run_plan_make(&fp, &r->be->device, o, r->given, r->plan));
    if (o->out[0]) snprintf(r->plan_file, sizeof r->plan_file, "%s/plan.json", o->out);
    return NULL;
}

/* The model the options and the data set describe, and the inputs'
 * normalisation. */
static tt_status resolve_model(tt_recipe *r, const tt_dist *dist)
{
    const tt_train_options *o = &r->opt;
    TT_TRY(tt_recipe_model(o, data_classes(r), &r->model));
    if (r->rasters) r->model.in_channels = r->bands.count;
    if (o->sync_bn && r->model.norm != TT_NORM_BATCH)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--sync-bn synchronises batch norm: give it "
                            "with --norm batch (this run's norm is %s)",
                            tt_norm_kind_name(r->model.norm));
    for (int k = 0; k < 3; k++) r->mean[k] = isnan(o->mean[0]) ? 0.0f : o->mean[k];
    for (int k = 0; k < 3; k++) r->std[k] = isnan(o->std[0]) ? 1.0f : o->std[k];
    r->normalize = tt_train_options_normalize(o);
    /* rasters: each band by its own statistics (r->bands) */
    if (!r->rasters && !r->normalize && tt_model_spec_resnet_encoder(&r->model)) {
        /* a ResNet encoder's pretraining normalised by ImageNet's statistics */
        const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
        memcpy(r->mean, mean, sizeof mean);
        memcpy(r->std, std, sizeof std);
        r->normalize = 1;
    }
    /* the images one batch norm sees: the micro-batch, or with --sync-bn every rank's */
    int seen = o->micro_batch * (o->sync_bn ? dist->size : 1);
    int frozen = r->model.freeze_encoder_bn && r->model.freeze_decoder_bn;
    if (r->model.norm == TT_NORM_BATCH && !frozen && seen > 0 && seen < 4 && dist->rank == 0)
        fprintf(stderr,
                "tiletrain: note: batch norm over %d image%s: its statistics come from one "
                "micro-batch, not the accumulation window; below 4 they are noisy (%s)\n", seen,
                seen == 1 ? "" : "s",
                tt_model_spec_resnet_encoder(&r->model)
                    ? "--freeze-bn uses the running statistics instead"
                    : "--norm group keeps none, but normalises each crop on its own");
    return NULL;
}

/* --loss and --class-weights as given, checked against the data set's
 * masks and classes before the plan's work: a bad one fails at once. */
static tt_status check_loss(const tt_recipe *r)
{
    int classes = data_classes(r);
    if (r->opt.classes > classes) classes = r->opt.classes;
    tt_step_config parsed;
    return tt_recipe_loss(&r->opt, r->mask_kind, classes, &parsed);
}

/* --loss and --class-weights checked against the masks and the classes;
 * auto written as the terms it means, so the recipe says what ran. */
static tt_status resolve_loss(tt_recipe *r)
{
    tt_step_config parsed;
    TT_TRY(tt_recipe_loss(&r->opt, r->mask_kind, r->model.classes, &parsed));
    if (strcmp(r->opt.loss, "auto") == 0)
        tt_loss_spec_format(&parsed.loss, r->opt.loss, sizeof r->opt.loss);
    return NULL;
}

/* --precision auto: the storage chosen on this device (precision_auto.h),
 * at the run's micro-batch (the model's least when that is auto: the fit
 * comes after).
 * Every rank times its own device; rank 0's choice is every rank's, so
 * that the ranks run the same arithmetic. */
static tt_status choose_precision(tt_recipe *r, const tt_dist *dist)
{
    if (r->model.precision != TT_PRECISION_AUTO) return NULL;
    tt_step_config sc = tt_recipe_step(&r->opt, &r->model, r->mask_kind, r->planes);
    int least = tt_model_spec_least_micro_batch(&sc.model);
    if (sc.micro_batch < least) sc.micro_batch = least;
    tt_precision_choice choice;
    TT_TRY(tt_error_prefix(tt_precision_auto(r->be, &sc, &choice), "--precision auto"));
    int32_t chosen = (int32_t)sc.model.precision;
    TT_TRY(tt_dist_broadcast(dist, &chosen, sizeof chosen, 0));
    r->model.precision = (tt_precision)chosen;
    r->opt.precision = (tt_precision)chosen;
    snprintf(r->precision_reason, sizeof r->precision_reason, "%s", choice.reason);
    if (dist->rank == 0) fprintf(stderr, "tiletrain: --precision auto: %s\n", choice.reason);
    return NULL;
}

/* Data parallel --micro-batch auto: every rank takes the smallest micro-batch
 * any rank's device fits, and --batch stays the images of a whole step. */
static tt_status agree_micro_batch(tt_recipe *r, const tt_dist *dist)
{
    tt_train_options *o = &r->opt;
    double v[2] = {-o->micro_batch, r->model.checkpointing};
    TT_TRY(tt_dist_max_f64(dist, v, 2));
    int b = (int)-v[0], k = dist->size;
    o->micro_batch = b;
    r->model.checkpointing = o->checkpointing = (int)v[1];
    o->accum = (o->batch + k * b - 1) / (k * b);
    if (dist->rank == 0)
        fprintf(stderr, "tiletrain: micro-batch auto over %d ranks: micro-batch %d x accum %d on "
                "each, %d images per step\n", k, b, o->accum, k * b * o->accum);
    return NULL;
}

/* Data parallel: rank 0's plan is every rank's (each planned for its own
 * device); each keeps its own device. */
static tt_status agree_plan(tt_recipe *r, const tt_dist *dist)
{
    if (dist->size < 2 || !r->plan) return NULL;
    tt_train_options mine = r->opt;
    TT_TRY(tt_dist_broadcast(dist, &r->opt, sizeof r->opt, 0));
    memcpy(r->opt.device, mine.device, sizeof mine.device);
    r->opt.backend = mine.backend;
    return NULL;
}

tt_status tt_recipe_resolve(tt_recipe *r, const tt_dist *dist)
{
    tt_dist single = tt_dist_single();
    if (!dist) dist = &single;
    tt_train_options *o = &r->opt;
    TT_TRY(check_flags(o));
    TT_TRY(open_data(r));
    TT_TRY(check_loss(r));
    TT_TRY(tt_dp_pick_device(dist, o));
    tt_backend_request request;
    TT_TRY(tt_recipe_backend(o, &request));
    TT_TRY(tt_backend_create(&request, &r->be));
    if (dist->size > 1)
        fprintf(stderr, "tiletrain: rank %d of %d (rank %d on its machine) trains on %s '%s'\n",
                dist->rank, dist->size, dist->local_rank, r->be->ops->name, r->be->device.name);
    TT_TRY(tt_error_prefix(plan(r), "planning the run (--plan off trains without a plan)"));
    TT_TRY(agree_plan(r, dist));
    TT_TRY(check_flags(o)); /* again: a plan file may have set one */
    TT_TRY(check_validation(o));
    if (r->rasters && o->val_list[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--val-list: the raster data set %s holds "
                            "out scenes or blocks of a scene, not images by name; give "
                            "--val-fraction X instead (whole scenes when there are several, "
                            "else blocks of the one)", o->data);
    int automatic = o->micro_batch == 0;
    TT_TRY(tt_augment_parse(o->augment, &r->augment));
    TT_TRY(resolve_model(r, dist));
    TT_TRY(resolve_loss(r));
    TT_TRY(choose_precision(r, dist));
    if (!r->plan) { /* a plan's memory rule fitted it */
        TT_TRY(tt_fit_memory(&r->be->device, o, &r->model, r->mask_kind, r->planes));
        o->checkpointing = r->model.checkpointing;
    }
    if (dist->size > 1 && automatic) TT_TRY(agree_micro_batch(r, dist));
    return NULL;
}

/* Why an option that no flag gave and no plan chose is not its default. */
static const char *resolved_reason(const tt_recipe *r, const char *option)
{
    if (strcmp(option, "precision") == 0 && r->precision_reason[0]) return r->precision_reason;
    if (strcmp(option, "micro-batch") == 0 || strcmp(option, "accum") == 0 ||
        strcmp(option, "checkpointing") == 0)
        return "fitted to the device's memory (the engine's own estimate)";
    if (strcmp(option, "backend") == 0 || strcmp(option, "device") == 0)
        return "this rank's device";
    if (strcmp(option, "steps") == 0) return "the run's length";
    if (strcmp(option, "loss") == 0) return "auto: the mask kind's own loss";
    return "";
}

cJSON *tt_recipe_table_json(const tt_recipe *r, const tt_train_options *opt)
{
    tt_train_options defaults;
    tt_train_options_default(&defaults);
    strcpy(defaults.plan, "auto"); /* train's */
    int from_file = r->plan_file[0] && !r->plan && strcmp(opt->plan, "off") != 0;
    cJSON *rows = cJSON_CreateArray();
    for (size_t i = 0; rows && i < tt_train_option_count; i++) {
        const tt_opt *o = &tt_train_option_table[i];
        char value[TT_OPT_STRING_MAX], dflt[TT_OPT_STRING_MAX];
        tt_opt_format(o, opt, value, sizeof value);
        tt_opt_format(o, &defaults, dflt, sizeof dflt);
        const tt_plan_choice *choice = r->plan ? tt_run_plan_find(r->plan, o->name) : NULL;
        const char *from = "default", *reason = "";
        if (r->given[i]) from = "flag";
        else if (choice) from = "plan", reason = choice->reason;
        else if (strcmp(value, dflt) != 0 && from_file) from = "plan file";
        else if (strcmp(value, dflt) != 0) from = "resolved", reason = resolved_reason(r, o->name);
        cJSON *row = cJSON_CreateObject();
        if (!row) break;
        cJSON_AddStringToObject(row, "option", o->name);
        cJSON_AddStringToObject(row, "value", o->kind == TT_OPT_FLAG && !value[0] ? "false" : value);
        cJSON_AddStringToObject(row, "from", from);
        if (reason[0]) cJSON_AddStringToObject(row, "reason", reason);
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}
