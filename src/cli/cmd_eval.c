/*
 * tiletrain eval: a checkpoint's per-class Dice and IoU on a data set,
 * predicted at full resolution with the sliding window, as a table or JSON.
 * The same scoring as `train --val-every` (src/train/validate.c).  A raster
 * set (DIR/images/NAME.tif + DIR/masks/NAME.tif) is scored scene by scene,
 * streamed (train/validate_raster.h), or only the regions a raster run's
 * OUT/validation.txt names (--val-list).
 * tiletrain postprocess: the same predictions, searched for each class's
 * threshold and minimum size (infer/pp_search.h), written into the
 * checkpoint.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/options.h"
#include "core/status.h"
#include "data/dataset.h"
#include "data/raster_set.h"
#include "data/sampler.h"
#include "data/tilecache.h"
#include "infer/model_load.h"
#include "infer/pp_search.h"
#include "io/safetensors.h"
#include "ops/conv_algo.h"
#include "train/validate.h"
#include "train/validate_raster.h"

typedef struct eval_options {
    char checkpoint[TT_OPT_STRING_MAX];
    char data[TT_OPT_STRING_MAX];
    char format[TT_OPT_STRING_MAX];
    char csv[TT_OPT_STRING_MAX];
    char images[TT_OPT_STRING_MAX];
    char cache_dir[TT_OPT_STRING_MAX];
    int tile[2];
    double overlap;
    char blend[TT_OPT_STRING_MAX];
    double threshold;
    int min_size;
    int batch;
    char device[TT_OPT_STRING_MAX];
    char backend[TT_OPT_STRING_MAX];
    char algo[TT_OPT_STRING_MAX];
    char precision[TT_OPT_STRING_MAX];
    int json;
    int tta;                    /* tt_tta_kind */
    int threshold_given, min_size_given; /* else the checkpoint's per class, if it has them */
    char val_list[TT_OPT_STRING_MAX]; /* only these images */
    /* postprocess: search each class's threshold and minimum size, and
     * write them into the checkpoint (or `out`) */
    int search;
    char out[TT_OPT_STRING_MAX];
    int raw_weights;            /* --weights raw */
    int mask_nodata;            /* raster sets: a mask value ignored besides 255; -1 */
} eval_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(eval_options, field), meta, help, lo, hi, NULL}

