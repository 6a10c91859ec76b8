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

#include "core/alloc.h"
#include "core/fs.h"
#include "core/options.h"
#include "core/status.h"
#include "data/raster_fingerprint.h"
#include "data/dataset.h"
#include "data/dataset_probe.h"
#include "train/fit.h"
#include "backend/device_match.h"
#include "train/recipe.h"

#define PLAN_BATCH 8          /* images per optimizer step: the quick start's 4 x 2 */
#define PLAN_MICRO_MAX 4      /* on the quick start's set 4 x 2 learnt faster than 8 x 1
                                 (docs/guide.md, "Planned runs") */
#define PLAN_MIN_TILE 64
#define PLAN_MAX_TILE 256     /* larger crops cost steps/s on the small cards we serve */
#define PLAN_MAX_TILE_CPU 128 /* on a CPU 256 px is 4x the work of 128 for the same Dice (guide) */

/* What the rules share: the data set, the device, the options being
 * planned (the given ones kept) and the plan being written. */
typedef struct plan_ctx {
    const tt_fingerprint *fp;
    const tt_device_info *device;
    tt_train_options *opt;
    const unsigned char *given;  /* train's table's indices; NULL: none given */
    tt_run_plan *plan;
    int cpu, resnet;
    int wanted_tile;             /* the tile rule's, before memory halved it */
} plan_ctx;

/* Options another flag stands for: given that one, the plan leaves them. */
static const char *const stands_for[][2] = {
    {"steps", "epochs"}, {"val-fraction", "val-list"}, {"augment", "no-augment"},
};

/* 1 when the flags gave `option`, or a flag that stands for it. */
static int flag_gave(const unsigned char *given, const char *option)
{
    int i = tt_opt_index(tt_train_option_table, tt_train_option_count, option);
    if (!given || i < 0) return 0;
    if (given[i]) return 1;
    for (size_t k = 0; k < sizeof stands_for / sizeof *stands_for; k++)
        if (strcmp(option, stands_for[k][0]) == 0 &&
            given[tt_opt_index(tt_train_option_table, tt_train_option_count, stands_for[k][1])])
            return 1;
    return 0;
}

static int given(const plan_ctx *c, const char *option) { return flag_gave(c->given, option); }

/* Records the choice of `option`, its value as train's option table
 * writes it from the options (so plan.json's args parse back to it). */
