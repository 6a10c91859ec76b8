/*
 * The training loop: data -> forward -> loss -> backward, N times, then one
 * normalised, checked, clipped optimizer step.  Read tt_trainer_step() top
 * to bottom: it is the whole algorithm.
 */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/fs.h"
#include "core/status.h"
#include "ops/bce.h"
#include "ops/dice.h"
#include "ops/reduce.h"
#include "ops/softmax_ce.h"
#include "ops/util.h"
#include "train/checkpoint.h"
#include "train/validate.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The schedule the options describe: a kind name plus --warmup and friends,
 * or the full "kind:key=value" form of tt_schedule_parse. */
static tt_status schedule_from_options(const tt_train_options *o, tt_schedule *out)
{
    char text[256];
    if (strchr(o->schedule, ':')) return tt_schedule_parse(o->schedule, out);
    if (strcmp(o->schedule, "constant") == 0)
        snprintf(text, sizeof text, "constant:warmup=%d", o->warmup);
    else if (strcmp(o->schedule, "cosine") == 0)
        snprintf(text, sizeof text, "cosine:total=%d,warmup=%d,min_lr=%.17g",
                 o->steps > o->warmup ? o->steps : o->warmup + 1, o->warmup, o->min_lr);
    else if (strcmp(o->schedule, "step") == 0)
        snprintf(text, sizeof text, "step:every=%d,gamma=%.17g,warmup=%d",
                 o->step_every > 0 ? o->step_every : (o->steps / 3 > 0 ? o->steps / 3 : 1),
                 o->gamma, o->warmup);
    else
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--schedule '%s' is unknown: use constant, cosine or step", o->schedule);
    return tt_schedule_parse(text, out);
}

/* Parses "a,b,c" into three floats; `flag` names the option in errors. */
static tt_status parse_triple(const char *flag, const char *text, float out[3], int positive)
{
    char *end;
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        out[i] = strtof(p, &end);
        if (end == p || (i < 2 && *end != ',') || (i == 2 && *end) || !isfinite(out[i]) ||
            (positive && out[i] <= 0))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "--%s '%s': give three %snumbers, one per channel, e.g. "
                                "0.485,0.456,0.406", flag, text, positive ? "positive " : "");
        p = end + 1;
    }
    return NULL;
}

static tt_status open_data(tt_trainer *t)
{
    const tt_train_options *o = &t->opt;
    if (!o->data[0])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "no data set: give --data DIR (make one with `tiletrain data synth`)");
    tt_dataset_options dopt = {.dir = o->data, .csv_path = o->csv[0] ? o->csv : NULL,
                               .images_dir = o->images[0] ? o->images : NULL,
                               .max_pixels = (uint64_t)o->max_pixels, .skip_bad = o->skip_bad};
    TT_TRY(tt_dataset_format_parse(o->format, &dopt.format));
    TT_TRY(tt_dataset_open(&dopt, &t->dataset));
    for (int i = 0; i < tt_dataset_problem_count(t->dataset); i++) {
        const tt_dataset_problem *p = tt_dataset_problem_at(t->dataset, i);
        fprintf(stderr, "tiletrain: skipped %s: %s\n", p->item, p->reason);
    }
    t->source = tt_dataset_source(t->dataset);
    t->mask_kind = tt_dataset_mask_kind(t->dataset);
    tt_tilecache_config cc = {.dir = o->cache_dir[0] ? o->cache_dir : NULL,
                              .max_pixels = (uint64_t)o->max_pixels};
    TT_TRY(tt_tilecache_create(&cc, &t->source, &t->cache));
    if (o->val_list[0] && o->val_fraction > 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "give --val-list or --val-fraction, not both");
    if (o->val_list[0]) {
        TT_TRY(tt_split_list(&t->source, o->val_list, &t->train_items, &t->train_count,
                             &t->val_items, &t->val_count));
    } else if (o->val_fraction > 0) {
        TT_TRY(tt_split_fraction(&t->source, o->val_fraction, o->seed, &t->train_items,
                                 &t->train_count, &t->val_items, &t->val_count));
    } else {
        t->train_count = t->source.count;
        t->train_items = malloc(sizeof *t->train_items * (size_t)t->train_count);
        if (!t->train_items) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        for (int i = 0; i < t->train_count; i++) t->train_items[i] = i;
    }
    tt_sampler_config sc = {.tile_width = o->tile[1], .tile_height = o->tile[0],
                            .fg_fraction = o->fg_fraction, .no_shuffle = o->no_shuffle,
                            .no_augment = o->no_augment, .seed = o->seed,
                            .augment = tt_augment_defaults()};
    if (t->val_count) TT_TRY(tt_tilecache_create(&cc, &t->source, &t->val_cache));
    return tt_sampler_create(&sc, t->cache, t->train_items, t->train_count, &t->sampler);
}