static const tt_opt option_table[] = {
    OPT("checkpoint", TT_OPT_STRING, checkpoint, "FILE", "trained weights (safetensors)", 1, 0),
    OPT("data", TT_OPT_STRING, data, "DIR", "data set folder with masks", 1, 0),
    {"format", TT_OPT_CHOICE, offsetof(eval_options, format), "F", "data set format (default: detected)",
     1, 0, "auto|folder|kaggle-rle|raster"},
    OPT("csv", TT_OPT_STRING, csv, "FILE", "kaggle-rle: the CSV (default DIR/train.csv)", 1, 0),
    OPT("images", TT_OPT_STRING, images, "DIR", "folder of the images (default by format)", 1, 0),
    OPT("cache-dir", TT_OPT_STRING, cache_dir, "DIR", "tile cache (default ~/.cache/tiletrain/tiles)", 1, 0),
    OPT("tile", TT_OPT_SIZE2, tile, "HxW", "sliding-window tile, multiples of 2^depth (default 256x256)", 1, 0),
    OPT("overlap", TT_OPT_DOUBLE, overlap, "X", "overlap of neighbouring tiles, 0 to 0.9 (default 0.5)", 0, 0.9),
    {"blend", TT_OPT_CHOICE, offsetof(eval_options, blend), "KIND", "gaussian (default) or mean", 1, 0,
     "gaussian|mean"},
    OPT("threshold", TT_OPT_DOUBLE, threshold, "X", "multi-label: probability threshold, every class (default: the checkpoint's per class where its training searched them, else 0.5)", 0, 1),
    OPT("min-size", TT_OPT_INT, min_size, "N", "remove predicted components under N pixels first, as predict does (class index: they become background), every class (default: the checkpoint's per class, else 0)", 0, 1e9),
    OPT("batch", TT_OPT_INT, batch, "N", "tiles per forward pass (default 2)", 1, 256),
    {"tta", TT_OPT_ENUM, offsetof(eval_options, tta), "KIND", TT_TTA_HELP " (default none)", 1, 0, TT_TTA_CHOICES},
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name", 1, 0),
    {"backend", TT_OPT_CHOICE, offsetof(eval_options, backend), "NAME", TT_BACKEND_HELP, 1, 0,
     TT_BACKEND_CHOICES},
    {"algo", TT_OPT_CHOICE, offsetof(eval_options, algo), "NAME", TT_CONV_ALGO_HELP, 1, 0,
     TT_CONV_ALGO_CHOICES},
    {"precision", TT_OPT_CHOICE, offsetof(eval_options, precision), "P", "what the forward keeps between layers, stored in fp32 (default), fp16 or bf16 (as train --precision)", 1, 0,
     "fp32|fp16|bf16"},
    {"weights", TT_OPT_ENUM, offsetof(eval_options, raw_weights), "KIND", "ema (the moving average, where the checkpoint's run kept one: train --ema) or raw (default ema)", 1, 0, "ema|raw"},
    OPT("val-list", TT_OPT_STRING, val_list, "FILE", "only the images named in FILE, one per line (a run's OUT/validation.txt; of a raster run: its held-out scenes or blocks)", 1, 0),
    OPT("mask-nodata", TT_OPT_INT, mask_nodata, "V", "raster sets: a mask value ignored besides 255 (as train --mask-nodata)", 0, 254),
    OPT("json", TT_OPT_FLAG, json, NULL, "print the metrics as JSON", 1, 0),
    OPT("out", TT_OPT_STRING, out, "FILE", "postprocess: write the checkpoint with the choices there (default: the checkpoint itself)", 1, 0),
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain eval --checkpoint FILE --data DIR [options]\n"
           "\n"
           "Predicts every image of the data set at full resolution and prints each\n"
           "class's Dice and IoU (mean over images; an empty mask predicted empty\n"
           "scores 1) and their means.\n"
           "\n"
           "example:\n"
           "  tiletrain eval --checkpoint runs/latest/best.safetensors --data clouds --json\n"
           "  tiletrain eval --checkpoint runs/s2/last.safetensors --data scenes \\\n"
           "      --val-list runs/s2/validation.txt     # a raster run's held-out regions\n"
           "\n"
           "A raster set (DIR/images/NAME.tif, DIR/masks/NAME.tif) is read with the\n"
           "checkpoint's bands and normalisation and scored scene by scene (each a\n"
           "region of --val-list), streamed a row of tiles at a time, whatever its size.\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

static void help_postprocess(void)
{
    printf("usage: tiletrain postprocess --checkpoint FILE --data DIR [--val-list FILE] [options]\n"
           "\n"
           "Predicts the images at full resolution (all, or those --val-list names: a\n"
           "training run's OUT/validation.txt) and searches each class's probability\n"
           "threshold (multi-label) and minimum component size by the competition's\n"
           "Dice (an empty truth and an empty prediction score 1), against --threshold\n"
           "and --min-size (0.5 and 0 by default); prints the table and writes the\n"
           "choices into the checkpoint's metadata (or --out), which predict and eval\n"
           "take unless --threshold or --min-size is given.  Training runs the same\n"
           "search at every validation.\n"
           "\n"
           "example:\n"
           "  tiletrain postprocess --checkpoint runs/a/best.safetensors --data clouds \\\n"
           "      --val-list runs/a/validation.txt\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

/* names: the data set's (ds), else these (NULL: "?"). */
static void print_table(const tt_metrics *m, const tt_dataset *ds, const char *const *names)
{
    printf("%-20s %8s %8s %10s %10s\n", "class", "dice", "iou", "dice(all)", "iou(all)");
    for (int c = 0; c < m->classes; c++)
        printf("%-20s %8.4f %8.4f %10.4f %10.4f\n",
               ds ? (c < tt_dataset_classes(ds) ? tt_dataset_class_name(ds, c) : "?")
                  : names ? names[c] : "?",
               tt_metrics_dice(m, c), tt_metrics_iou(m, c), tt_metrics_global_dice(m, c),
               tt_metrics_global_iou(m, c));
    printf("%-20s %8.4f %8.4f   (%d images)\n", "mean", tt_metrics_mean_dice(m),
           tt_metrics_mean_iou(m), m->images);
}

/* postprocess: the search's table, and its choices into the checkpoint. */
static tt_status write_search(const eval_options *o, const tt_infer_model *model,
                              const tt_dataset *ds, const tt_pp_search *search)
{
    int classes = model->spec.classes;
    tt_pp_choice *choices = tt_calloc((size_t)classes, sizeof *choices);
    if (!choices) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "postprocess: out of host memory");
    double mean, was;
    tt_pp_search_result(search, choices, &mean, &was);
    printf("%-20s %9s %8s %8s %12s %8s\n", "class", "threshold", "min size", "dice",
           "unsearched", "gain");
    for (int c = 0; c < classes; c++)
        printf("%-20s %9.2f %8d %8.4f %12.4f %+8.4f\n",
               c < tt_dataset_classes(ds) ? tt_dataset_class_name(ds, c) : "?",
               choices[c].threshold, choices[c].min_size, choices[c].dice,
               choices[c].default_dice, choices[c].dice - choices[c].default_dice);
    printf("%-20s %9s %8s %8.4f %12.4f %+8.4f   (competition Dice)\n", "mean", "", "", mean, was,
           mean - was);
    printf("the search took %.2f s on the host (the predictions not counted)\n",
           tt_pp_search_seconds(search));
    char *json = tt_pp_choices_json(choices, classes);
    free(choices);
    if (!json) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "postprocess: out of host memory");
    tt_safetensors *f = NULL;
    const char *path = o->out[0] ? o->out : o->checkpoint;
    tt_status status = tt_safetensors_open(o->checkpoint, &f);
    if (!status) status = tt_safetensors_copy_with(f, "postprocess", json, path);
    tt_safetensors_close(f);
    free(json);
    if (!status) printf("written to %s: predict and eval take these unless --threshold or "
                        "--min-size is given\n", path);
    return status;
}

/* A spoiled tile-cache entry, rebuilt (tilecache.h). */
static void warn_line(void *ctx, const char *message)
{
    (void)ctx;
    fprintf(stderr, "tiletrain: warning: %s\n", message);
}

/* A raster run's OUT/validation.txt: "NAME X0 Y0 W H" lines (# comments)
 * into regions of the set.  Errors name the file and line. */
static tt_status read_regions(const char *path, tt_raster_set *set, tt_raster_region **out,
                              int *count)
{
    *out = NULL, *count = 0;
    FILE *f = fopen(path, "r");
    if (!f) return tt_error_new(TT_ERR_IO, "--val-list %s: cannot read it", path);
    tt_status status = tt_read_fault("the validation list", path);
    char line[1200], name[1024];
    int capacity = 0;
    for (int number = 1; !status && fgets(line, sizeof line, f); number++) {
        if (line[0] == '#' || line[0] == '\n') continue;
        tt_raster_region r = {0};
        if (sscanf(line, "%1023s %d %d %d %d", name, &r.x0, &r.y0, &r.width, &r.height) != 5) {
            status = tt_error_new(TT_ERR_FORMAT, "%s:%d: expected NAME X0 Y0 W H (a raster "
                                  "run's validation.txt)", path, number);
            break;
        }
        r.scene = -1;
        for (int k = 0; k < tt_raster_set_count(set); k++)
            if (strcmp(tt_raster_set_name(set, k), name) == 0) r.scene = k;
        const tt_raster_pair_info *in =
            r.scene >= 0 ? tt_raster_pair_get_info(tt_raster_set_pair(set, r.scene)) : NULL;
        if (!in || r.x0 < 0 || r.y0 < 0 || r.width < 1 || r.height < 1 ||
            r.x0 + r.width > in->width || r.y0 + r.height > in->height) {
            status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s:%d: %s is %s", path, number, name,
                                  in ? "a region outside the scene" : "no scene of the set");
            break;
        }
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 16;
            tt_raster_region *grown = tt_realloc(*out, sizeof *grown * (size_t)capacity);
            if (!grown) {
                status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            *out = grown;
        }
        (*out)[(*count)++] = r;
    }
    if (!status && ferror(f)) /* a list read in part would score fewer regions */
        status = tt_error_new(TT_ERR_IO, "--val-list %s: cannot read it: %s; check the disk",
                              path, strerror(errno));
    fclose(f);
    if (!status && !*count)
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--val-list %s names no region", path);
    if (status) free(*out), *out = NULL, *count = 0;
    return status;
}

