/* Choosing a recipe from a fingerprint and a device; see run_plan.h.  Each
 * rule below says what it looks at and why, and the same words go into the
 * choice's reason. */
#include "train/run_plan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/fs.h"
#include "core/options.h"
#include "core/status.h"
#include "data/dataset.h"
#include "data/dataset_probe.h"
#include "train/fit.h"
#include "train/recipe.h"

#define PLAN_BATCH 8          /* images per optimizer step: the quick start's 4 x 2 */
#define PLAN_MICRO_MAX 4      /* on the quick start's set 4 x 2 learnt faster than 8 x 1
                                 (docs/guide.md, "Planned runs") */
#define PLAN_MIN_TILE 64
#define PLAN_MAX_TILE 256     /* larger crops cost steps/s on the small cards we serve */
#define PLAN_MAX_TILE_CPU 128 /* on a CPU 256 px is 4x the work of 128 for the same Dice (guide) */

static void choose(tt_run_plan *p, const char *option, const char *value, const char *fmt, ...)
{
    if (p->count == TT_PLAN_MAX_CHOICES) return;
    tt_plan_choice *c = &p->choices[p->count++];
    snprintf(c->option, sizeof c->option, "%s", option);
    snprintf(c->value, sizeof c->value, "%s", value);
    va_list args;
    va_start(args, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, args);
    va_end(args);
}

/* Every option a plan may choose (tt_run_plan_make's choose() calls). */
static const char *const planned_options[] = {
    "tile", "depth", "base-channels", "micro-batch", "accum", "checkpointing", "norm", "mean",
    "std", "dice-weight", "fg-fraction", "lr", "schedule", "steps", "val-fraction", "val-every",
    "val-overlap", "min-size",
};

int tt_run_plan_chooses(const char *option)
{
    for (size_t i = 0; i < sizeof planned_options / sizeof *planned_options; i++)
        if (strcmp(option, planned_options[i]) == 0) return 1;
    return 0;
}

const tt_plan_choice *tt_run_plan_find(const tt_run_plan *p, const char *option)
{
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->choices[i].option, option) == 0) return &p->choices[i];
    return NULL;
}