/* Crops of a finite run (--epochs), 0 for an endless stream. */
static int64_t planned_crops(const tt_trainer *t)
{
    if (t->opt.epochs <= 0) return 0;
    return (int64_t)t->opt.epochs * tt_sampler_epoch_length(t->sampler);
}

static tt_status start_prefetch(tt_trainer *t)
{
    tt_prefetch_config pc = {.batch_size = t->opt.micro_batch, .height = t->opt.tile[0],
                             .width = t->opt.tile[1], .planes = tt_tilecache_planes(t->cache),
                             .queue_depth = 2, .normalize = t->normalize};
    memcpy(pc.mean, t->mean, sizeof pc.mean);
    memcpy(pc.std, t->std, sizeof pc.std);
    int64_t total = planned_crops(t);
    int64_t left = total ? total - t->images_seen : 0;
    if (total && left <= 0) {
        t->finished = 1;
        return NULL;
    }
    return tt_prefetch_create_sampler(&pc, t->sampler, left, &t->prefetch);
}

/* The run's length in optimizer steps: --steps, else all of --epochs, else 100. */
static void plan_steps(tt_trainer *t)
{
    int64_t crops = planned_crops(t);
    int64_t batches = (crops + t->opt.micro_batch - 1) / t->opt.micro_batch;
    if (t->opt.steps > 0) t->max_steps = t->opt.steps;
    else if (batches) t->max_steps = (batches + t->opt.accum - 1) / t->opt.accum;
    else t->max_steps = 100;
    if (t->opt.steps <= 0) t->opt.steps = (int)t->max_steps;
}

/* The model the options and the data set describe. */
static tt_status resolve_model(tt_trainer *t)
{
    const tt_train_options *o = &t->opt;
    int data_classes = tt_dataset_classes(t->dataset);
    if (o->classes && o->classes < data_classes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--classes %d is fewer than the %d classes of data set '%s'",
                            o->classes, data_classes, o->data);
    t->model = (tt_unet_config){.in_channels = 3, .classes = o->classes ? o->classes : data_classes,
                                .base_channels = o->base_channels, .depth = o->depth,
                                .groups = o->groups, .checkpointing = o->checkpointing};
    TT_TRY(tt_norm_kind_parse(o->norm, &t->model.norm));
    if (t->model.norm == TT_NORM_BATCH && o->micro_batch > 0 && o->micro_batch < 4)
        fprintf(stderr,
                "tiletrain: note: batch norm with micro-batch %d: its statistics come from one "
                "micro-batch, not the accumulation window; below 4 they are noisy (--norm group "
                "keeps none, but normalises each crop on its own)\n", o->micro_batch);
    return NULL;
}

/* Frees what allocate_device() made (any part may be missing). */
static void free_device(tt_trainer *t)
{
    tt_buffer_free(t->labels);
    tt_buffer_free(t->loss_blocks);
    tt_buffer_free(t->reduce_block);
    tt_buffer_free(t->moment1);
    tt_buffer_free(t->moment2);
    tt_unet_destroy(t->unet);
}

/* Everything a run keeps on the device: the model, labels, loss and norm
 * blocks, optimizer state.  Also run on the dry backend for estimates. */
static tt_status allocate_device(tt_trainer *t, int planes)
{
    const tt_train_options *o = &t->opt;
    TT_TRY(tt_unet_create(t->be, &t->model, o->micro_batch, o->tile[0], o->tile[1], o->seed,
                          &t->unet));
    TT_TRY(tt_buffer_alloc(t->be, (size_t)o->micro_batch * (size_t)planes * o->tile[0] * o->tile[1],
                           TT_MEM_DATA, "labels", &t->labels));
    TT_TRY(tt_buffer_alloc(t->be, 2 * TT_LOSS_VALUE_BYTES, TT_MEM_WORKSPACE, "loss", &t->loss_blocks));
    TT_TRY(tt_buffer_alloc(t->be, 2 * sizeof(float), TT_MEM_WORKSPACE, "grad-norm", &t->reduce_block));
    size_t n = t->unet->params.trainable_floats;
    t->use_sgd = strcmp(o->optimizer, "sgd") == 0;
    if (t->use_sgd) {
        t->sgd = tt_sgd_config_default();
        t->sgd.lr = o->lr;
        t->sgd.momentum = o->momentum;
        t->sgd.nesterov = o->nesterov;
        t->sgd.weight_decay = o->weight_decay >= 0 ? o->weight_decay : 0.0;
        TT_TRY(tt_sgd_config_check(&t->sgd));
        if (t->sgd.momentum > 0) {
            TT_TRY(tt_buffer_alloc(t->be, n * sizeof(float), TT_MEM_OPTIMIZER, "sgd.momentum_buffer",
                                   &t->moment1));
            TT_TRY(tt_fill(t->be, tt_mem_of(t->moment1), 0.0f, n));
        }
    } else {
        t->adamw = tt_adamw_config_default();
        t->adamw.lr = o->lr;
        if (o->weight_decay >= 0) t->adamw.weight_decay = o->weight_decay;
        TT_TRY(tt_adamw_config_check(&t->adamw));
        TT_TRY(tt_buffer_alloc(t->be, n * sizeof(float), TT_MEM_OPTIMIZER, "adamw.exp_avg", &t->moment1));
        TT_TRY(tt_buffer_alloc(t->be, n * sizeof(float), TT_MEM_OPTIMIZER, "adamw.exp_avg_sq",
                               &t->moment2));
        TT_TRY(tt_fill(t->be, tt_mem_of(t->moment1), 0.0f, n));
        TT_TRY(tt_fill(t->be, tt_mem_of(t->moment2), 0.0f, n));
    }
    return schedule_from_options(o, &t->schedule);
}