/* eval on a raster set: every scene whole, or --val-list's regions. */
static tt_status run_rasters(const eval_options *o)
{
    tt_status status = NULL;
    tt_backend *be = NULL;
    tt_raster_set *set = NULL;
    tt_metrics *m = NULL;
    tt_infer_model model = {0};
    tt_raster_region *regions = NULL;
    int count = 0;
    if (o->search) {
        return tt_error_new(TT_ERR_UNSUPPORTED, "postprocess: %s holds raster pairs, whose "
                            "classes' minimum sizes are not searched yet; give predict "
                            "--min-size", o->data);
    }
    TT_CHECK(tt_cli_load_model(&(tt_cli_model_flags){o->backend, o->device, o->algo,
                                                     o->precision, o->checkpoint, o->batch,
                                                     o->tile[0], o->tile[1], o->raw_weights},
                               &be, &model));
    if (!model.bands.count) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s holds raster pairs, and checkpoint %s "
                              "was trained on RGB images (it records no bands); give a "
                              "checkpoint trained on rasters", o->data, o->checkpoint);
        goto cleanup;
    }
    tt_raster_pair_options po = {model.bands.bands, model.bands.count, o->mask_nodata};
    TT_CHECK(tt_raster_set_open(o->data, &po, &set));
    if (o->val_list[0]) {
        TT_CHECK(read_regions(o->val_list, set, &regions, &count));
    } else {
        count = tt_raster_set_count(set);
        if (!(regions = tt_malloc(sizeof *regions * (size_t)count))) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "eval: out of host memory");
            goto cleanup;
        }
        for (int k = 0; k < count; k++) {
            const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, k));
            regions[k] = (tt_raster_region){k, 0, 0, in->width, in->height};
        }
    }
    tt_predict_options predict = tt_predict_options_default();
    predict.overlap = o->overlap;
    predict.tta = (tt_tta_kind)o->tta;
    TT_CHECK(tt_blend_kind_parse(o->blend, &predict.blend));
    TT_CHECK(tt_metrics_create(model.spec.classes, &m));
    TT_CHECK(tt_validate_raster(model.model, set, regions, count, &model.bands, o->mask_nodata,
                                &predict, m));
    if (o->json) {
        char *text = tt_metrics_json(m, (const char *const *)model.class_names);
        printf("%s\n", text ? text : "null");
        free(text);
    } else {
        print_table(m, NULL, (const char *const *)model.class_names);
    }