/* The median over foreground classes with regions of a per-class figure. */
static double class_median(const tt_fingerprint *fp, int extent)
{
    double v[TT_FINGERPRINT_MAX_CLASSES];
    int n = 0;
    for (int c = 0; c < fp->classes; c++)
        if (fp->cls[c].regions) v[n++] = extent ? fp->cls[c].typical_extent : fp->cls[c].typical_area;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

tt_status tt_run_plan_make(const tt_fingerprint *fp, const tt_device_info *device,
                           uint64_t mem_limit, tt_run_plan *out)
{
    memset(out, 0, sizeof *out);
    out->fingerprint = *fp;
    out->device = *device;
    if (fp->images < 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "the data set has %d usable image%s: a plan needs at least 2 (one "
                            "to train on, one to validate); add images",
                            fp->images, fp->images == 1 ? "" : "s");
    char v[64];
    int small_side = fp->min_width < fp->min_height ? fp->min_width : fp->min_height;
    if (small_side < 16)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "the smallest image is %dx%d: a plan needs images of at least 16x16",
                            fp->min_width, fp->min_height);

    /* tile: at least a quarter of a typical region's span (crops centred on
     * foreground then see its inside and its border), a power of two from
     * 64 to 256 (128 on a CPU), and no larger than the smallest image */
    int cpu = strcmp(device->type, "CPU") == 0;
    int most = cpu ? PLAN_MAX_TILE_CPU : PLAN_MAX_TILE;
    double extent = class_median(fp, 1);
    int tile = PLAN_MIN_TILE, wanted;
    while (tile < most && tile < extent / 4) tile *= 2;
    while (tile > small_side) tile /= 2;
    wanted = tile;

    /* micro-batch and accumulation from the engine's own estimate: batch
     * norm where 4 crops fit (its statistics need them), else group norm,
     * fitted again with it; a tile not even one crop of fits (checkpointing
     * included) is halved, down to 16 px, so the plan always fits */
    int base = cpu ? 8 : 16, depth = 3, batch_norm = 0;
    tt_train_options o;
    tt_model_spec model;
    int planes = fp->mask_kind == TT_MASK_MULTI_LABEL ? fp->classes : 1;
    for (;;) {
        depth = tile >= 64 ? 3 : tile >= 32 ? 2 : 1;
        tt_train_options_default(&o);
        o.tile[0] = o.tile[1] = tile;
        o.base_channels = base, o.depth = depth;
        o.micro_batch = 0, o.batch = PLAN_MICRO_MAX, o.mem_limit = mem_limit;
        snprintf(o.norm, sizeof o.norm, "batch");
        TT_TRY(tt_recipe_model(&o, fp->classes, &model));
        tt_status fitted = tt_fit_memory_silently(device, &o, &model, fp->mask_kind, planes);
        batch_norm = !fitted && o.micro_batch >= 4;
        tt_status_free(fitted); /* an error here is group norm's to answer */
        if (batch_norm) break;
        snprintf(o.norm, sizeof o.norm, "group");
        o.micro_batch = 0;
        TT_TRY(tt_recipe_model(&o, fp->classes, &model));
        fitted = tt_fit_memory_silently(device, &o, &model, fp->mask_kind, planes);
        if (!fitted) break;
        if (tt_status_code(fitted) != TT_ERR_OUT_OF_MEMORY || tile <= 16)
            return tt_error_prefix(fitted, "no configuration fits: not even one %d px crop "
                                   "with checkpointing", tile);
        tt_status_free(fitted);
        tile /= 2;
    }
    snprintf(v, sizeof v, "%dx%d", tile, tile);
    char fits[96] = "";
    if (tile < wanted)
        snprintf(fits, sizeof fits, "; %d px did not fit %s, halved to %d", wanted,
                 mem_limit ? "--mem-limit" : "the device", tile);
    if (extent > 0)
        choose(out, "tile", v, "a typical region spans %.0f px: a %d px crop sees a quarter "
               "of it or more, inside or at its border (from %d to %d px on this device)%s",
               extent, wanted, PLAN_MIN_TILE, most, fits);
    else
        choose(out, "tile", v, "no labelled region to size it by: %d px%s", wanted, fits);

    /* depth and width: three levels (a fourth trained slower on the quick
     * start's set), fewer for small crops; half the channels on a CPU */
    snprintf(v, sizeof v, "%d", depth);
    choose(out, "depth", v, "%d levels down take a %d px crop to a %d px bottleneck (a fourth "
           "level learnt slower in the planned number of steps)", depth, tile, tile >> depth);
    snprintf(v, sizeof v, "%d", base);
    choose(out, "base-channels", v, cpu ? "a CPU device: 8 channels at the top, a quarter of the "
           "convolution work of 16" : "a GPU: 16 channels at the top");

    int micro = o.micro_batch, accum = (PLAN_BATCH + micro - 1) / micro;
    snprintf(v, sizeof v, "%d", micro);
    choose(out, "micro-batch", v, "the most crops of %d px that fit %s (the engine's estimate), at "
           "most %d: on the quick start's set 4 x 2 learnt faster than 8 x 1", tile,
           mem_limit ? "--mem-limit" : "the device", PLAN_MICRO_MAX);
    snprintf(v, sizeof v, "%d", accum);
    choose(out, "accum", v, "%d x %d = %d images an optimizer step: the effective batch of at "
           "least %d", micro, accum, micro * accum, PLAN_BATCH);
    if (model.checkpointing)
        choose(out, "checkpointing", "", "the crop does not fit even one image without it");

    /* normalisation: batch statistics only where a micro-batch makes them sound */
    if (batch_norm)
        choose(out, "norm", "batch", "micro-batch %d: batch statistics are sound, and a crop "
               "inside one large region keeps the colour that tells classes apart", micro);
    else
        choose(out, "norm", "group", "micro-batch %d is too few images for batch statistics: "
               "group norm keeps none", micro);

    /* intensities: z-scored by the data set's own statistics */
    char mean[64], std[64];
    snprintf(mean, sizeof mean, "%.3f,%.3f,%.3f", fp->mean[0], fp->mean[1], fp->mean[2]);
    snprintf(std, sizeof std, "%.3f,%.3f,%.3f", fmax(fp->std[0], 1e-3), fmax(fp->std[1], 1e-3),
             fmax(fp->std[2], 1e-3));
    choose(out, "mean", mean, "the data set's mean per channel (%s images)",
           fp->grey ? "grey" : "colour");
    choose(out, "std", std, "its standard deviation: inputs of unit scale");

    /* loss */
    if (fp->mask_kind == TT_MASK_MULTI_LABEL)
        choose(out, "dice-weight", "1", "multi-label masks: BCE + Dice, Dice weighing the small "
               "classes as much as the large");
    /* class index: softmax cross-entropy, train's only loss for it */

    /* sampling: crops centred on foreground where foreground is scarce */
    double fg = fp->foreground_share;
    const char *fgf = fg < 0.1 ? "0.5" : fg < 0.5 ? "0.33" : "0";
    choose(out, "fg-fraction", fgf, "foreground is %.0f%% of the labelled pixels%s", 100 * fg,
           fg < 0.5 ? ": part of the crops centred on it" : ": random crops see enough of it");

    /* optimizer and schedule: the quick start's, which matched PyTorch */
    choose(out, "lr", "1e-2", "AdamW at 1e-2 for a batch of %d (the quick start's recipe)",
           micro * accum);
    choose(out, "schedule", "cosine", "cosine decay to 0 over the run");

    /* how long: a few windows per image */
    int steps = (int)ceil(4.5 * fp->images);
    steps = steps < 150 ? 150 : steps > 3000 ? 3000 : steps;
    snprintf(v, sizeof v, "%d", steps);
    choose(out, "steps", v, "about %d crops per image of the %d (from 150 to 3000 steps)",
           steps * micro * accum / fp->images, fp->images);
    double val = fp->images >= 20 ? 0.1 : 0.2;
    snprintf(v, sizeof v, "%.2g", val);
    choose(out, "val-fraction", v, "%d images: %.0f%% held out for validation", fp->images,
           100 * val);
    snprintf(v, sizeof v, "%d", steps / 3 > 0 ? steps / 3 : 1);
    choose(out, "val-every", v, "three validations over the run; best.safetensors by mean Dice");
    choose(out, "val-overlap", "0.25", "full-resolution validation in overlapping tiles, "
           "blended");

    /* post-processing: components far smaller than any typical region */
    double area = 0;
    for (int c = 0; c < fp->classes; c++)
        if (fp->cls[c].regions && (area == 0 || fp->cls[c].small_area < area))
            area = fp->cls[c].small_area;
    int min_size = (int)(area / 10 / 100) * 100;
    if (min_size > 0) {
        snprintf(v, sizeof v, "%d", min_size);
        choose(out, "min-size", v, "95%% of every class's pixels lie in regions of %.0f px or "
               "more: predicted components under a tenth of that are dropped%s", area,
               fp->mask_kind == TT_MASK_MULTI_LABEL ? "" : " (to background), a stray speck "
               "no longer costs an image's Dice of a class it lacks");
    }
    return NULL;
}