/* The estimated peak of a run with this micro-batch, tile and
 * checkpointing (UINT64_MAX when a single buffer would be too large). */
static tt_status estimate_peak(tt_trainer *t, int micro_batch, const int tile[2], int checkpointing,
                               int planes, uint64_t *peak)
{
    tt_train_options o = t->opt;
    o.micro_batch = micro_batch;
    o.tile[0] = tile[0], o.tile[1] = tile[1];
    tt_unet_config m = t->model;
    m.checkpointing = checkpointing;
    tt_backend *dry = NULL;
    TT_TRY(tt_backend_create_dry(&t->be->device, &dry));
    tt_memstats stats;
    tt_status s = tt_trainer_memory_probe(dry, &o, &m, t->mask_kind, planes, &stats);
    tt_backend_destroy(dry);
    if (tt_status_code(s) == TT_ERR_TOO_LARGE) {
        tt_status_free(s);
        *peak = UINT64_MAX;
        return NULL;
    }
    *peak = s ? 0 : stats.peak_total;
    return s;
}

/* The largest micro-batch in 1..cap whose estimate fits, 0 if none. */
static tt_status largest_fit(tt_trainer *t, int cap, int checkpointing, int planes, uint64_t limit,
                             int *best)
{
    int lo = 1, hi = cap;
    *best = 0;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint64_t peak;
        TT_TRY(estimate_peak(t, mid, t->opt.tile, checkpointing, planes, &peak));
        if (peak <= limit) *best = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* Fits the run under --mem-limit before anything is allocated: picks the
 * micro-batch for --micro-batch auto, turns checkpointing on when even one
 * image does not fit without it, or stops with a tile size that would fit. */
static tt_status fit_memory(tt_trainer *t, int planes)
{
    tt_train_options *o = &t->opt;
    uint64_t global = t->be->device.global_mem_bytes;
    uint64_t margin = global / 10 > (256u << 20) ? global / 10 : (256u << 20);
    uint64_t limit = o->mem_limit ? o->mem_limit : (global > margin ? global - margin : global);
    char lim[32], need[32];
    tt_format_bytes(limit, lim, sizeof lim);
    int cap = o->micro_batch > 0 ? o->micro_batch : o->batch;
    int best = 0;
    TT_TRY(largest_fit(t, cap, t->model.checkpointing, planes, limit, &best));
    if (!best && !t->model.checkpointing) {
        TT_TRY(largest_fit(t, cap, 1, planes, limit, &best));
        if (best) {
            t->model.checkpointing = 1;
            fprintf(stderr, "tiletrain: turning on --checkpointing: without it not even one "
                    "image fits under %s\n", lim);
        }
    }
    if (o->micro_batch > 0 && best < o->micro_batch) {
        uint64_t peak;
        TT_TRY(estimate_peak(t, o->micro_batch, o->tile, t->model.checkpointing, planes, &peak));
        tt_format_bytes(peak, need, sizeof need);
        if (best)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                                "micro-batch %d at tile %dx%d needs about %s, over the limit of %s; "
                                "--micro-batch %d --accum %d gives the same update and fits "
                                "(or --micro-batch auto)",
                                o->micro_batch, o->tile[0], o->tile[1],
                                peak == UINT64_MAX ? "more than one buffer may hold" : need, lim,
                                best, (o->micro_batch * o->accum + best - 1) / best);
    }
    if (!best) {
        /* name a tile that fits: shrink by halves, multiples of 2^depth */
        int unit = 1 << t->model.depth, tile[2] = {o->tile[0], o->tile[1]};
        while (tile[0] > unit || tile[1] > unit) {
            for (int k = 0; k < 2; k++) tile[k] = tile[k] / 2 / unit * unit > unit ? tile[k] / 2 / unit * unit : unit;
            uint64_t peak;
            TT_TRY(estimate_peak(t, 1, tile, 1, planes, &peak));
            if (peak <= limit)
                return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                                    "tile %dx%d does not fit under %s even with one image and "
                                    "--checkpointing; --tile %dx%d fits (the whole image is still "
                                    "trained on, crop by crop)", o->tile[0], o->tile[1], lim,
                                    tile[0], tile[1]);
        }
        return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                            "nothing fits under %s on device '%s': raise --mem-limit or use a "
                            "smaller model (--base-channels, --depth)", lim, t->be->device.name);
    }
    if (o->micro_batch == 0) {
        o->micro_batch = best;
        o->accum = (o->batch + best - 1) / best;
        uint64_t peak, next = 0;
        TT_TRY(estimate_peak(t, best, o->tile, t->model.checkpointing, planes, &peak));
        if (best < o->batch) TT_TRY(estimate_peak(t, best + 1, o->tile, t->model.checkpointing, planes, &next));
        char nx[32];
        fprintf(stderr, "tiletrain: micro-batch auto: %d x accum %d for a batch of %d; estimated "
                "peak %s of %s%s%s%s\n", best, o->accum, o->batch,
                tt_format_bytes(peak, need, sizeof need), lim,
                next ? " (one image more would need " : "",
                next ? (next == UINT64_MAX ? "a too large buffer" : tt_format_bytes(next, nx, sizeof nx)) : "",
                next ? ")" : "");
    }
    return NULL;
}

