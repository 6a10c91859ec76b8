/*
 * tiletrain mem: how much device memory a training configuration takes,
 * per category, before running it (an estimate made by running the
 * engine's own setup and one window on a dry backend), and with --measure
 * after one real window on the device, side by side.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "core/status.h"
#include "train/fit.h"
#include "train/probe.h"
#include "train/recipe.h"
#include "train/trainer.h"

typedef struct mem_options {
    tt_train_options train;
    int measure;
    int json;
} mem_options;

static const tt_opt own_options[] = {
    {"measure", TT_OPT_FLAG, offsetof(mem_options, measure), NULL,
     "also run one window on the device and measure", 1, 0, NULL},
    {"json", TT_OPT_FLAG, offsetof(mem_options, json), NULL,
     "print JSON (estimate.total_bytes, measured.total_bytes)", 1, 0, NULL},
};
static tt_opt *table; /* train's options, then own_options */
static size_t table_count;

static int build_table(void)
{
    if (!table)
        table = tt_opt_table_concat(tt_train_option_table, tt_train_option_count, offsetof(mem_options, train),
                                    own_options, sizeof own_options / sizeof own_options[0], &table_count);
    return table != NULL;
}

static void help(void)
{
    printf("usage: tiletrain mem [the model and batch options of train] [--measure] [--json]\n"
           "\n"
           "Estimates the device memory of a training run per category (parameters,\n"
           "gradients, optimizer state, activations, workspace, data) without training.\n"
           "--measure also runs one window on the device and prints the measured peaks.\n"
           "The classes and mask kind come from --data, else from --classes and --format.\n"
           "\n"
           "example:\n"
           "  tiletrain mem --tile 1400x2104 --micro-batch 1 --classes 4 --format kaggle-rle\n"
           "\n"
           "options:\n");
    mem_options defaults = {0};
    tt_train_options_default(&defaults.train);
    tt_opt_print_help_full(table, table_count, &defaults, stdout, NULL);
}

/* A line of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 if unknown. */
static uint64_t proc_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kib = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') kib = strtoull(line + n + 1, NULL, 10);
    fclose(f);
    return kib * 1024;
}

/* --tta: the host memory one batch of views' inputs and logits adds
 * (prediction's batch is the model's capacity: the micro-batch). */
static uint64_t tta_host_bytes(const tt_train_options *t, const tt_model_spec *model)
{
    if (t->tta == TT_TTA_NONE) return 0;
    return (uint64_t)t->micro_batch * (3u + (unsigned)model->classes) * (uint64_t)t->tile[0] *
           (uint64_t)t->tile[1] * sizeof(float);
}

static cJSON *stats_json(const tt_memstats *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *cats = cJSON_AddObjectToObject(o, "categories");
    for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++)
        cJSON_AddNumberToObject(cats, tt_mem_category_name(c), (double)m->peak[c]);
    cJSON_AddNumberToObject(o, "total_bytes", (double)m->peak_total);
    return o;
}