struct cJSON *tt_run_plan_json(const tt_run_plan *p)
{
    const tt_fingerprint *f = &p->fingerprint;
    cJSON *root = cJSON_CreateObject(), *fp = cJSON_AddObjectToObject(root, "fingerprint");
    cJSON_AddNumberToObject(fp, "images", f->images);
    cJSON_AddNumberToObject(fp, "images_read", f->images_read);
    char size[64];
    snprintf(size, sizeof size, "%dx%d", f->median_width, f->median_height);
    cJSON_AddStringToObject(fp, "median_size", size);
    snprintf(size, sizeof size, "%dx%d", f->min_width, f->min_height);
    cJSON_AddStringToObject(fp, "min_size", size);
    snprintf(size, sizeof size, "%dx%d", f->max_width, f->max_height);
    cJSON_AddStringToObject(fp, "max_size", size);
    cJSON_AddBoolToObject(fp, "grey", f->grey);
    cJSON_AddItemToObject(fp, "mean", cJSON_CreateDoubleArray(f->mean, 3));
    cJSON_AddItemToObject(fp, "std", cJSON_CreateDoubleArray(f->std, 3));
    cJSON_AddStringToObject(fp, "labels", f->mask_kind == TT_MASK_MULTI_LABEL ? "multi-label"
                                                                             : "class index");
    cJSON_AddNumberToObject(fp, "classes", f->classes);
    cJSON_AddNumberToObject(fp, "empty_share", f->empty_share);
    cJSON_AddNumberToObject(fp, "ignore_share", f->ignore_share);
    cJSON_AddNumberToObject(fp, "foreground_share", f->foreground_share);
    cJSON_AddNumberToObject(fp, "stride", f->stride);
    cJSON *cls = cJSON_AddArrayToObject(fp, "class_stats");
    for (int c = 0; c < f->classes; c++) {
        const tt_class_fingerprint *k = &f->cls[c];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "pixel_share", k->pixel_share);
        cJSON_AddNumberToObject(o, "images", k->images);
        cJSON_AddNumberToObject(o, "regions", k->regions);
        cJSON_AddNumberToObject(o, "median_area", k->median_area);
        cJSON_AddNumberToObject(o, "min_area", k->min_area);
        cJSON_AddNumberToObject(o, "max_area", k->max_area);
        cJSON_AddNumberToObject(o, "median_extent", k->median_extent);
        cJSON_AddNumberToObject(o, "typical_area", k->typical_area);
        cJSON_AddNumberToObject(o, "typical_extent", k->typical_extent);
        cJSON_AddNumberToObject(o, "small_area", k->small_area);
        cJSON_AddItemToArray(cls, o);
    }
    cJSON *choices = cJSON_AddObjectToObject(root, "choices"), *args = cJSON_AddArrayToObject(root, "args");
    for (int i = 0; i < p->count; i++) {
        const tt_plan_choice *c = &p->choices[i];
        cJSON *o = cJSON_AddObjectToObject(choices, c->option);
        cJSON_AddStringToObject(o, "value", c->value);
        cJSON_AddStringToObject(o, "reason", c->reason);
        char flag[32];
        snprintf(flag, sizeof flag, "--%s", c->option);
        cJSON_AddItemToArray(args, cJSON_CreateString(flag));
        if (c->value[0]) cJSON_AddItemToArray(args, cJSON_CreateString(c->value));
    }
    return root;
}