/* OUT/validation.txt: the held-out images, one name per line (what
 * --val-list reads, so a later run can keep the same split). */
static tt_status write_validation_list(tt_trainer *t)
{
    char path[TT_OPT_STRING_MAX + 32];
    snprintf(path, sizeof path, "%s/validation.txt", t->opt.out);
    FILE *f = fopen(path, "w");
    if (!f) return tt_error_new(TT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(f, "# validation images of this run (tiletrain train --val-list reads this)\n");
    for (int i = 0; i < t->val_count; i++)
        fprintf(f, "%s\n", t->source.name(t->source.ctx, t->val_items[i]));
    if (fclose(f) != 0) return tt_error_new(TT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return NULL;
}

tt_status tt_trainer_create(const tt_train_options *opt, tt_trainer **out)
{
    *out = NULL;
    tt_trainer *t = calloc(1, sizeof *t);
    if (!t) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->opt = *opt;
    t->best_mean_dice = -1;
    tt_status status = NULL;
    if (opt->init[0] && opt->resume[0]) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "give --init (weights only) or --resume (the whole state), not both");
        goto cleanup;
    }
    t->mean[0] = t->mean[1] = t->mean[2] = 0.0f;
    t->std[0] = t->std[1] = t->std[2] = 1.0f;
    if (opt->mean[0]) TT_CHECK(parse_triple("mean", opt->mean, t->mean, 0));
    if (opt->std[0]) TT_CHECK(parse_triple("std", opt->std, t->std, 1));
    t->normalize = opt->mean[0] || opt->std[0];
    TT_CHECK(open_data(t));
    if (opt->profile)
        TT_CHECK(tt_backend_create_opencl_profiling(opt->device[0] ? opt->device : NULL, &t->be));
    else
        TT_CHECK(tt_backend_create_opencl(opt->device[0] ? opt->device : NULL, &t->be));
    TT_CHECK(resolve_model(t));
    TT_CHECK(fit_memory(t, tt_tilecache_planes(t->cache)));
    plan_steps(t);
    TT_CHECK(allocate_device(t, tt_tilecache_planes(t->cache)));
    if (opt->init[0]) TT_CHECK(tt_checkpoint_load_weights(t->unet, opt->init));
    if (opt->resume[0]) TT_CHECK(tt_checkpoint_resume(t, opt->resume));
    TT_CHECK(start_prefetch(t));
    if (opt->out[0]) {
        TT_CHECK(tt_make_dirs(opt->out));
        TT_CHECK(write_validation_list(t));
        char path[TT_OPT_STRING_MAX + 32];
        snprintf(path, sizeof path, "%s/train.jsonl", opt->out);
        t->log = fopen(path, opt->resume[0] ? "a" : "w");
        if (!t->log) {
            status = tt_error_new(TT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
            goto cleanup;
        }
    }
    t->log_echo = strcmp(opt->log_format, "jsonl") == 0 ? stdout : NULL;
    if (t->log || t->log_echo) {
        const tt_device_info *d = &t->be->device;
        cJSON *start = cJSON_CreateObject();
        cJSON *dev = cJSON_AddObjectToObject(start, "device");
        cJSON_AddStringToObject(dev, "name", d->name);
        cJSON_AddStringToObject(dev, "vendor", d->vendor);
        cJSON_AddStringToObject(dev, "driver_version", d->driver_version);
        cJSON_AddStringToObject(dev, "platform", d->platform);
        cJSON_AddNumberToObject(dev, "global_mem_bytes", (double)d->global_mem_bytes);
        cJSON *cfg = cJSON_AddObjectToObject(start, "config");
        cJSON_AddNumberToObject(cfg, "tile_h", opt->tile[0]);
        cJSON_AddNumberToObject(cfg, "tile_w", opt->tile[1]);
        cJSON_AddNumberToObject(cfg, "micro_batch", t->opt.micro_batch);
        cJSON_AddNumberToObject(cfg, "accum", t->opt.accum);
        cJSON_AddNumberToObject(cfg, "steps", (double)t->max_steps);
        cJSON_AddNumberToObject(cfg, "classes", t->model.classes);
        cJSON_AddNumberToObject(cfg, "base_channels", t->model.base_channels);
        cJSON_AddNumberToObject(cfg, "depth", t->model.depth);
        cJSON_AddStringToObject(cfg, "norm", tt_norm_kind_name(t->model.norm));
        cJSON_AddBoolToObject(cfg, "checkpointing", t->model.checkpointing);
        cJSON_AddStringToObject(cfg, "algo", opt->algo[0] ? opt->algo : "auto");
        cJSON_AddStringToObject(cfg, "optimizer", t->use_sgd ? "sgd" : "adamw");
        cJSON_AddNumberToObject(cfg, "lr", opt->lr);
        char *line = cJSON_PrintUnformatted(start);
        if (line) tt_trainer_log(t, "%s\n", line);
        cJSON_free(line);
        cJSON_Delete(start);
    }
    *out = t;
    return NULL;
cleanup:
    tt_trainer_destroy(t);
    return status;
}

void tt_trainer_destroy(tt_trainer *t)
{
    if (!t) return;
    tt_prefetch_destroy(t->prefetch);
    tt_sampler_destroy(t->sampler);
    tt_tilecache_destroy(t->cache);
    tt_tilecache_destroy(t->val_cache);
    tt_dataset_destroy(t->dataset);
    free(t->train_items);
    free(t->val_items);
    free_device(t);
    tt_backend_destroy(t->be);
    if (t->log) fclose(t->log);
    free(t);
}

/* Forward, loss and backward of the n images already in unet->input and
 * labels; the loss blocks collect the sums and counts of the window.
 * dice_scale makes the Dice gradient come out normalised by images once the
 * arena is scaled by 1 / BCE items. */
static tt_status device_micro_batch(tt_trainer *t, int n, float dice_scale)
{
    tt_unet *u = t->unet;
    int h = t->opt.tile[0], w = t->opt.tile[1], c = t->model.classes;
    size_t pixels = (size_t)n * h * w;
    TT_TRY(tt_unet_forward(u, n, 1));
    tt_backend_phase(t->be, "loss");
    TT_TRY(tt_fill(t->be, u->dlogits, 0.0f, pixels * (size_t)c));
    tt_mem primary = tt_mem_of(t->loss_blocks);
    tt_mem dice = tt_mem_at(primary, TT_LOSS_VALUE_BYTES);
    tt_loss_desc d = tt_loss_desc_make(n, c, h, w);
    if (t->mask_kind == TT_MASK_CLASS_INDEX) {
        TT_TRY(tt_softmax_ce_forward(t->be, primary, u->logits, tt_mem_of(t->labels), &d));
        TT_TRY(tt_softmax_ce_backward(t->be, u->dlogits, u->logits, tt_mem_of(t->labels), &d, 1.0f));
    } else {
        TT_TRY(tt_bce_forward(t->be, primary, u->logits, tt_mem_of(t->labels), &d));
        TT_TRY(tt_bce_backward(t->be, u->dlogits, u->logits, tt_mem_of(t->labels), &d, 1.0f));
        if (t->opt.dice_weight > 0) {
            TT_TRY(tt_dice_forward(t->be, dice, u->logits, tt_mem_of(t->labels), &d,
                                   TT_DICE_SMOOTH_DEFAULT));
            TT_TRY(tt_dice_backward(t->be, u->dlogits, u->logits, tt_mem_of(t->labels), &d,
                                    TT_DICE_SMOOTH_DEFAULT, dice_scale));
        }
    }
    return tt_unet_backward(u);
}

static tt_status micro_batch(tt_trainer *t, const tt_batch *b, float dice_scale)
{
    size_t pixels = (size_t)b->batch_size * b->height * b->width;
    tt_backend_phase(t->be, "data");
    TT_TRY(tt_write(t->be, t->unet->input, b->image, pixels * 3 * sizeof(float)));
    TT_TRY(tt_write(t->be, tt_mem_of(t->labels), b->mask, pixels * (size_t)b->planes));
    return device_micro_batch(t, b->batch_size, dice_scale);
}

/* The end of a window whose gradients are normalised: the global norm and
 * a non-finite check reduced on the device, clipping, then one optimizer
 * step at the scheduled rate.  Non-finite gradients skip the update. */
static tt_status update_weights(tt_trainer *t, tt_step_report *r)
{
    const tt_train_options *o = &t->opt;
    tt_backend *be = t->be;
    tt_backend_phase(be, "optimizer");
    size_t nparams = t->unet->params.trainable_floats;
    tt_mem grads = tt_mem_of(t->unet->grad_buffer);
    /* the global norm and a non-finite check, reduced on the device */
    float reduced[2] = {0, 0};
    TT_TRY(tt_write(be, tt_mem_of(t->reduce_block), reduced, sizeof reduced));
    TT_TRY(tt_sum_squares(be, tt_mem_of(t->reduce_block), grads, nparams));
    TT_TRY(tt_count_nonfinite(be, tt_mem_at(tt_mem_of(t->reduce_block), sizeof(float)), grads, nparams));
    TT_TRY(tt_read(be, reduced, tt_mem_of(t->reduce_block), sizeof reduced));
    uint32_t nonfinite;
    memcpy(&nonfinite, &reduced[1], sizeof nonfinite);
    r->grad_norm = sqrt((double)reduced[0]);
    if (nonfinite || !isfinite(r->grad_norm)) {
        fprintf(stderr, "tiletrain: step %lld: %u non-finite gradient values; step skipped, "
                "weights unchanged\n", (long long)t->step, nonfinite);
        r->skipped = 1;
        t->skipped_steps++;
        return NULL;
    }
    /* torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1 */
    if (o->clip_norm > 0) {
        double coef = o->clip_norm / (r->grad_norm + 1e-6);
        if (coef < 1.0) TT_TRY(tt_scale(be, grads, (float)coef, nparams));
    }

    /* one optimizer step at the scheduled rate */
    t->updates++;
    r->lr = tt_schedule_lr(&t->schedule, o->lr, t->updates);
    tt_mem params = tt_mem_of(t->unet->param_buffer);
    if (t->use_sgd)
        TT_TRY(tt_sgd_update(be, params, grads, t->moment1 ? tt_mem_of(t->moment1) : (tt_mem){0},
                             nparams, &t->sgd, r->lr, t->updates));
    else
        TT_TRY(tt_adamw_update(be, params, grads, tt_mem_of(t->moment1), tt_mem_of(t->moment2),
                               nparams, &t->adamw, r->lr, t->updates));
    TT_TRY(tt_finish(be));
    return NULL;
}

tt_status tt_trainer_step(tt_trainer *t, tt_step_report *r)
{
    const tt_train_options *o = &t->opt;
    tt_backend *be = t->be;
    size_t nparams = t->unet->params.trainable_floats;
    tt_mem grads = tt_mem_of(t->unet->grad_buffer);
    double start = now(), waited = 0;
    memset(r, 0, sizeof *r);

    /* 1. a fresh window: zero the gradients and the loss sums */
    TT_TRY(tt_unet_zero_grads(t->unet));
    TT_TRY(tt_loss_clear(be, tt_mem_of(t->loss_blocks)));
    TT_TRY(tt_loss_clear(be, tt_mem_at(tt_mem_of(t->loss_blocks), TT_LOSS_VALUE_BYTES)));

    /* 2. accum micro-batches, each adding its gradient of the loss SUM */
    double planned_images = (double)o->accum * o->micro_batch;
    double planned_items = planned_images * t->model.classes * o->tile[0] * o->tile[1];
    float dice_scale = (float)(o->dice_weight * planned_items / planned_images);
    tt_sampler_state window_state = t->sampler_state;
    int64_t window_images = t->images_seen, window_micro_batches = t->micro_batches;
    for (int m = 0; m < o->accum && !t->finished; m++) {
        if (t->interrupt && *t->interrupt) {
            /* undo the partial window: the data position goes back to its start */
            t->sampler_state = window_state;
            t->images_seen = window_images;
            t->micro_batches = window_micro_batches;
            t->interrupted = 1;
            r->images = 0;
            return NULL;
        }
        tt_batch *b = NULL;
        TT_TRY(tt_prefetch_next(t->prefetch, &b));
        if (!b) t->finished = 1;
        if (!b) break; /* the data ran out: a short window */
        waited += b->wait_seconds;
        tt_status s = micro_batch(t, b, dice_scale);
        t->sampler_state = b->state_after;
        r->images += b->batch_size;
        t->images_seen += b->batch_size;
        tt_prefetch_release(t->prefetch, b);
        TT_TRY(s);
        t->micro_batches++;
        if (t->on_micro_batch) t->on_micro_batch(t->progress_ctx, m + 1, o->accum);
    }
    if (r->images == 0) {
        if (t->finished) return NULL; /* a finite run ended with the last window */
        return tt_error_new(TT_ERR_FORMAT, "the data stream gave no images for step %lld",
                            (long long)t->step + 1);
    }

    /* 3. normalise by the valid items of the whole window */
    tt_loss_value primary, dice = {0};
    TT_TRY(tt_loss_read(be, tt_mem_of(t->loss_blocks), "training loss", &primary));
    if (o->dice_weight > 0 && t->mask_kind == TT_MASK_MULTI_LABEL)
        TT_TRY(tt_loss_read(be, tt_mem_at(tt_mem_of(t->loss_blocks), TT_LOSS_VALUE_BYTES),
                            "Dice loss", &dice));
    t->step++;
    r->step = t->step;
    r->valid_items = primary.count;
    r->loss = primary.count ? primary.sum / primary.count : 0.0;
    if (dice.count) r->loss += o->dice_weight * dice.sum / dice.count;
    if (primary.count == 0) {
        fprintf(stderr, "tiletrain: step %lld: every pixel of the window is ignored (255); "
                "no update\n", (long long)t->step);
        r->skipped = 1;
        t->skipped_steps++;
        goto report;
    }
    TT_TRY(tt_scale(be, grads, (float)(1.0 / primary.count), nparams));
    if (o->save_grads[0] && (t->step == t->max_steps || t->finished))
        TT_TRY(tt_checkpoint_save_grads(t->unet, o->save_grads));

    /* 4 and 5: checks, clipping and the optimizer step */
    TT_TRY(update_weights(t, r));
report:
    r->seconds = now() - start;
    r->data_wait_seconds = waited;
    r->peak_bytes = be->mem.peak_total;
    if (t->log || t->log_echo) {
        tt_trainer_log(t,
                "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, "
                "\"skipped\": %s, \"images\": %lld, \"valid_items\": %lld, "
                "\"images_per_s\": %.4g, \"data_wait_s\": %.4g, \"peak_device_bytes\": %llu}\n",
                (long long)r->step, r->loss, r->lr, r->grad_norm, r->skipped ? "true" : "false",
                (long long)r->images, (long long)r->valid_items,
                r->seconds > 0 ? r->images / r->seconds : 0.0, r->data_wait_seconds,
                (unsigned long long)r->peak_bytes);
    }
    return NULL;
}

void tt_trainer_log(tt_trainer *t, const char *format, ...)
{
    FILE *sinks[2] = {t->log, t->log_echo};
    for (int i = 0; i < 2; i++) {
        if (!sinks[i]) continue;
        va_list ap;
        va_start(ap, format);
        vfprintf(sinks[i], format, ap);
        va_end(ap);
        fflush(sinks[i]);
    }
}

tt_status tt_trainer_save(tt_trainer *t, const char *path) { return tt_checkpoint_save(t, path); }

tt_status tt_trainer_validate(tt_trainer *t, tt_metrics **out)
{
    if (out) *out = NULL;
    if (!t->val_count) return NULL;
    tt_metrics *m = NULL;
    TT_TRY(tt_metrics_create(t->model.classes, &m));
    tt_validate_options vo = {.predict = tt_predict_options_default(), .kind = t->mask_kind,
                              .threshold = (float)t->opt.threshold, .min_size = t->opt.min_size};
    vo.predict.overlap = t->opt.val_overlap;
    char gallery[TT_OPT_STRING_MAX + 16];
    if (t->opt.out[0]) { /* pictures of the first images for report.html */
        snprintf(gallery, sizeof gallery, "%s/gallery", t->opt.out);
        tt_status made = tt_make_dirs(gallery); /* no folder: validation without pictures */
        if (!made) vo.gallery_dir = gallery;
        tt_status_free(made);
        vo.gallery_max = TT_GALLERY_MAX;
    }
    memcpy(vo.predict.mean, t->mean, sizeof t->mean);
    memcpy(vo.predict.std, t->std, sizeof t->std);
    tt_status status = tt_validate(t->unet, t->val_cache, t->val_items, t->val_count, &vo, m);
    if (status) {
        tt_metrics_destroy(m);
        return status;
    }
    double mean = tt_metrics_mean_dice(m);
    if (t->log || t->log_echo) {
        const char **names = malloc(sizeof *names * (size_t)t->model.classes);
        for (int c = 0; names && c < t->model.classes; c++)
            names[c] = c < tt_dataset_classes(t->dataset) ? tt_dataset_class_name(t->dataset, c) : "";
        char *json = tt_metrics_json(m, names);
        cJSON *parsed = json ? cJSON_Parse(json) : NULL; /* one line, for JSON Lines */
        char *line = parsed ? cJSON_PrintUnformatted(parsed) : NULL;
        tt_trainer_log(t, "{\"step\": %lld, \"validation\": %s}\n", (long long)t->step,
                       line ? line : "null");
        if (vo.gallery_dir) { /* the pictures, relative to OUT */
            cJSON *g = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(g, "gallery");
            cJSON_AddNumberToObject(g, "step", (double)t->step);
            for (int i = 0; i < t->val_count && i < vo.gallery_max; i++) {
                char file[1024], rel[1040];
                tt_validate_gallery_file(t->val_cache, t->val_items[i], file, sizeof file);
                snprintf(rel, sizeof rel, "gallery/%s", file);
                cJSON_AddItemToArray(files, cJSON_CreateString(rel));
            }
            char *text = cJSON_PrintUnformatted(g);
            if (text) tt_trainer_log(t, "%s\n", text);
            cJSON_free(text);
            cJSON_Delete(g);
        }
        cJSON_free(line);
        cJSON_Delete(parsed);
        free(json);
        free(names);
    }
    if (mean > t->best_mean_dice) {
        t->best_mean_dice = mean;
        if (t->opt.out[0]) {
            char path[TT_OPT_STRING_MAX + 32];
            snprintf(path, sizeof path, "%s/best.safetensors", t->opt.out);
            status = tt_checkpoint_save(t, path);
        }
    }
    if (out && !status) *out = m;
    else tt_metrics_destroy(m);
    return status;
}

tt_status tt_trainer_memory_probe(tt_backend *be, const tt_train_options *opt,
                                  const tt_unet_config *model, tt_mask_kind kind, int planes,
                                  tt_memstats *out)
{
    tt_trainer *t = calloc(1, sizeof *t);
    if (!t) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->opt = *opt;
    t->model = *model;
    t->mask_kind = kind;
    t->be = be;
    tt_memstats_reset_peaks(&be->mem);
    tt_status status = NULL;
    void *zeros = NULL;
    TT_CHECK(allocate_device(t, planes));
    int b = opt->micro_batch;
    size_t pixels = (size_t)b * opt->tile[0] * opt->tile[1];
    zeros = calloc(pixels * (planes > 3 ? (size_t)planes : 3), sizeof(float));
    if (!zeros) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_unet_zero_grads(t->unet));
    TT_CHECK(tt_loss_clear(be, tt_mem_of(t->loss_blocks)));
    TT_CHECK(tt_loss_clear(be, tt_mem_at(tt_mem_of(t->loss_blocks), TT_LOSS_VALUE_BYTES)));
    for (int m = 0; m < opt->accum && m < 2; m++) { /* a second micro-batch shows any growth */
        TT_CHECK(tt_write(be, t->unet->input, zeros, pixels * 3 * sizeof(float)));
        TT_CHECK(tt_write(be, tt_mem_of(t->labels), zeros, pixels * (size_t)planes));
        TT_CHECK(device_micro_batch(t, b, 1.0f));
    }
    TT_CHECK(tt_scale(be, tt_mem_of(t->unet->grad_buffer), 1.0f, t->unet->params.trainable_floats));
    tt_step_report r = {0};
    TT_CHECK(update_weights(t, &r));
    TT_CHECK(tt_finish(be));
    *out = be->mem;
    out->live = NULL;
cleanup:
    free(zeros);
    free_device(t);
    free(t);
    return status;
}

