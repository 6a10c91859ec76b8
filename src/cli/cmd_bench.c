/*
 * tiletrain bench: whole optimizer steps timed on a device, after a
 * warm-up, with the device time per kind of work from the backend's
 * profiling (OpenCL profiling events, Vulkan timestamp queries).  The peer is python/tiletrain_torch.py bench (same model, tile,
 * micro-batch, accum and AdamW); tools/bench_vs_torch.sh runs both.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/profile.h"
#include "cli/bench_layers.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/status.h"
#include "train/precision_auto.h"
#include "train/probe.h"
#include "train/recipe.h"
#include "train/trainer.h"

typedef struct bench_options {
    tt_train_options train;
    int warmup;
    int json;
    int by_kernel;
    int layers;
    int compare_openblas;
} bench_options;

/* not --warmup: train's option of that name (the learning rate's) comes first */
static const tt_opt own_options[] = {
    {"untimed", TT_OPT_INT, offsetof(bench_options, warmup), "K", "untimed steps first", 0, 1000,
     NULL},
    {"json", TT_OPT_FLAG, offsetof(bench_options, json), NULL, "print one JSON object (images_per_s, ...)", 1,
     0, NULL},
    {"by-kernel", TT_OPT_FLAG, offsetof(bench_options, by_kernel), NULL,
     "device time per kernel, not per kind of op", 1, 0, NULL},
    {"layers", TT_OPT_FLAG, offsetof(bench_options, layers), NULL,
     "time each convolution shape alone instead (forward and both gradients)", 1, 0, NULL},
    {"compare-openblas", TT_OPT_FLAG, offsetof(bench_options, compare_openblas), NULL,
     "--layers: also OpenBLAS SGEMM on each layer's im2col GEMMs (libopenblas.so.0)", 1, 0, NULL},
};
static tt_opt *table; /* train's options, then own_options */
static size_t table_count;

static int build_table(void)
{
    if (!table)
        table = tt_opt_table_concat(tt_train_option_table, tt_train_option_count, offsetof(bench_options, train),
                                    own_options, sizeof own_options / sizeof own_options[0], &table_count);
    return table != NULL;
}

/* train's defaults but accum 5 and 2 timed steps, and no run folder
 * (with --data) unless --out is given */
static void bench_defaults(bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->warmup = 1;
    tt_train_options_default(&o->train);
    o->train.accum = 5;
    o->train.steps = 2;
    o->train.out[0] = 0;
}

static void help(void)
{
    printf("usage: tiletrain bench [--tile 256x256 --micro-batch 4 --accum 5 --base-channels 16\n"
           "                       --depth 3 --steps K] [--json] [--by-kernel]\n"
           "                       [--backend NAME] [--device SPEC]\n"
           "\n"
           "Times whole optimizer steps (forward, backward, accumulation, AdamW) on random\n"
           "images after a warm-up, and reports images/s, Mpix/s, effective GFLOP/s, peak\n"
           "device memory and the device time per kind of work (or per kernel with\n"
           "--by-kernel), from the device's own timers: OpenCL profiling events, Vulkan\n"
           "timestamp queries around every dispatch.  With --data DIR the steps\n"
           "read the data set through train's pipeline, and the time spent waiting for\n"
           "data is reported too.\n"
           "\n"
           "With --layers it times each convolution shape of the model alone instead\n"
           "(forward, input and weight gradient, the algorithm training runs), and with\n"
           "--compare-openblas next to OpenBLAS SGEMM on the same im2col GEMMs.\n"
           "\n"
           "example:\n"
           "  tiletrain bench --tile 256x256 --micro-batch 4 --accum 5 --steps 2 --json\n"
           "  tiletrain bench --backend vulkan --by-kernel --tile 64x64 --micro-batch 1\n"
           "  tiletrain bench --layers --compare-openblas\n"
           "\n"
           "options (those of train; --steps counts timed steps, default 2):\n");
    bench_options defaults;
    bench_defaults(&defaults);
    tt_opt_print_help_full(table, table_count, &defaults, stdout, NULL);
}

/* With --data: the trainer's own steps over the data set (tile cache,
 * sampler, augmentation, prefetch), timed after `warmup` of them; *wait is
 * the time the steps waited for batches. */
static tt_status bench_data(const bench_options *o, int steps, tt_trainer **trainer,
                            tt_bench_result *r, double *wait)
{
    tt_train_options opt = o->train;
    opt.profile = 1;
    opt.quiet = 1;
    opt.steps = o->warmup + steps;
    TT_TRY(tt_trainer_create(&opt, trainer));
    tt_trainer *t = *trainer;
    memset(r, 0, sizeof *r);
    *wait = 0;
    for (int s = 0; s < o->warmup + steps; s++) {
        if (s == o->warmup) {
            TT_TRY(tt_finish(t->be));
            *t->be->profile = (tt_profile){.by_kernel = o->by_kernel};
            r->seconds = -tt_seconds();
        }
        tt_step_report rep;
        TT_TRY(tt_trainer_step(t, &rep));
        if (s >= o->warmup) {
            r->images += (double)rep.images;
            *wait += rep.data_wait_seconds;
        }
    }
    TT_TRY(tt_finish(t->be));
    r->seconds += tt_seconds();
    r->flops_per_image = 3.0 * tt_model_flops_per_image(t->engine->model);
    r->peak_bytes = t->be->mem.peak_total;
    return NULL;
}