tt_status tt_run_plan_for(const tt_train_options *o, int max_images, tt_run_plan *out)
{
    tt_status status = NULL;
    tt_dataset *ds = NULL;
    tt_device_info *devices = NULL;
    int count = 0, index = 0;
    tt_dataset_options dopt = {.dir = o->data, .csv_path = o->csv[0] ? o->csv : NULL,
                               .images_dir = o->images[0] ? o->images : NULL};
    TT_CHECK(tt_dataset_format_parse(o->format, &dopt.format));
    TT_CHECK(tt_dataset_open(&dopt, &ds));
    tt_fingerprint fp;
    TT_CHECK(tt_fingerprint_compute(ds, max_images, &fp));
    TT_CHECK(tt_devices_list(&devices, &count));
    /* a list (one device per rank under mpirun): every rank plans for the
     * first, so the ranks train one recipe */
    char first[TT_OPT_STRING_MAX];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(o->device, ","), o->device);
    TT_CHECK(tt_device_select(first[0] ? first : NULL, &index));
    TT_CHECK(tt_run_plan_make(&fp, &devices[index], o->mem_limit, out));
cleanup:
    free(devices);
    tt_dataset_destroy(ds);
    return status;
}

/* A plain-UNet choice a ResNet encoder does not take. */
static int resnet_skips(const char *option)
{
    static const char *const skipped[] = {"base-channels", "depth", "norm", "mean", "std"};
    for (size_t i = 0; i < sizeof skipped / sizeof *skipped; i++)
        if (strcmp(option, skipped[i]) == 0) return 1;
    return 0;
}