cleanup:
    free(regions);
    tt_metrics_destroy(m);
    tt_raster_set_destroy(set);
    tt_infer_model_free(&model);
    tt_backend_destroy(be);
    return status;
}

static tt_status run(const eval_options *o)
{
    tt_status status = NULL;
    tt_backend *be = NULL;
    tt_dataset *ds = NULL;
    tt_tilecache *cache = NULL;
    tt_metrics *m = NULL;
    tt_infer_model model = {0};
    int *items = NULL;
    tt_pp_search *search = NULL;
    if (!o->checkpoint[0] || !o->data[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "eval needs --checkpoint FILE and --data DIR");
    tt_dataset_options dopt = {.dir = o->data, .csv_path = o->csv[0] ? o->csv : NULL,
                               .images_dir = o->images[0] ? o->images : NULL};
    TT_CHECK(tt_dataset_format_parse(o->format, &dopt.format));
    if (dopt.format == TT_DATASET_RASTER ||
        (dopt.format == TT_DATASET_AUTO && tt_raster_set_detect(o->data)))
        return run_rasters(o);
    TT_CHECK(tt_dataset_open(&dopt, &ds));
    TT_CHECK(tt_cli_load_model(&(tt_cli_model_flags){o->backend, o->device, o->algo,
                                                     o->precision, o->checkpoint, o->batch,
                                                     o->tile[0], o->tile[1], o->raw_weights},
                               &be, &model));
    if (model.spec.classes != tt_dataset_classes(ds)) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "checkpoint '%s' predicts %d classes, data set '%s' has %d",
                              o->checkpoint, model.spec.classes, o->data, tt_dataset_classes(ds));
        goto cleanup;
    }
    tt_item_source source = tt_dataset_source(ds);
    int count = source.count;
    tt_tilecache_config cc = {.dir = o->cache_dir[0] ? o->cache_dir : NULL, .warn = warn_line};
    TT_CHECK(tt_tilecache_create(&cc, &source, &cache));
    TT_CHECK(tt_metrics_create(model.spec.classes, &m));
    if (o->val_list[0]) { /* the images the list names */
        int *rest = NULL, nrest = 0;
        TT_CHECK(tt_split_list(&source, o->val_list, &rest, &nrest, &items, &count));
        free(rest);
    } else {
        items = tt_malloc(sizeof *items * (size_t)count);
        if (!items) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "eval: out of host memory");
            goto cleanup;
        }
        for (int i = 0; i < count; i++) items[i] = i;
    }
    tt_validate_options vo = {.predict = tt_predict_options_default(),
                              .kind = tt_dataset_mask_kind(ds), .threshold = (float)o->threshold,
                              .min_size = o->min_size};
    vo.predict.overlap = o->overlap;
    vo.predict.tta = (tt_tta_kind)o->tta;
    vo.class_threshold = o->threshold_given ? NULL : model.class_threshold;
    vo.class_min_size = o->min_size_given ? NULL : model.class_min_size;
    TT_CHECK(tt_blend_kind_parse(o->blend, &vo.predict.blend));
    memcpy(vo.predict.mean, model.mean, sizeof model.mean);
    memcpy(vo.predict.std, model.std, sizeof model.std);
    if (o->search) { /* against the flags' values (or the defaults), not the checkpoint's */
        vo.class_threshold = NULL, vo.class_min_size = NULL;
        double area = 0;
        for (int i = 0; i < count; i++) {
            int w, h;
            TT_CHECK(tt_tilecache_item_size(cache, items[i], &w, &h));
            area += (double)w * h / count;
        }
        TT_CHECK(tt_pp_search_create(model.spec.classes, vo.kind == TT_MASK_MULTI_LABEL,
                                     vo.threshold, vo.min_size, area, &search));
        vo.search = search;
    }
    TT_CHECK(tt_validate(model.model, cache, items, count, &vo, m));
    if (o->search) {
        TT_CHECK(write_search(o, &model, ds, search));
        goto cleanup;
    }
    if (o->json) {
        const char **names = tt_malloc(sizeof *names * (size_t)m->classes);
        for (int c = 0; names && c < m->classes; c++) names[c] = tt_dataset_class_name(ds, c);
        char *text = names ? tt_metrics_json(m, names) : NULL;
        if (text) printf("%s\n", text);
        else status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "eval --json: out of host memory");
        free(text);
        free(names);
    } else {
        print_table(m, ds, NULL);
    }