static tt_status run(const mem_options *o)
{
    tt_train_options options = o->train; /* --micro-batch auto is resolved into it */
    tt_train_options *t = &options;
    tt_status status = NULL;
    tt_dataset *ds = NULL;
    tt_backend *dry = NULL, *real = NULL;
    tt_device_info *devices = NULL;
    int count = 0, index = 0;
    tt_model_spec model;
    tt_mask_kind kind = t->format == TT_DATASET_KAGGLE_RLE ? TT_MASK_MULTI_LABEL : TT_MASK_CLASS_INDEX;
    int data_classes = 0;
    if (t->data[0]) {
        tt_dataset_options dopt = {.dir = t->data, .csv_path = t->csv[0] ? t->csv : NULL,
                                   .images_dir = t->images[0] ? t->images : NULL};
        dopt.format = t->format;
        TT_CHECK(tt_dataset_open(&dopt, &ds));
        kind = tt_dataset_mask_kind(ds);
        data_classes = tt_dataset_classes(ds);
    }
    if (strcmp(t->plan, "off") != 0) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "--plan is train's: `tiletrain plan` "
                              "prints the options of the planned run, to give mem");
        goto cleanup;
    }
    TT_CHECK(tt_recipe_model(t, data_classes, &model));
    if (model.precision == TT_PRECISION_AUTO) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "--precision auto is chosen by timing when a run starts; mem "
                              "estimates one storage: give fp32, fp16 or bf16");
        goto cleanup;
    }
    int planes = kind == TT_MASK_MULTI_LABEL ? model.classes : 1;
    tt_backend_request request;
    TT_CHECK(tt_recipe_backend(t, &request));
    const tt_device_info *d = NULL;
    if (request.kind == TT_BACKEND_OPENCL) { /* described without opening it */
        TT_CHECK(tt_devices_list(&devices, &count));
        TT_CHECK(tt_device_select(t->device[0] ? t->device : NULL, &index));
        d = &devices[index];
    } else { /* other APIs describe a device once it is open */
        TT_CHECK(tt_backend_create(&request, &real));
        d = &real->device;
    }
    tt_memstats estimate, measured = {0};
    /* --micro-batch auto: the micro-batch a run would take (train/fit.c) */
    if (t->micro_batch == 0) TT_CHECK(tt_fit_memory(d, t, &model, kind, planes));
    TT_CHECK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = d,
                                                     .stands_for = (int)request.kind},
                               &dry));
    tt_step_config engine = tt_recipe_step(t, &model, kind, planes);
    TT_CHECK(tt_probe_memory(dry, &engine, t->accum, &estimate));
    uint64_t rss_base = 0, rss_peak = 0;
    if (o->measure) {
        /* the process's resident memory over the window, as the PyTorch peer
         * (python/tiletrain_torch.py mem) measures it: on a CPU device the
         * device memory is host memory */
        if (!real) TT_CHECK(tt_backend_create(&request, &real));
        rss_base = proc_status_bytes("VmRSS");
        TT_CHECK(tt_probe_memory(real, &engine, t->accum, &measured));
        rss_peak = proc_status_bytes("VmHWM");
    }
    char a[32], b[32], g[32];
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *dj = tt_device_info_json(d);
        cJSON_AddStringToObject(dj, "backend", tt_backend_kind_name(request.kind));
        cJSON_AddItemToObject(root, "device", dj);
        cJSON_AddItemToObject(root, "config", tt_recipe_json(t, &model));
        cJSON_AddItemToObject(root, "estimate", stats_json(&estimate));
        cJSON *vj = cJSON_AddObjectToObject(root, "validation");
        char tta[16];
        cJSON_AddStringToObject(vj, "tta", tt_opt_choice_name(TT_TTA_CHOICES, t->tta, tta, sizeof tta));
        cJSON_AddNumberToObject(vj, "forward_passes_per_tile", tt_tta_views(t->tta));
        cJSON_AddNumberToObject(vj, "device_bytes", 0);
        cJSON_AddNumberToObject(vj, "host_bytes", (double)tta_host_bytes(t, &model));
        if (o->measure) {
            cJSON *mj = stats_json(&measured);
            cJSON_AddNumberToObject(mj, "process_rss_base_bytes", (double)rss_base);
            cJSON_AddNumberToObject(mj, "process_rss_peak_bytes", (double)rss_peak);
            cJSON_AddNumberToObject(mj, "process_step_growth_bytes",
                                    rss_peak > rss_base ? (double)(rss_peak - rss_base) : 0.0);
            tt_memory_held held;
            if (tt_backend_memory_held(real, &held))
                cJSON_AddNumberToObject(mj, "held_peak_bytes", (double)held.peak_bytes);
            cJSON_AddItemToObject(root, "measured", mj);
        }
        char *text = cJSON_Print(root);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(root);
    } else {
        printf("device      %s (%s, %s), %s global, %s largest allocation\n", d->name,
               tt_backend_kind_name(request.kind), d->platform,
               tt_format_bytes(d->global_mem_bytes, a, sizeof a),
               tt_format_bytes(d->max_alloc_bytes, b, sizeof b));
        char described[96];
        tt_model_spec_describe(&model, described, sizeof described);
        printf("config      tile %dx%d, micro-batch %d, %s%s, %d classes, %s\n", t->tile[0],
               t->tile[1], t->micro_batch, described, model.checkpointing ? ", checkpointing" : "",
               model.classes, tt_optimizer_choice_name(t->optimizer));
        printf("%-12s %14s%s\n", "category", "estimate", o->measure ? "       measured" : "");
        for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++) {
            printf("%-12s %14s", tt_mem_category_name(c),
                   tt_format_bytes(estimate.peak[c], a, sizeof a));
            if (o->measure) printf(" %14s", tt_format_bytes(measured.peak[c], g, sizeof g));
            printf("\n");
        }
        printf("%-12s %14s", "peak total", tt_format_bytes(estimate.peak_total, a, sizeof a));
        if (o->measure) printf(" %14s", tt_format_bytes(measured.peak_total, g, sizeof g));
        printf("\n");
        tt_memory_held held;
        if (o->measure && tt_backend_memory_held(real, &held))
            printf("%-12s %14s %14s  device memory in blocks at its peak: %s over the buffers\n",
                   "held", "", tt_format_bytes(held.peak_bytes, g, sizeof g),
                   tt_format_bytes(held.peak_bytes > measured.peak_total
                                       ? held.peak_bytes - measured.peak_total
                                       : 0,
                                   a, sizeof a));
        if (o->measure)
            printf("process RSS  %s at the start, %s at the peak: %s growth over the window\n",
                   tt_format_bytes(rss_base, a, sizeof a), tt_format_bytes(rss_peak, b, sizeof b),
                   tt_format_bytes(rss_peak > rss_base ? rss_peak - rss_base : 0, g, sizeof g));
        char tta[16];
        printf("validation  --tta %s: %d forward pass%s a tile, in the training model's buffers "
               "(no device memory of its own)%s%s%s\n",
               tt_opt_choice_name(TT_TTA_CHOICES, t->tta, tta, sizeof tta), tt_tta_views(t->tta),
               tt_tta_views(t->tta) == 1 ? "" : "es", t->tta ? "; host: " : "",
               t->tta ? tt_format_bytes(tta_host_bytes(t, &model), a, sizeof a) : "",
               t->tta ? " more for the views' tiles and logits" : "");
        if (t->ema > 0)
            printf("ema         the average is a second arena in \"parameters\"; validation swaps "
                   "it in through the gradient arena (nothing more)\n");
        if (estimate.peak_total > d->global_mem_bytes)
            printf("this does not fit the device: try --checkpointing, a smaller --micro-batch "
                   "(with a larger --accum) or a smaller --tile\n");
    }
cleanup:
    tt_backend_destroy(dry);
    tt_backend_destroy(real);
    tt_dataset_destroy(ds);
    free(devices);
    return status;
}

int tt_cmd_mem(int argc, char **argv)
{
    if (!build_table()) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    mem_options o = {0};
    tt_train_options_default(&o.train);
    int rc = tt_cli_parse("mem", table, table_count, &o, argc, argv, help);
    if (rc >= 0) return rc;
    tt_status status = run(&o);
    return status ? tt_cli_fail(status) : 0;
}