static tt_status apply_one(tt_train_options *o, const char *option, const char *value,
                           const char *where)
{
    if (strncmp(o->model, "unet-resnet", 11) == 0 && resnet_skips(option)) return NULL;
    return tt_opt_set(tt_train_option_table, tt_train_option_count, o, option,
                      value[0] ? value : NULL, where);
}

tt_status tt_run_plan_apply(const tt_run_plan *p, tt_train_options *o)
{
    for (int i = 0; i < p->count; i++)
        TT_TRY(apply_one(o, p->choices[i].option, p->choices[i].value, "the plan"));
    return NULL;
}

tt_status tt_run_plan_read(const char *path, struct cJSON **out)
{
    unsigned char *text = NULL;
    size_t size = 0;
    *out = NULL;
    TT_TRY(tt_probe_read_file(path, &text, &size));
    cJSON *root = cJSON_ParseWithLength((const char *)text, size);
    free(text);
    if (!cJSON_IsArray(cJSON_GetObjectItem(root, "args"))) {
        cJSON_Delete(root);
        return tt_error_new(TT_ERR_FORMAT, "%s: no \"args\" list; write it with `tiletrain plan`",
                            path);
    }
    *out = root;
    return NULL;
}

tt_status tt_run_plan_apply_file(const char *path, tt_train_options *o)
{
    cJSON *root = NULL;
    TT_TRY(tt_run_plan_read(path, &root));
    tt_status status = NULL;
    cJSON *args = cJSON_GetObjectItem(root, "args");
    int n = cJSON_GetArraySize(args);
    for (int i = 0; i < n && !status; i++) {
        cJSON *flag = cJSON_GetArrayItem(args, i), *next = cJSON_GetArrayItem(args, i + 1);
        if (!cJSON_IsString(flag) || strncmp(flag->valuestring, "--", 2) != 0) {
            status = tt_error_new(TT_ERR_FORMAT, "%s: args[%d] is not a --flag", path, i);
            break;
        }
        int has_value = cJSON_IsString(next) && strncmp(next->valuestring, "--", 2) != 0;
        char where[64];
        snprintf(where, sizeof where, "args[%d]", i);
        status = apply_one(o, flag->valuestring + 2, has_value ? next->valuestring : "", where);
        if (status) status = tt_error_prefix(status, "%s", path);
        i += has_value;
    }
    cJSON_Delete(root);
    return status;
}

tt_status tt_run_plan_write(const tt_run_plan *p, const char *path)
{
    cJSON *json = tt_run_plan_json(p);
    char *text = json ? cJSON_Print(json) : NULL;
    tt_status status = NULL;
    if (!text) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    } else {
        size_t len = strlen(text);
        text[len] = '\n'; /* cJSON's NUL: the file ends with a newline */
        status = tt_file_save_atomic(path, text, len + 1);
    }
    free(text);
    cJSON_Delete(json);
    return status;
}

void tt_run_plan_print_args(const tt_run_plan *p, FILE *f)
{
    for (int i = 0; i < p->count; i++)
        fprintf(f, " --%s%s%s", p->choices[i].option, p->choices[i].value[0] ? " " : "",
                p->choices[i].value);
}