cleanup:
    free(items);
    tt_pp_search_destroy(search);
    tt_metrics_destroy(m);
    tt_tilecache_destroy(cache);
    tt_infer_model_free(&model);
    tt_backend_destroy(be);
    tt_dataset_destroy(ds);
    return status;
}

static int command(int argc, char **argv, int search)
{
    eval_options o = {.tile = {256, 256}, .overlap = 0.5, .threshold = 0.5, .batch = 2,
                      .search = search};
    o.mask_nodata = -1;
    strcpy(o.format, "auto");
    strcpy(o.blend, "gaussian");
    strcpy(o.algo, "auto");
    strcpy(o.precision, "fp32");
    strcpy(o.backend, "auto");
    unsigned char given[OPTION_COUNT];
    int rc = tt_cli_parse_given(search ? "postprocess" : "eval", option_table, OPTION_COUNT, &o,
                                given, argc, argv, search ? help_postprocess : help);
    if (rc >= 0) return rc;
    o.threshold_given = given[tt_opt_index(option_table, OPTION_COUNT, "threshold")];
    o.min_size_given = given[tt_opt_index(option_table, OPTION_COUNT, "min-size")];
    if (!search && o.out[0])
        return tt_cli_usage_error("eval", "--out is postprocess's (eval writes nothing)");
    tt_status status = run(&o);
    return status ? tt_cli_fail(status) : 0;
}

int tt_cmd_eval(int argc, char **argv) { return command(argc, argv, 0); }

int tt_cmd_postprocess(int argc, char **argv) { return command(argc, argv, 1); }