static void choose(plan_ctx *c, const char *option, const char *fmt, ...)
{
    tt_run_plan *p = c->plan;
    int i = tt_opt_index(tt_train_option_table, tt_train_option_count, option);
    if (p->count == TT_PLAN_MAX_CHOICES || i < 0) return;
    tt_plan_choice *ch = &p->choices[p->count++];
    snprintf(ch->option, sizeof ch->option, "%s", option);
    const tt_opt *o = &tt_train_option_table[i];
    if (o->kind == TT_OPT_FLAG) ch->value[0] = '\0';
    else tt_opt_format(o, c->opt, ch->value, sizeof ch->value);
    va_list args;
    va_start(args, fmt);
    vsnprintf(ch->reason, sizeof ch->reason, fmt, args);
    va_end(args);
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

static int small_side(const tt_fingerprint *fp)
{
    return fp->min_width < fp->min_height ? fp->min_width : fp->min_height;
}

/* tile: at least a quarter of a typical region's span (crops centred on
 * foreground then see its inside and its border), a power of two from 64
 * to 256 (128 on a CPU), and no larger than the smallest image */
static tt_status rule_tile(plan_ctx *c)
{
    int most = c->cpu ? PLAN_MAX_TILE_CPU : PLAN_MAX_TILE;
    /* rasters: no region traced; a scene's crops as large as the device takes */
    double extent = c->fp->raster_bands ? 4.0 * most : class_median(c->fp, 1);
    int tile = PLAN_MIN_TILE;
    while (tile < most && tile < extent / 4) tile *= 2;
    while (tile > small_side(c->fp)) tile /= 2;
    c->wanted_tile = tile;
    if (given(c, "tile")) return NULL;
    c->opt->tile[0] = c->opt->tile[1] = tile;
    return NULL;
}

/* depth and width: three levels (a fourth trained slower on the quick
 * start's set), fewer for small crops; half the channels on a CPU */
static void size_network(plan_ctx *c)
{
    int tile = c->opt->tile[0] < c->opt->tile[1] ? c->opt->tile[0] : c->opt->tile[1];
    if (c->resnet) return; /* a ResNet encoder has its own */
    if (!given(c, "depth")) c->opt->depth = tile >= 64 ? 3 : tile >= 32 ? 2 : 1;
    if (!given(c, "base-channels")) c->opt->base_channels = c->cpu ? 8 : 16;
}

/* The fit of a trial: *why NULL when it fits (o->micro_batch then the most
 * that do), else the fit's out-of-memory message (the caller's to free);
 * other errors returned. */
static tt_status try_fit(const plan_ctx *c, tt_train_options *o, tt_status *why)
{
    *why = NULL;
    tt_model_spec model;
    TT_TRY(tt_recipe_model(o, c->fp->classes, &model));
    if (c->fp->raster_bands) model.in_channels = c->fp->raster_bands;
    if (model.precision == TT_PRECISION_AUTO) model.precision = TT_PRECISION_FP32; /* the most */
    int planes = c->fp->mask_kind == TT_MASK_MULTI_LABEL ? c->fp->classes : 1;
    tt_status s = tt_fit_memory_silently(c->device, o, &model, c->fp->mask_kind, planes);
    o->checkpointing = model.checkpointing;
    if (s && tt_status_code(s) != TT_ERR_OUT_OF_MEMORY) return s;
    *why = s;
    return NULL;
}

/* norm, micro-batch, accum and checkpointing from the engine's own memory
 * estimate: batch norm where 4 crops fit (its statistics need them), else
 * group norm, fitted again with it; a tile not even one crop of fits
 * (checkpointing included) is halved, down to 16 px, so the plan always
 * fits.  What the flags gave stays: a given micro-batch is only checked. */
static tt_status rule_memory(plan_ctx *c)
{
    tt_train_options *opt = c->opt;
    int micro_given = given(c, "micro-batch"), accum_given = given(c, "accum");
    int micro_auto = micro_given && opt->micro_batch == 0; /* --micro-batch auto: --batch's */
    int norm_free = !given(c, "norm") && !c->resnet;
    int batch = micro_auto ? opt->batch : PLAN_MICRO_MAX;
    tt_train_options o;
    for (;;) {
        tt_status why = NULL;
        o = *opt;
        o.micro_batch = micro_given ? opt->micro_batch : 0;
        o.batch = batch;
        if (norm_free) {
            o.norm = TT_NORM_BATCH;
            tt_status s = try_fit(c, &o, &why); /* an error here is group norm's to answer */
            int sound = !s && !why && o.micro_batch >= 4;
            tt_status_free(s);
            tt_status_free(why);
            if (sound) break;
            o = *opt;
            o.micro_batch = micro_given ? opt->micro_batch : 0;
            o.batch = batch;
            o.norm = TT_NORM_GROUP;
        }
        TT_TRY(try_fit(c, &o, &why));
        if (!why) break;
        int tile = opt->tile[0];
        if (given(c, "tile") || tile <= 16 || c->resnet || (micro_given && !micro_auto))
            return tt_error_prefix(why, "no configuration fits: not even one %d px crop with "
                                   "checkpointing", tile); /* the fit's message names what fits */
        tt_status_free(why);
        opt->tile[0] = opt->tile[1] = tile / 2;
        size_network(c);
    }
    opt->norm = o.norm;
    opt->checkpointing = o.checkpointing;
    opt->micro_batch = o.micro_batch;
    if (micro_auto && !accum_given) opt->accum = o.accum; /* ceil(--batch / micro-batch) */
    else if (!accum_given) /* the effective batch of PLAN_BATCH */
        opt->accum = (PLAN_BATCH + opt->micro_batch - 1) / opt->micro_batch;
    return NULL;
}

/* The choices of the network and memory rules, with their reasons. */
static void choose_network(plan_ctx *c)
{
    tt_train_options *opt = c->opt;
    int tile = opt->tile[0];
    const char *limit = opt->mem_limit ? "--mem-limit" : "the device";
    if (!given(c, "tile")) {
        char fits[96] = "";
        if (tile < c->wanted_tile)
            snprintf(fits, sizeof fits, "; %d px did not fit %s, halved to %d", c->wanted_tile,
                     limit, tile);
        double extent = class_median(c->fp, 1);
        if (c->fp->raster_bands)
            choose(c, "tile", "raster scenes (regions not traced): the largest crop for this "
                   "device, %d px, for context%s", c->wanted_tile, fits);
        else if (extent > 0)
            choose(c, "tile", "a typical region spans %.0f px: a %d px crop sees a quarter of it "
                   "or more, inside or at its border (from %d to %d px on this device)%s", extent,
                   c->wanted_tile, PLAN_MIN_TILE, c->cpu ? PLAN_MAX_TILE_CPU : PLAN_MAX_TILE, fits);
        else
            choose(c, "tile", "no labelled region to size it by: %d px%s", c->wanted_tile, fits);
    }
    if (!c->resnet && !given(c, "depth"))
        choose(c, "depth", "%d levels down take a %d px crop to a %d px bottleneck (a fourth "
               "level learnt slower in the planned number of steps)", opt->depth, tile,
               tile >> opt->depth);
    if (!c->resnet && !given(c, "base-channels"))
        choose(c, "base-channels", c->cpu ? "a CPU device: 8 channels at the top, a quarter of "
               "the convolution work of 16" : "a GPU: 16 channels at the top");
    if (!given(c, "micro-batch"))
        choose(c, "micro-batch", "the most crops of %dx%d px that fit %s (the engine's "
               "estimate), at most %d: on the quick start's set 4 x 2 learnt faster than 8 x 1",
               opt->tile[0], opt->tile[1], limit, PLAN_MICRO_MAX);
    if (!given(c, "accum"))
        choose(c, "accum", "%d x %d = %d images an optimizer step: the effective batch of at "
               "least %d", opt->micro_batch, opt->accum, opt->micro_batch * opt->accum,
               PLAN_BATCH);
    if (opt->checkpointing && !given(c, "checkpointing"))
        choose(c, "checkpointing", "the crop does not fit even one image without it");
    if (!c->resnet && !given(c, "norm")) {
        if (opt->norm == TT_NORM_BATCH)
            choose(c, "norm", "micro-batch %d: batch statistics are sound, and a crop inside "
                   "one large region keeps the colour that tells classes apart", opt->micro_batch);
        else
            choose(c, "norm", "micro-batch %d is too few images for batch statistics: group "
                   "norm keeps none", opt->micro_batch);
    }
}

/* intensities: z-scored by the data set's own statistics (a ResNet
 * encoder takes ImageNet's, its pretraining's) */
static tt_status rule_intensity(plan_ctx *c)
{
    const tt_fingerprint *fp = c->fp;
    if (c->resnet || fp->raster_bands) return NULL; /* rasters: each band's own statistics */
    /* three decimals: what plan.json's args say is what the run takes */
    if (!given(c, "mean")) {
        for (int k = 0; k < 3; k++) c->opt->mean[k] = (float)(round(fp->mean[k] * 1000) / 1000);
        choose(c, "mean", "the data set's mean per channel (%s images)", fp->grey ? "grey" : "colour");
    }
    if (!given(c, "std")) {
        for (int k = 0; k < 3; k++)
            c->opt->std[k] = (float)(round(fmax(fp->std[k], 1e-3) * 1000) / 1000);
        choose(c, "std", "its standard deviation: inputs of unit scale");
    }
    return NULL;
}

/* loss: multi-label masks add soft Dice per image and class to BCE; class
 * index keeps cross-entropy alone (`--loss auto`) */
static tt_status rule_loss(plan_ctx *c)
{
    if (c->fp->mask_kind != TT_MASK_MULTI_LABEL || given(c, "loss")) return NULL;
    snprintf(c->opt->loss, sizeof c->opt->loss, "bce+dice");
    choose(c, "loss", "multi-label masks: per-class BCE + soft Dice per image and class, Dice "
           "weighing the small classes as much as the large");
    return NULL;
}

/* augmentation: every transform at its defaults but elastic (grid
 * distortion bends alike, at less cost) */
static tt_status rule_augment(plan_ctx *c)
{
    if (given(c, "augment")) return NULL;
    if (c->fp->raster_bands) {
        snprintf(c->opt->augment, sizeof c->opt->augment, "flip,rot90");
        choose(c, "augment", "raster bands: flips and quarter turns (the colour transforms and "
               "warps are of 8-bit RGB, and a raster crop leaves them out)");
        return NULL;
    }
    snprintf(c->opt->augment, sizeof c->opt->augment,
             "default,affine,grid,gamma,hsv,noise,blur");
    choose(c, "augment", "flips and quarter turns, shift-scale-rotate, grid distortion and the "
           "colour transforms at their defaults: on the quick start's set they raised the "
           "validation Dice of the planned run over flips and jitter alone (docs/guide.md, "
           "\"Augmentation\")");
    return NULL;
}

/* sampling: crops centred on foreground where foreground is scarce */
static tt_status rule_sampling(plan_ctx *c)
{
    double fg = c->fp->foreground_share;
    if (given(c, "fg-fraction")) return NULL;
    c->opt->fg_fraction = fg < 0.1 ? 0.5 : fg < 0.5 ? 0.33 : 0;
    choose(c, "fg-fraction", "foreground is %.0f%% of the labelled pixels%s", 100 * fg,
           fg >= 0.5 ? ": random crops see enough of it"
           : c->fp->raster_bands ? ": part of the crops seek it (the mask read at up to 8 places)"
                                 : ": part of the crops centred on it");
    return NULL;
}

/* optimizer and schedule: the quick start's, which matched PyTorch */
static tt_status rule_optimizer(plan_ctx *c)
{
    if (!given(c, "lr")) {
        c->opt->lr = 1e-2;
        choose(c, "lr", "AdamW at 1e-2 for a batch of %d (the quick start's recipe)",
               c->opt->micro_batch * c->opt->accum);
    }
    if (!given(c, "schedule")) {
        snprintf(c->opt->schedule, sizeof c->opt->schedule, "cosine");
        choose(c, "schedule", "cosine decay to 0 over the run");
    }
    return NULL;
}

/* how long: a few windows per image; validation three times over it */
static tt_status rule_length(plan_ctx *c)
{
    const tt_fingerprint *fp = c->fp;
    tt_train_options *o = c->opt;
    if (!given(c, "steps")) {
        int steps = (int)ceil(4.5 * fp->images);
        o->steps = steps < 150 ? 150 : steps > 3000 ? 3000 : steps;
        choose(c, "steps", "about %d crops per image of the %d (from 150 to 3000 steps)",
               o->steps * o->micro_batch * o->accum / fp->images, fp->images);
    }
    if (fp->raster_bands) { /* rasters: held out only when asked */
        if (!given(c, "val-fraction")) o->val_fraction = 0;
        if (!given(c, "val-every")) o->val_every = 0;
        if (!given(c, "val-fraction"))
            choose(c, "val-fraction", "raster pairs: no held-out validation by default (give "
                   "--val-fraction X: whole scenes held out, or blocks of a single scene)");
        return NULL;
    }
    if (!given(c, "val-fraction")) {
        o->val_fraction = fp->images >= 20 ? 0.1 : 0.2;
        choose(c, "val-fraction", "%d images: %.0f%% held out for validation", fp->images,
               100 * o->val_fraction);
    }
    if (!given(c, "val-every") && o->steps > 0) {
        o->val_every = o->steps / 3 > 0 ? o->steps / 3 : 1;
        choose(c, "val-every", "three validations over the run; best.safetensors by mean Dice");
    }
    if (!given(c, "val-overlap")) {
        o->val_overlap = 0.25;
        choose(c, "val-overlap", "full-resolution validation in overlapping tiles, blended");
    }
    return NULL;
}

/* post-processing: components far smaller than any typical region */
static tt_status rule_post(plan_ctx *c)
{
    const tt_fingerprint *fp = c->fp;
    double area = 0;
    for (int k = 0; k < fp->classes; k++)
        if (fp->cls[k].regions && (area == 0 || fp->cls[k].small_area < area))
            area = fp->cls[k].small_area;
    int min_size = (int)(area / 10 / 100) * 100;
    if (min_size <= 0 || given(c, "min-size")) return NULL;
    c->opt->min_size = min_size;
    choose(c, "min-size", "95%% of every class's pixels lie in regions of %.0f px or more: "
           "predicted components under a tenth of that are dropped%s", area,
           fp->mask_kind == TT_MASK_MULTI_LABEL ? "" : " (to background), a stray speck no "
           "longer costs an image's Dice of a class it lacks");
    return NULL;
}

static tt_status rule_network(plan_ctx *c)
{
    size_network(c);
    TT_TRY(rule_memory(c));
    choose_network(c);
    return NULL;
}

/* The rules in the order they run: each sees what those before it chose. */
static tt_status (*const rules[])(plan_ctx *) = {
    rule_tile, rule_network, rule_intensity, rule_loss, rule_augment, rule_sampling,
    rule_optimizer, rule_length, rule_post,
};

/* Every option a plan may choose (the rules' choose() calls). */
static const char *const planned_options[] = {
    "tile", "depth", "base-channels", "micro-batch", "accum", "checkpointing", "norm", "mean",
    "std", "loss", "augment", "fg-fraction", "lr", "schedule", "steps", "val-fraction", "val-every",
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

tt_status tt_run_plan_make(const tt_fingerprint *fp, const tt_device_info *device,
                           tt_train_options *opt, const unsigned char *given_options,
                           tt_run_plan *out)
{
    memset(out, 0, sizeof *out);
    out->fingerprint = *fp;
    out->device = *device;
    if (fp->images < 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "the data set has %d usable image%s: a plan needs at least 2 (one "
                            "to train on, one to validate); add images",
                            fp->images, fp->images == 1 ? "" : "s");
    if (small_side(fp) < 16)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "the smallest image is %dx%d: a plan needs images of at least 16x16",
                            fp->min_width, fp->min_height);
    plan_ctx c = {.fp = fp, .device = device, .opt = opt, .given = given_options, .plan = out,
                  .cpu = strcmp(device->type, "CPU") == 0, .resnet = opt->model != TT_MODEL_UNET};
    tt_train_options start = *opt;
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        tt_status s = rules[i](&c);
        if (s) {
            *opt = start; /* nothing half planned */
            return s;
        }
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
    if (f->raster_bands) cJSON_AddNumberToObject(fp, "raster_bands", f->raster_bands);
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

tt_status tt_run_plan_device(const tt_train_options *o, tt_device_info *out)
{
    tt_backend_request request;
    /* a list (one device per rank under mpirun): the plan is the first's */
    char first[TT_OPT_STRING_MAX];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(o->device, ","), o->device);
    TT_TRY(tt_error_prefix(tt_backend_choose(tt_backend_choice_name(o->backend), first, &request),
                           "--backend"));
    tt_device_info *devices = NULL;
    int count = 0;
    TT_TRY(tt_backend_devices(request.kind, &devices, &count));
    int index = tt_device_match(devices, count, request.device, 0);
    tt_status status = NULL;
    if (index < 0)
        status = tt_device_match_error(devices, count, "--device", request.device,
                                       tt_backend_kind_name(request.kind));
    else
        *out = devices[index];
    free(devices);
    return status;
}

/* A raster set's fingerprint (--bands and --mask-nodata as given). */
static tt_status raster_fingerprint(const tt_train_options *o, tt_fingerprint *fp)
{
    tt_raster_set *rasters = NULL;
    tt_raster_stats *stats = tt_malloc(sizeof *stats);
    if (!stats) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status status = tt_raster_set_open_flags(o->data, o->bands, o->mask_nodata, &rasters);
    if (!status) status = tt_raster_stats_of_set(rasters, stats);
    if (!status) status = tt_raster_fingerprint(rasters, stats, fp);
    tt_raster_set_destroy(rasters);
    free(stats);
    return status;
}

tt_status tt_run_plan_for(tt_train_options *o, const unsigned char *given, int max_images,
                          tt_run_plan *out)
{
    tt_status status = NULL;
    tt_dataset *ds = NULL;
    tt_fingerprint fp;
    tt_dataset_options dopt = {.dir = o->data, .csv_path = o->csv[0] ? o->csv : NULL,
                               .images_dir = o->images[0] ? o->images : NULL,
                               .format = o->format};
    if (o->format == TT_DATASET_RASTER ||
        (o->format == TT_DATASET_AUTO && tt_raster_set_detect(o->data))) {
        TT_CHECK(raster_fingerprint(o, &fp));
    } else {
        TT_CHECK(tt_dataset_open(&dopt, &ds));
        TT_CHECK(tt_fingerprint_compute(ds, max_images, &fp));
    }
    tt_device_info device;
    TT_CHECK(tt_run_plan_device(o, &device));
    TT_CHECK(tt_run_plan_make(&fp, &device, o, given, out));
cleanup:
    tt_dataset_destroy(ds);
    return status;
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

/* A plain-UNet choice a ResNet encoder does not take. */
static int resnet_skips(const char *option)
{
    static const char *const skipped[] = {"base-channels", "depth", "norm", "mean", "std"};
    for (size_t i = 0; i < sizeof skipped / sizeof *skipped; i++)
        if (strcmp(option, skipped[i]) == 0) return 1;
    return 0;
}

tt_status tt_run_plan_apply_file(const char *path, tt_train_options *o, const unsigned char *given)
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
        const char *option = flag->valuestring + 2;
        i += has_value;
        if (flag_gave(given, option)) continue; /* the flag given wins */
        if (o->model != TT_MODEL_UNET && resnet_skips(option)) continue;
        char where[64], loss[64];
        snprintf(where, sizeof where, "args[%d]", i - has_value);
        const char *value = has_value ? next->valuestring : "1";
        if (strcmp(option, "dice-weight") == 0) { /* a plan written before --loss */
            if (flag_gave(given, "loss")) continue;
            double weight = atof(value);
            if (weight > 0) snprintf(loss, sizeof loss, "bce+%.9g*dice", weight);
            else snprintf(loss, sizeof loss, "bce");
            option = "loss", value = loss;
        }
        status = tt_opt_set(tt_train_option_table, tt_train_option_count, o, option, value, where);
        if (status) status = tt_error_prefix(status, "%s", path);
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