static tt_status run(const bench_options *o)
{
    const tt_train_options *t = &o->train;
    tt_backend *be = NULL;
    tt_trainer *trainer = NULL;
    tt_bench_result r;
    double wait = 0;
    int steps = t->steps > 0 ? t->steps : 2;
    tt_status status = NULL;
    if (strcmp(t->plan, "off") != 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--plan is train's: `tiletrain plan` prints "
                            "the options of the planned run, to give bench");
    if (t->data[0]) {
        status = bench_data(o, steps, &trainer, &r, &wait);
        if (trainer) {
            be = trainer->be;
            t = &trainer->opt; /* the micro-batch and accum it resolved */
        }
    } else {
        tt_model_spec model;
        status = tt_recipe_model(t, 0, &model);
        tt_backend_request request;
        if (!status) status = tt_recipe_backend(t, &request);
        request.profiling = 1; /* bench reports device time per kind */
        if (!status) status = tt_backend_create(&request, &be);
        if (!status) {
            be->profile->by_kernel = o->by_kernel;
            tt_step_config c = tt_recipe_step(t, &model, TT_MASK_MULTI_LABEL, model.classes);
            tt_precision_choice choice;
            status = tt_error_prefix(tt_precision_auto(be, &c, &choice), "--precision auto");
            if (!status && choice.reason[0])
                fprintf(stderr, "tiletrain: --precision auto: %s\n", choice.reason);
            if (!status) status = tt_probe_bench(be, &c, t->accum, o->warmup, steps, &r);
        }
    }
    if (!status) {
        double ips = r.images / r.seconds;
        double mpix = ips * t->tile[0] * t->tile[1] / 1e6;
        double gflops = ips * r.flops_per_image / 1e9;
        double busy = tt_profile_seconds(be->profile);
        if (o->json) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddStringToObject(root, "device", be->device.name);
            cJSON_AddStringToObject(root, "backend", be->ops->name);
            char tile[32];
            snprintf(tile, sizeof tile, "%dx%d", t->tile[0], t->tile[1]);
            cJSON_AddStringToObject(root, "tile", tile);
            cJSON_AddStringToObject(root, "data", t->data[0] ? t->data : "random");
            cJSON_AddNumberToObject(root, "micro_batch", t->micro_batch);
            cJSON_AddNumberToObject(root, "accum", t->accum);
            cJSON_AddNumberToObject(root, "steps", steps);
            cJSON_AddNumberToObject(root, "images_per_s", ips);
            cJSON_AddNumberToObject(root, "mpix_per_s", mpix);
            cJSON_AddNumberToObject(root, "gflops", gflops);
            cJSON_AddNumberToObject(root, "gflop_per_image", r.flops_per_image / 1e9);
            cJSON_AddNumberToObject(root, "peak_device_bytes", (double)r.peak_bytes);
            cJSON_AddItemToObject(root, "device_seconds", tt_profile_json(be->profile));
            cJSON_AddNumberToObject(root, "data_wait_s", wait);
            cJSON_AddNumberToObject(root, "wall_seconds", r.seconds);
            char *text = cJSON_PrintUnformatted(root);
            printf("%s\n", text);
            cJSON_free(text);
            cJSON_Delete(root);
        } else {
            char peak[32];
            printf("%s: %d steps of %d x %d images at %dx%d in %.2f s\n", be->device.name, steps,
                   t->micro_batch, t->accum, t->tile[0], t->tile[1], r.seconds);
            printf("  %.3f images/s, %.3f Mpix/s, %.1f GFLOP/s effective (%.1f GFLOP per image)\n",
                   ips, mpix, gflops, r.flops_per_image / 1e9);
            printf("  peak device memory %s\n", tt_format_bytes(r.peak_bytes, peak, sizeof peak));
            if (t->data[0])
                printf("  waiting for data %.3f s (%.1f%% of the wall time; data/transfer below is "
                       "the upload)\n", wait, r.seconds > 0 ? 100 * wait / r.seconds : 0);
            else
                printf("  waiting for data: none, random images already in memory (--data DIR "
                       "times a data set's pipeline)\n");
            printf("  device time per kind (%s profiling; %.2f s in all):\n", be->ops->name, busy);
            tt_profile_print(be->profile, stdout, "    ");
        }
    }
    if (trainer) tt_trainer_destroy(trainer); /* and its backend */
    else tt_backend_destroy(be);
    return status;
}

int tt_cmd_bench(int argc, char **argv)
{
    if (!build_table()) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    bench_options o;
    bench_defaults(&o);
    int rc = tt_cli_parse("bench", table, table_count, &o, argc, argv, help);
    if (rc >= 0) return rc;
    if (o.train.micro_batch < 1)
        return tt_cli_usage_error("bench", "--micro-batch must be a number here");
    if (o.compare_openblas && !o.layers)
        return tt_cli_usage_error("bench", "--compare-openblas goes with --layers");
    tt_status status = o.layers ? tt_bench_layers(&o.train, o.json, o.compare_openblas) : run(&o);
    return status ? tt_cli_fail(status) : 0;
}