tt_status tt_trainer_bench(tt_backend *be, const tt_train_options *opt, const tt_unet_config *model,
                           int warmup, int steps, tt_bench_result *out)
{
    memset(out, 0, sizeof *out);
    tt_trainer *t = calloc(1, sizeof *t);
    if (!t) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->opt = *opt;
    t->model = *model;
    t->mask_kind = TT_MASK_MULTI_LABEL; /* as the peer: BCE over random 0/1 targets */
    t->be = be;
    tt_status status = NULL;
    int b = opt->micro_batch, c = model->classes;
    size_t pixels = (size_t)b * opt->tile[0] * opt->tile[1];
    float *image = malloc(pixels * 3 * sizeof *image);
    uint8_t *labels = malloc(pixels * (size_t)c);
    if (!image || !labels) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "bench: out of host memory");
        goto cleanup;
    }
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < pixels * 3; i++) image[i] = (float)((x = x * 6364136223846793005ULL + 1) >> 40) / 16777216.0f;
    for (size_t i = 0; i < pixels * (size_t)c; i++) labels[i] = ((x = x * 6364136223846793005ULL + 1) >> 63) & 1;
    TT_CHECK(allocate_device(t, c));
    for (int s = 0; s < warmup + steps; s++) {
        if (s == warmup) {
            TT_CHECK(tt_finish(be));
            if (be->profile) *be->profile = (tt_profile){.by_kernel = be->profile->by_kernel};
            out->seconds = -now();
        }
        TT_CHECK(tt_unet_zero_grads(t->unet));
        TT_CHECK(tt_loss_clear(be, tt_mem_of(t->loss_blocks)));
        for (int m = 0; m < opt->accum; m++) {
            tt_backend_phase(be, "data");
            TT_CHECK(tt_write(be, t->unet->input, image, pixels * 3 * sizeof(float)));
            TT_CHECK(tt_write(be, tt_mem_of(t->labels), labels, pixels * (size_t)c));
            TT_CHECK(device_micro_batch(t, b, 1.0f));
        }
        tt_loss_value v;
        TT_CHECK(tt_loss_read(be, tt_mem_of(t->loss_blocks), "bench loss", &v));
        TT_CHECK(tt_scale(be, tt_mem_of(t->unet->grad_buffer), 1.0f / (float)(v.count ? v.count : 1),
                          t->unet->params.trainable_floats));
        tt_step_report r = {0};
        TT_CHECK(update_weights(t, &r));
        TT_CHECK(tt_finish(be));
    }
    out->seconds += now();
    out->images = (double)steps * opt->accum * b;
    out->flops_per_image = 3.0 * tt_unet_flops_per_image(t->unet);
    out->peak_bytes = be->mem.peak_total;
cleanup:
    free(image);
    free(labels);
    free_device(t);
    free(t);
    return status;
}
