/*
 * tiletrain plan: reads a data set's fingerprint (sizes, channels,
 * intensities, classes, region sizes, empty masks, label kind) and the
 * device's memory, chooses a training recipe (train/run_plan.h), prints
 * each choice with its reason and writes plan.json.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/status.h"
#include "backend/backend.h"
#include "train/run_plan.h"

typedef struct plan_options {
    char data[TT_OPT_STRING_MAX];
    int format;                 /* tt_dataset_format */
    char csv[TT_OPT_STRING_MAX];
    char images[TT_OPT_STRING_MAX];
    char bands[TT_OPT_STRING_MAX];  /* raster data: the image bands */
    char out[TT_OPT_STRING_MAX];
    char device[TT_OPT_STRING_MAX];
    int backend;                /* tt_backend_choice */
    int model;                  /* tt_model_choice */
    uint64_t mem_limit;
    int max_images;
    int json;
} plan_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(plan_options, field), meta, help, lo, hi, NULL}
static const tt_opt option_table[] = {
    OPT("data", TT_OPT_STRING, data, "DIR", "data set folder (see datasets/README.md)", 1, 0),
    {"format", TT_OPT_ENUM, offsetof(plan_options, format), "F", "data set format: auto (detected from the folder), folder, kaggle-rle or raster", 1, 0, TT_DATASET_FORMAT_CHOICES},
    OPT("csv", TT_OPT_STRING, csv, "FILE", "kaggle-rle: the CSV (default DIR/train.csv)", 1, 0),
    OPT("images", TT_OPT_STRING, images, "DIR", "folder of the images (default by format)", 1, 0),
    OPT("bands", TT_OPT_STRING, bands, "LIST", "raster data: the image bands the run takes, counted from 1 (default: all)", 1, 0),
    OPT("mem-limit", TT_OPT_BYTES, mem_limit, "SIZE", "device memory to stay under, e.g. 2GiB (default: the device's, less 10%)", 1, 0),
    {"backend", TT_OPT_ENUM, offsetof(plan_options, backend), "NAME", TT_BACKEND_HELP, 1, 0, TT_BACKEND_CHOICES},
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name among the backend's devices (its memory and kind)", 1, 0),
    {"model", TT_OPT_ENUM, offsetof(plan_options, model), "NAME", "the model the plan is for: a ResNet encoder takes no plain UNet's sizes, norm or intensities (default unet)", 1, 0, TT_MODEL_CHOICES},
    OPT("max-images", TT_OPT_INT, max_images, "N", "read at most N images for the fingerprint, evenly spread (default 200; 0: all)", 0, 1e9),
    OPT("out", TT_OPT_STRING, out, "FILE", "where to write the plan; a folder: FOLDER/plan.json, as train's run folder has it (default plan.json)", 1, 0),
    OPT("json", TT_OPT_FLAG, json, NULL, "print the plan as JSON instead of text", 1, 0),
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain plan --data DIR [--mem-limit SIZE] [--backend NAME] [--device SPEC] [--json]\n"
           "\n"
           "Reads the data set's fingerprint (image sizes, grey or colour, intensity\n"
           "statistics, label kind, class shares, the sizes of the labelled regions,\n"
           "empty masks, ignored pixels) and the device's memory, and chooses a\n"
           "training recipe: tile, depth and channels, micro-batch and accumulation\n"
           "(from the engine's memory estimate: it always fits), normalisation, loss,\n"
           "learning rate and schedule, foreground sampling, steps, validation and\n"
           "post-processing.  Prints each choice with its reason and writes plan.json;\n"
           "its \"args\" are the train options the plan stands for.\n"
           "\n"
           "example:\n"
           "  tiletrain plan --data runs/quickstart/data --mem-limit 2GiB\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

static void print_plan(const tt_run_plan *p, const char *path, const char *model)
{
    const tt_fingerprint *f = &p->fingerprint;
    const tt_device_info *d = &p->device;
    printf("data set     %d images (%d read), %dx%d median, %dx%d to %dx%d, %s\n", f->images,
           f->images_read, f->median_width, f->median_height, f->min_width, f->min_height,
           f->max_width, f->max_height, f->grey ? "grey" : "colour");
    printf("intensity    mean %.3f %.3f %.3f, std %.3f %.3f %.3f (of pixel / 255)\n", f->mean[0],
           f->mean[1], f->mean[2], f->std[0], f->std[1], f->std[2]);
    printf("labels       %s, %d classes; foreground %.1f%% of labelled pixels, %.0f%% of images "
           "empty, %.1f%% ignored\n", f->mask_kind == TT_MASK_MULTI_LABEL ? "multi-label" : "class index",
           f->classes, 100 * f->foreground_share, 100 * f->empty_share, 100 * f->ignore_share);
    for (int c = 0; c < f->classes; c++)
        if (f->cls[c].regions)
            printf("  class %-3d  %5.1f%% of pixels, in %d images, %d regions; a typical one %.0f "
                   "px (%.0f across); 95%% of its pixels in regions of %.0f px or more\n", c,
                   100 * f->cls[c].pixel_share, f->cls[c].images, f->cls[c].regions,
                   f->cls[c].typical_area, f->cls[c].typical_extent, f->cls[c].small_area);
    printf("device       %s (%s), %.2f GiB\n\nplan\n", d->name, d->type,
           d->global_mem_bytes / 1073741824.0);
    for (int i = 0; i < p->count; i++) {
        char flag[96];
        snprintf(flag, sizeof flag, "--%s %s", p->choices[i].option, p->choices[i].value);
        printf("  %-28s %s\n", flag, p->choices[i].reason);
    }
    printf("\nwritten to %s; train with:\n  tiletrain train --data DIR --out RUN", path);
    if (strcmp(model, "unet") != 0) printf(" --model %s", model);
    tt_run_plan_print_args(p, stdout);
    printf("\n");
}

static tt_status run(const plan_options *o)
{
    if (!o->data[0]) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "give --data DIR: the data set to plan for");
    /* the options a run would be given, for what plan reads of them */
    tt_train_options t;
    tt_train_options_default(&t);
    snprintf(t.data, sizeof t.data, "%s", o->data);
    t.format = (tt_dataset_format)o->format;
    t.backend = (tt_backend_choice)o->backend;
    t.model = (tt_model_choice)o->model;
    snprintf(t.csv, sizeof t.csv, "%s", o->csv);
    snprintf(t.images, sizeof t.images, "%s", o->images);
    snprintf(t.bands, sizeof t.bands, "%s", o->bands);
    snprintf(t.device, sizeof t.device, "%s", o->device);
    t.mem_limit = o->mem_limit;
    tt_run_plan *plan = tt_calloc(1, sizeof *plan);
    if (!plan) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    char path[sizeof o->out + 16];
    struct stat st;
    if (o->out[0] && stat(o->out, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/plan.json", o->out);
    else
        snprintf(path, sizeof path, "%s", o->out[0] ? o->out : "plan.json");
    cJSON *json = NULL;
    char *text = NULL;
    tt_status status = tt_run_plan_for(&t, NULL, o->max_images, plan);
    if (!status) status = tt_run_plan_write(plan, path);
    if (!status && o->json) {
        json = tt_run_plan_json(plan);
        text = json ? cJSON_Print(json) : NULL;
        if (text)
            printf("%s\n", text);
        else
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    } else if (!status) {
        print_plan(plan, path, tt_model_choice_name(t.model));
    }
    free(text);
    cJSON_Delete(json);
    free(plan);
    return status ? tt_error_prefix(status, "plan for %s", o->data) : NULL;
}

int tt_cmd_plan(int argc, char **argv)
{
    plan_options o = {0};
    o.max_images = TT_PLAN_IMAGES;
    int rc = tt_cli_parse("plan", option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    tt_status status = run(&o);
    return status ? tt_cli_fail(status) : 0;
}
