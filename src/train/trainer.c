/*
 * The training loop: data -> forward -> loss -> backward, N times, then one
 * normalised, checked, clipped optimizer step.  Read tt_trainer_step() top
 * to bottom: it is the whole algorithm.
 */
#include "train/trainer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/fs.h"
#include "core/status.h"
#include "model/weights.h"
#include "ops/dropout.h"
#include "train/augment_gallery.h"
#include "train/recipe.h"
#include "train/train_log.h"
#include "train/validate.h"
#include "train/validate_raster.h"

/* A spoiled tile-cache entry, rebuilt: said on stderr (the prefetch
 * thread's; one line, so it does not interleave). */
static void cache_warning(void *ctx, const char *message)
{
    (void)ctx;
    fprintf(stderr, "tiletrain: warning: %s\n", message);
}

/* A raster set's crop sampler: read straight from the rasters' tiles,
 * without the tile cache (data/raster_sampler.h says why). */
static tt_status open_rasters(tt_trainer *t)
{
    const tt_train_options *o = &t->opt;
    tt_raster_sampler_config rc = {.tile_width = o->tile[1], .tile_height = o->tile[0],
                                   .seed = o->seed, .no_augment = o->no_augment,
                                   .augment = t->augment, .stride = t->dist.size,
                                   .fg_fraction = o->fg_fraction,
                                   .mean = t->bands.mean, .std = t->bands.std};
    if (o->val_fraction > 0) { /* whole scenes, or blocks of the one scene */
        TT_TRY(tt_raster_holdout_plan(t->rasters, o->val_fraction, o->seed, o->tile[1],
                                      o->tile[0], &t->holdout));
        t->val_count = t->holdout.region_count;
        rc.holdout = &t->holdout;
    }
    TT_TRY(tt_raster_sampler_create(&rc, t->rasters, &t->raster_sampler));
    tt_sampler_state first;
    tt_raster_sampler_get_state(t->raster_sampler, &first);
    first.position = t->dist.rank; /* rank r of K takes crops r, r + K, ... */
    t->counters.sampler = first;
    return tt_raster_sampler_set_state(t->raster_sampler, &first);
}

/* Crops in an epoch of the run's stream. */
static int64_t epoch_length(const tt_trainer *t)
{
    return t->rasters ? tt_raster_sampler_epoch_length(t->raster_sampler)
                      : tt_sampler_epoch_length(t->sampler);
}

/* The state's place in the whole stream, and the state `crops` after it. */
static int64_t stream_index(const tt_trainer *t, const tt_sampler_state *state)
{
    return state->epoch * epoch_length(t) + state->position;
}

static tt_sampler_state state_after(const tt_trainer *t, tt_sampler_state state, int64_t crops)
{
    int64_t index = stream_index(t, &state) + crops;
    state.epoch = index / epoch_length(t);
    state.position = index % epoch_length(t);
    return state;
}

/* The recipe's data set: its tile cache, the split and the crop sampler. */
static tt_status open_data(tt_trainer *t)
{
    const tt_train_options *o = &t->opt;
    if (t->rasters) return open_rasters(t);
    t->source = tt_dataset_source(t->dataset);
    tt_tilecache_config cc = {.dir = o->cache_dir[0] ? o->cache_dir : NULL,
                              .max_pixels = (uint64_t)o->max_pixels, .warn = cache_warning};
    TT_TRY(tt_tilecache_create(&cc, &t->source, &t->cache));
    if (o->val_list[0]) {
        TT_TRY(tt_split_list(&t->source, o->val_list, &t->train_items, &t->train_count,
                             &t->val_items, &t->val_count));
    } else if (o->val_fraction > 0) {
        TT_TRY(tt_split_fraction(&t->source, o->val_fraction, o->seed, &t->train_items,
                                 &t->train_count, &t->val_items, &t->val_count));
    } else {
        t->train_count = t->source.count;
        t->train_items = tt_malloc(sizeof *t->train_items * (size_t)t->train_count);
        if (!t->train_items) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        for (int i = 0; i < t->train_count; i++) t->train_items[i] = i;
    }
    tt_sampler_config sc = {.tile_width = o->tile[1], .tile_height = o->tile[0],
                            .fg_fraction = o->fg_fraction, .no_shuffle = o->no_shuffle,
                            .no_augment = o->no_augment, .seed = o->seed,
                            .augment = t->augment, .stride = t->dist.size};
    if (t->val_count) TT_TRY(tt_tilecache_create(&cc, &t->source, &t->val_cache));
    TT_TRY(tt_sampler_create(&sc, t->cache, t->train_items, t->train_count, &t->sampler));
    /* rank r of K takes crops r, r + K, ... of the one stream a single process would take */
    tt_sampler_state first;
    tt_sampler_get_state(t->sampler, &first);
    first = tt_sampler_state_after(t->sampler, first, t->dist.rank);
    t->counters.sampler = first;
    return tt_sampler_set_state(t->sampler, &first);
}

/* OUT/augment: the first crops the run's augmentation makes, drawn by a
 * sampler of their own (the training stream untouched). */
static tt_status augment_gallery(tt_trainer *t)
{
    tt_sampler_config sc = {.tile_width = t->opt.tile[1], .tile_height = t->opt.tile[0],
                            .fg_fraction = t->opt.fg_fraction, .seed = t->opt.seed,
                            .augment = t->augment};
    char dir[TT_OPT_STRING_MAX + 16];
    snprintf(dir, sizeof dir, "%s/augment", t->opt.out);
    return tt_error_prefix(tt_augment_gallery(&sc, t->cache, t->train_items, t->train_count, dir,
                                              TT_AUGMENT_GALLERY_MAX),
                           "the augmentation gallery");
}

/* Crops of a finite run (--epochs), 0 for an endless stream. */
static int64_t planned_crops(const tt_trainer *t)
{
    if (t->opt.epochs <= 0) return 0;
    return (int64_t)t->opt.epochs * epoch_length(t);
}

/* This rank's crops left of a finite run (0 for an endless stream, -1 for
 * none left): rank r of K takes every K-th crop of the stream from r. */
static int64_t crops_left(const tt_trainer *t)
{
    int64_t total = planned_crops(t);
    if (!total) return 0;
    int64_t next = stream_index(t, &t->counters.sampler);
    return next < total ? (total - next + t->dist.size - 1) / t->dist.size : -1;
}

/* One window's micro-batches, held from the prefetch until it is done. */
typedef struct tt_window {
    tt_batch **batches; /* (accum), the first count filled */
    int count;
    tt_loss_counts counts; /* this rank's, then (run_window) every rank's */
} tt_window;

static tt_status start_prefetch(tt_trainer *t)
{
    tt_prefetch_config pc = {.batch_size = t->opt.micro_batch, .height = t->opt.tile[0],
                             .width = t->opt.tile[1],
                             .planes = t->rasters ? 1 : tt_tilecache_planes(t->cache),
                             .channels = t->model.in_channels,
                             .queue_depth = t->opt.accum + 1, .normalize = t->normalize};
    memcpy(pc.mean, t->mean, sizeof pc.mean);
    memcpy(pc.std, t->std, sizeof pc.std);
    int64_t left = crops_left(t);
    if (left < 0) { /* alone: the run is over; data parallel: the first window says so */
        t->data_done = 1;
        t->finished = t->dist.size == 1;
        return NULL;
    }
    if (t->rasters) {
        tt_raster_sampler_limit(t->raster_sampler, left);
        return tt_prefetch_create(&pc, tt_raster_sampler_fill, t->raster_sampler, &t->prefetch);
    }
    return tt_prefetch_create_sampler(&pc, t->sampler, left, &t->prefetch);
}

/* The run's length in optimizer steps: --steps, else all of --epochs, else 100. */
static void plan_steps(tt_trainer *t)
{
    int64_t crops = planned_crops(t);
    int64_t per_window = (int64_t)t->opt.micro_batch * t->dist.size;
    int64_t batches = (crops + per_window - 1) / per_window;
    if (t->opt.steps > 0) t->max_steps = t->opt.steps;
    else if (batches) t->max_steps = (batches + t->opt.accum - 1) / t->opt.accum;
    else t->max_steps = 100;
    if (t->opt.steps <= 0) t->opt.steps = (int)t->max_steps;
}

static tt_status validation_lines(FILE *f, void *ctx)
{
    const tt_trainer *t = ctx;
    if (t->rasters) { /* scenes or blocks: --val-fraction and --seed make them again */
        char held[1024];
        tt_raster_holdout_describe(&t->holdout, t->rasters, held, sizeof held);
        fprintf(f, "# held out for validation (--val-fraction %g --seed %llu): %s\n",
                t->opt.val_fraction, (unsigned long long)t->opt.seed, held);
        for (int i = 0; i < t->holdout.region_count; i++) {
            const tt_raster_region *r = &t->holdout.regions[i];
            fprintf(f, "%s %d %d %d %d\n", tt_raster_set_name(t->rasters, r->scene), r->x0,
                    r->y0, r->width, r->height);
        }
        return NULL;
    }
    fprintf(f, "# validation images of this run (tiletrain train --val-list reads this)\n");
    for (int i = 0; i < t->val_count; i++)
        fprintf(f, "%s\n", t->source.name(t->source.ctx, t->val_items[i]));
    return NULL;
}

/* OUT/validation.txt: the held-out images, one name per line (what
 * --val-list reads, so a later run can keep the same split); written
 * whole or not at all. */
static tt_status write_validation_list(tt_trainer *t)
{
    char path[TT_OPT_STRING_MAX + 32];
    snprintf(path, sizeof path, "%s/validation.txt", t->opt.out);
    return tt_file_write_atomic(path, validation_lines, t);
}

/* Weights (--init) or the whole state (--resume) from a file. */
static tt_status restore(tt_trainer *t)
{
    const tt_train_options *opt = &t->opt;
    if (opt->init[0]) {
        tt_weights_report report;
        TT_TRY(tt_weights_init(t->engine->model, opt->init, opt->init_prefix, &report));
        TT_TRY(tt_step_ema_reset(t->engine)); /* --ema: the average starts at these */
        char text[2048];
        tt_weights_report_text(&report, text, sizeof text);
        if (t->dist.rank == 0) fprintf(stderr, "tiletrain: --init %s: %s\n", opt->init, text);
    }
    if (!opt->resume[0]) return NULL;
    int world = 1;
    int64_t next = -1;
    TT_TRY(tt_checkpoint_resume(t->engine, &t->counters, opt->resume, t->dist.rank, &world, &next));
    /* this rank's place in the stream: its own when the world is the same,
     * else rank 0's plus the rank (the stream goes on where it stopped) */
    tt_sampler_state mine = t->counters.sampler;
    if (world == t->dist.size && next >= 0)
        mine = state_after(t, (tt_sampler_state){mine.seed, 0, 0}, next);
    else mine = state_after(t, mine, t->dist.rank);
    if (world != t->dist.size && t->dist.rank == 0)
        fprintf(stderr, "tiletrain: --resume %s: written by %d rank%s, continued by %d: the data "
                "stream goes on where it stopped, with %d x micro-batch %d x accum %d images "
                "per step now\n", opt->resume, world, world == 1 ? "" : "s", t->dist.size,
                t->dist.size, opt->micro_batch, opt->accum);
    t->counters.sampler = mine;
    return tt_error_prefix(t->rasters ? tt_raster_sampler_set_state(t->raster_sampler, &mine)
                                      : tt_sampler_set_state(t->sampler, &mine),
                           "--resume %s (give the same --seed and data)", opt->resume);
}

tt_status tt_trainer_create(const tt_train_options *opt, tt_trainer **out)
{
    *out = NULL;
    tt_recipe *r = tt_malloc(sizeof *r);
    if (!r) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_recipe_init(r);
    r->opt = *opt;
    tt_status status = tt_recipe_resolve(r, NULL);
    if (!status) status = tt_trainer_create_ranked(r, NULL, out);
    tt_recipe_release(r);
    free(r);
    return status;
}

tt_status tt_trainer_create_ranked(tt_recipe *r, const tt_dist *dist, tt_trainer **out)
{
    *out = NULL;
    tt_trainer *t = tt_calloc(1, sizeof *t);
    if (!t) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->log_fd = -1;
    const tt_train_options *opt = &r->opt;
    t->opt = *opt;
    t->dist = dist ? *dist : tt_dist_single();
    t->counters.validation.best = -1;
    t->dataset = r->dataset, r->dataset = NULL;
    t->rasters = r->rasters, r->rasters = NULL;
    t->bands = r->bands;
    t->be = r->be, r->be = NULL;
    t->model = r->model;
    t->mask_kind = r->mask_kind;
    t->normalize = r->normalize;
    memcpy(t->mean, r->mean, sizeof t->mean);
    memcpy(t->std, r->std, sizeof t->std);
    t->augment = r->augment;
    snprintf(t->precision_reason, sizeof t->precision_reason, "%s", r->precision_reason);
    tt_status status = NULL;
    if ((!t->dataset && !t->rasters) || !t->be) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "a trainer takes a resolved recipe "
                              "(tt_recipe_resolve), once");
        goto cleanup;
    }
    TT_CHECK(open_data(t));
    int planes = t->rasters ? 1 : tt_tilecache_planes(t->cache);
    TT_CHECK(tt_loss_scale_start(opt->loss_scale, t->model.precision, &t->counters.loss_scale));
    t->counters.loss_scale.interval = opt->loss_scale_interval;
    plan_steps(t);
    TT_CHECK(tt_recipe_schedule(&t->opt, &t->schedule));
    tt_step_config sc = tt_recipe_step(&t->opt, &t->model, t->mask_kind, planes);
    sc.dist = t->dist.size > 1 ? &t->dist : NULL;
    sc.norm_dist = opt->sync_bn ? &t->dist : NULL;
    TT_CHECK(tt_step_create(t->be, &sc, &t->engine));
    TT_CHECK(tt_dp_create(&t->dist, t->engine, &t->dp));
    TT_CHECK(restore(t));
    if (t->dp) TT_CHECK(tt_dp_check_weights(t->dp, t->counters.step)); /* the same start */
    int gallery = 0;
    if (opt->out[0] && t->dist.rank == 0 && !opt->no_augment && !opt->resume[0] && !t->rasters) {
        TT_CHECK(augment_gallery(t));
        gallery = TT_AUGMENT_GALLERY_MAX;
    }
    TT_CHECK(start_prefetch(t));
    if (opt->out[0] && t->dist.rank == 0) {
        TT_CHECK(tt_make_dirs(opt->out));
        int stale = tt_remove_stale_temporaries(opt->out);
        if (stale)
            fprintf(stderr, "tiletrain: removed %d temporary file(s) that a stopped run left in %s\n",
                    stale, opt->out);
        TT_CHECK(write_validation_list(t));
        snprintf(t->log_path, sizeof t->log_path, "%s/train.jsonl", opt->out);
        t->log_fd = open(t->log_path, O_WRONLY | O_CREAT | O_APPEND | (opt->resume[0] ? 0 : O_TRUNC),
                         0666);
        if (t->log_fd < 0) {
            status = tt_error_new(TT_ERR_IO, "cannot write '%s': %s", t->log_path, strerror(errno));
            goto cleanup;
        }
    }
    t->log_echo = opt->log_format == TT_LOG_JSONL && t->dist.rank == 0 ? stdout : NULL;
    if (t->dist.rank == 0) t->on_log_line = r->on_log_line, t->log_ctx = r->log_ctx;
    if (tt_trainer_logging(t)) tt_train_log_start(t);
    if (gallery && tt_trainer_logging(t)) tt_train_log_augment(t, gallery);
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
    tt_raster_sampler_destroy(t->raster_sampler);
    tt_raster_set_destroy(t->rasters);
    tt_raster_holdout_free(&t->holdout);
    tt_tilecache_destroy(t->cache);
    tt_tilecache_destroy(t->val_cache);
    tt_dataset_destroy(t->dataset);
    free(t->train_items);
    free(t->val_items);
    free(t->postprocess);
    tt_dp_destroy(t->dp);
    tt_step_destroy(t->engine);
    tt_backend_destroy(t->be);
    if (t->log_fd >= 0) close(t->log_fd);
    tt_status_free(t->log_failed);
    free(t->log_pending);
    free(t);
}

/* The window's end: norm, checks, clipping and the optimizer update. */
static tt_status update(tt_trainer *t, tt_step_report *r)
{
    tt_update_result u;
    tt_recipe_freeze(&t->opt, t->engine->optimizer, t->counters.step);
    TT_TRY(tt_step_update(t->engine, &t->schedule, t->opt.lr, &u));
    r->grad_norm = u.grad_norm;
    r->lr = u.lr;
    tt_loss_scale *ls = &t->counters.loss_scale;
    double used = ls->scale;
    int changed = tt_loss_scale_update(ls, u.skipped);
    if (u.skipped) {
        r->skipped = 1;
        t->counters.skipped_steps++;
        if (used > 0 && t->dist.rank == 0)
            fprintf(stderr, "tiletrain: step %lld: the gradients overflowed at loss scale %g (%u "
                    "non-finite values): window skipped, weights unchanged, scale %s %g\n",
                    (long long)t->counters.step, used, u.nonfinite, changed ? "halved to" : "stays",
                    ls->scale);
        else if (used <= 0)
            fprintf(stderr, "tiletrain: step %lld: %u non-finite gradient values; step skipped, "
                    "weights unchanged\n", (long long)t->counters.step, u.nonfinite);
    }
    return NULL;
}

/* 2a. this rank's micro-batches of the window, fetched before any is
 * computed: every loss term's normaliser is the whole window's count. */
static tt_status gather_window(tt_trainer *t, tt_window *w, double *waited)
{
    const tt_train_options *o = &t->opt;
    const tt_step_config *c = &t->engine->config;
    size_t hw = (size_t)o->tile[0] * o->tile[1];
    while (w->count < o->accum && !t->data_done) {
        tt_batch *b = NULL;
        TT_TRY(tt_prefetch_next(t->prefetch, &b));
        if (!b) {
            t->data_done = 1; /* the data ran out: a short window */
            break;
        }
        *waited += b->wait_seconds;
        w->batches[w->count++] = b;
        tt_loss_count(&w->counts, b->mask, b->batch_size, c->planes, hw, c->model.classes,
                      c->mask_kind, TT_LOSS_IGNORE_DEFAULT,
                      c->class_weighted ? c->class_weights : NULL);
    }
    return NULL;
}

/* The window's batches back to the producer. */
static void release_window(tt_trainer *t, tt_window *w)
{
    for (int m = 0; m < w->count; m++)
        if (w->batches[m]) tt_prefetch_release(t->prefetch, w->batches[m]);
    free(w->batches);
    w->batches = NULL;
    w->count = 0;
}

/* Batch b's crops for the model's dropout masks (model.h): the same in
 * its window-sums forward as in its training one, after a resume, and
 * whatever the micro-batch, window and ranks. */
static void dropout_crops(tt_trainer *t, const tt_batch *b)
{
    t->engine->model->dropout_seed = tt_dropout_run_seed(t->opt.seed);
    t->engine->model->dropout_first = b->first_crop;
    t->engine->model->dropout_stride = t->dist.size;
}

/* 2b. a term reduced over the window: the forward of every micro-batch for
 * the window's sums (over the ranks), before any backward. */
static tt_status window_sums(tt_trainer *t, tt_window *w)
{
    for (int m = 0; m < w->count; m++) {
        tt_batch *b = w->batches[m];
        TT_TRY(tt_step_upload(t->engine, b->image, b->mask, b->batch_size));
        dropout_crops(t, b);
        TT_TRY(tt_step_window_sums(t->engine, b->batch_size));
    }
    return NULL;
}

/* 2c. forward, loss and backward of each micro-batch, adding its gradient
 * of the window's loss; *interrupted when an interrupt (alone) stopped
 * them. */
static tt_status run_micro_batches(tt_trainer *t, tt_window *w, tt_step_report *r,
                                   int *micro_batches, int *interrupted)
{
    tt_train_counters *c = &t->counters;
    float loss_scale = (float)tt_loss_scale_factor(&c->loss_scale); /* one for the window */
    for (int m = 0; m < w->count; m++) {
        if (t->interrupt && *t->interrupt && t->dist.size == 1) {
            *interrupted = 1;
            return NULL;
        }
        tt_batch *b = w->batches[m];
        TT_TRY(tt_step_upload(t->engine, b->image, b->mask, b->batch_size));
        dropout_crops(t, b);
        TT_TRY(tt_step_micro_batch(t->engine, b->batch_size, &w->counts, loss_scale));
        c->sampler = b->state_after;
        r->images += b->batch_size;
        (*micro_batches)++;
        if (t->on_micro_batch) t->on_micro_batch(t->progress_ctx, m + 1, t->opt.accum);
    }
    return NULL;
}

/* An interrupted window is undone: the data position goes back to its
 * start, so a checkpoint now resumes there. */
static tt_status drop_window(tt_trainer *t, tt_step_report *r, const tt_train_counters *start)
{
    t->counters = *start;
    t->interrupted = 1;
    r->images = 0;
    return NULL;
}

/* What the window's normalisation needs, summed over the ranks: before
 * its micro-batches, the counts; after, the loss sums (two per term). */
enum { COUNT_ITEMS, COUNT_WEIGHTS, COUNT_IMAGES, COUNT_FIELDS };
enum { SUM_IMAGES, SUM_MICRO_BATCHES, SUM_INTERRUPTED, SUM_DONE, SUM_TERMS,
       SUM_FIELDS = SUM_TERMS + 2 * TT_LOSS_TERMS_MAX };

/* 2. the window on this rank: gathered, counted over every rank, then its
 * passes. */
static tt_status run_window(tt_trainer *t, tt_window *w, tt_step_report *r, double *waited,
                            int *micro_batches, int *interrupted)
{
    const tt_dist *dist = &t->dist;
    w->batches = tt_calloc((size_t)t->opt.accum, sizeof *w->batches);
    tt_status failed = w->batches ? gather_window(t, w, waited)
                                  : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    double counts[COUNT_FIELDS] = {w->counts.items, w->counts.weights, w->counts.images};
    TT_TRY(tt_dp_sum_window(dist, counts, COUNT_FIELDS, failed));
    w->counts = (tt_loss_counts){counts[COUNT_ITEMS], counts[COUNT_WEIGHTS], counts[COUNT_IMAGES]};
    if (tt_loss_spec_two_pass(&t->engine->config.loss) && counts[COUNT_IMAGES] > 0) {
        double agreed = 0;
        TT_TRY(tt_dp_sum_window(dist, &agreed, 1, window_sums(t, w)));
        TT_TRY(tt_step_window_finish(t->engine, dist->size > 1 ? dist : NULL));
    }
    return run_micro_batches(t, w, r, micro_batches, interrupted);
}

/* The reported loss: each term's sum over its normaliser (into
 * r->term_loss), weighted. */
static double window_loss(const tt_trainer *t, const double *sums, const tt_loss_counts *counts,
                          tt_step_report *r)
{
    const tt_step_config *c = &t->engine->config;
    double loss = 0;
    for (int i = 0; i < c->loss.count; i++) {
        const tt_loss_term *term = &c->loss.terms[i];
        double sum = sums[SUM_TERMS + 2 * i], count = sums[SUM_TERMS + 2 * i + 1];
        /* a ratio of the window's sums: each rank added the same value once */
        double n = tt_loss_term_normaliser(term, c->mask_kind) == TT_NORMALISE_ONE
                       ? count
                       : tt_loss_counts_of(counts, term, c->mask_kind);
        r->term_loss[i] = n > 0 ? sum / n : 0;
        loss += term->weight * r->term_loss[i];
    }
    r->terms = c->loss.count;
    return loss;
}

tt_status tt_trainer_step(tt_trainer *t, tt_step_report *r)
{
    tt_step *engine = t->engine;
    tt_train_counters *c = &t->counters;
    double start = tt_seconds(), waited = 0;
    memset(r, 0, sizeof *r);

    /* 1. a fresh window: zero the gradients and the loss sums */
    TT_TRY(tt_step_begin(engine));

    /* 2. the window's micro-batches on this rank */
    tt_train_counters window_start = *c;
    int interrupted = 0, micro_batches = 0;
    tt_window w = {0};
    tt_status failed = run_window(t, &w, r, &waited, &micro_batches, &interrupted);
    tt_loss_counts counts = w.counts;
    release_window(t, &w);
    if (interrupted) return drop_window(t, r, &window_start);

    /* 3. the window's sums over every rank: loss per term, images */
    tt_loss_value values[TT_LOSS_TERMS_MAX] = {{0}};
    if (!failed) failed = tt_step_losses(engine, values);
    double sums[SUM_FIELDS] = {
        [SUM_IMAGES] = (double)r->images, [SUM_MICRO_BATCHES] = micro_batches,
        [SUM_INTERRUPTED] = t->dist.size > 1 && t->interrupt && *t->interrupt,
        [SUM_DONE] = t->data_done};
    for (int i = 0; i < TT_LOSS_TERMS_MAX; i++) {
        sums[SUM_TERMS + 2 * i] = values[i].sum;
        sums[SUM_TERMS + 2 * i + 1] = values[i].count;
    }
    tt_status settled = tt_dp_sum_window(&t->dist, sums, SUM_FIELDS, failed);
    if (settled) {
        t->stopped_together = t->dist.size > 1;
        return settled;
    }
    if (sums[SUM_INTERRUPTED] > 0) /* data parallel: every rank drops the window */
        return drop_window(t, r, &window_start);
    t->finished = sums[SUM_DONE] >= t->dist.size;
    r->images = (int64_t)sums[SUM_IMAGES];
    c->images_seen += r->images;
    c->micro_batches += (int64_t)sums[SUM_MICRO_BATCHES];
    if (r->images == 0) {
        if (t->finished) return NULL; /* a finite run ended with the last window */
        return tt_error_new(TT_ERR_FORMAT, "the data stream gave no images for step %lld",
                            (long long)c->step + 1);
    }

    /* 4. each term came normalised by the window's counts */
    c->step++;
    r->step = c->step;
    r->valid_items = (int64_t)counts.items;
    r->loss = window_loss(t, sums, &counts, r);
    if (counts.items == 0) {
        fprintf(stderr, "tiletrain: step %lld: every pixel of the window is ignored (255); "
                "no update\n", (long long)c->step);
        r->skipped = 1;
        c->skipped_steps++;
    } else {
        if (t->dp) { /* every rank's gradient sums, added */
            TT_TRY(tt_dp_sum_grads(t->dp));
            r->sum_seconds = t->dp->sum_seconds;
        }
        /* the loss scale undone: a power of two, so the sums come out as unscaled */
        r->loss_scale = c->loss_scale.scale;
        double factor = tt_loss_scale_factor(&c->loss_scale);
        if (factor != 1) TT_TRY(tt_step_scale_grads(engine, 1.0 / factor));
        if (t->opt.save_grads[0] && t->dist.rank == 0 && (c->step == t->max_steps || t->finished))
            TT_TRY(tt_weights_save_grads(engine->model, t->opt.save_grads));
        /* 5 and 6: checks, clipping and the optimizer step */
        TT_TRY(update(t, r));
    }
    if (t->dp && t->opt.check_weights_every > 0 && c->step % t->opt.check_weights_every == 0)
        TT_TRY(tt_dp_check_weights(t->dp, c->step));
    r->seconds = tt_seconds() - start;
    r->data_wait_seconds = waited;
    r->peak_bytes = t->be->mem.peak_total;
    if (tt_trainer_logging(t)) tt_train_log_step(t, r);
    return NULL;
}

/* Data parallel: the running statistics made one, the weights compared,
 * and every rank's place in the stream, into *next (free()). */
static tt_status gather_ranks(tt_trainer *t, int64_t **next)
{
    *next = NULL;
    if (!t->dp) return NULL;
    if (!t->opt.sync_bn) TT_TRY(tt_dp_average_running_stats(t->dp));
    TT_TRY(tt_dp_check_weights(t->dp, t->counters.step));
    uint64_t mine = (uint64_t)stream_index(t, &t->counters.sampler);
    uint64_t *all = tt_malloc(sizeof *all * (size_t)t->dist.size);
    if (!all) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    tt_status s = tt_dist_gather_u64(&t->dist, &mine, 1, all);
    if (s) {
        free(all);
        return s;
    }
    *next = (int64_t *)all;
    return NULL;
}

tt_status tt_trainer_save(tt_trainer *t, const char *path)
{
    int64_t *next = NULL;
    TT_TRY(gather_ranks(t, &next));
    if (t->dist.rank != 0) {
        free(next);
        return NULL;
    }
    int named = t->dataset ? tt_dataset_classes(t->dataset) : 0;
    const char **names = tt_malloc(sizeof *names * (size_t)(named ? named : 1));
    if (!names) {
        free(next);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "checkpoint: out of host memory");
    }
    for (int c = 0; c < named; c++) names[c] = tt_dataset_class_name(t->dataset, c);
    tt_checkpoint_data d = {.named_classes = named, .class_names = names,
                            .mask_kind = t->mask_kind, .normalize = t->normalize,
                            .ranks = {t->dist.size, next}, .postprocess = t->postprocess,
                            .bands = t->bands.count ? &t->bands : NULL};
    memcpy(d.mean, t->mean, sizeof d.mean);
    memcpy(d.std, t->std, sizeof d.std);
    tt_status status = tt_checkpoint_save(t->engine, &t->counters, &d, path);
    free(names);
    free(next);
    return status;
}

/* The post-processing search over this validation's images, against the
 * run's --threshold and --min-size. */
static tt_status start_search(tt_trainer *t, tt_pp_search **out)
{
    double area = 0;
    for (int i = 0; i < t->val_count; i++) {
        int w, h;
        TT_TRY(tt_tilecache_item_size(t->val_cache, t->val_items[i], &w, &h));
        area += (double)w * h / t->val_count;
    }
    return tt_pp_search_create(t->model.classes, t->mask_kind == TT_MASK_MULTI_LABEL,
                               (float)t->opt.threshold, t->opt.min_size, area, out);
}

/* The search's choices: kept for the checkpoints, and a line of the log. */
static tt_status keep_search(tt_trainer *t, const tt_pp_search *search)
{
    int classes = t->model.classes;
    if (!t->postprocess && !(t->postprocess = tt_calloc((size_t)classes, sizeof *t->postprocess)))
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    double mean, default_mean;
    tt_pp_search_result(search, t->postprocess, &mean, &default_mean);
    if (tt_trainer_logging(t))
        tt_train_log_postprocess(t, mean, default_mean, tt_pp_search_seconds(search));
    return NULL;
}

/* Rank 0's validation of a raster set: the held-out scenes or blocks,
 * streamed (train/validate_raster.h), logged; no gallery, no search. */
static tt_status validate_rasters_here(tt_trainer *t, tt_metrics **out)
{
    const tt_raster_holdout *h = &t->holdout;
    tt_predict_options po = tt_predict_options_default();
    po.overlap = t->opt.val_overlap;
    po.tta = t->opt.tta;
    tt_metrics *m = NULL, *raw = NULL;
    TT_TRY(tt_metrics_create(t->model.classes, &m));
    tt_status status = NULL;
    if (t->engine->ema) { /* --ema: the raw weights scored too, beside the average */
        status = tt_metrics_create(t->model.classes, &raw);
        if (!status)
            status = tt_validate_raster(t->engine->model, t->rasters, h->regions, h->region_count,
                                        &t->bands, t->opt.mask_nodata, &po, raw);
        if (!status) status = tt_step_use_ema(t->engine, 1);
    }
    if (!status)
        status = tt_validate_raster(t->engine->model, t->rasters, h->regions, h->region_count,
                                    &t->bands, t->opt.mask_nodata, &po, m);
    tt_status back = tt_step_use_ema(t->engine, 0); /* its own weights, whatever happened */
    if (!status) status = back;
    else tt_status_free(back);
    if (!status && tt_trainer_logging(t)) tt_train_log_validation(t, m, 0, raw);
    tt_metrics_destroy(raw);
    if (status) {
        tt_metrics_destroy(m);
        return status;
    }
    *out = m;
    return NULL;
}

/* Rank 0's validation: the metrics of the validation split, logged, and
 * the post-processing search on the same predictions. */
static tt_status validate_here(tt_trainer *t, tt_metrics **out)
{
    if (t->rasters) return validate_rasters_here(t, out);
    tt_metrics *m = NULL;
    TT_TRY(tt_metrics_create(t->model.classes, &m));
    tt_validate_options vo = {.predict = tt_predict_options_default(), .kind = t->mask_kind,
                              .threshold = (float)t->opt.threshold, .min_size = t->opt.min_size};
    vo.predict.overlap = t->opt.val_overlap;
    vo.predict.tta = t->opt.tta;
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
    tt_metrics *raw = NULL;
    tt_status status = NULL;
    tt_pp_search *search = NULL;
    status = start_search(t, &search);
    if (t->engine->ema && !status) { /* --ema: the raw weights scored too, beside the average */
        tt_validate_options plain = vo;
        plain.gallery_dir = NULL;
        status = tt_metrics_create(t->model.classes, &raw);
        if (!status)
            status = tt_validate(t->engine->model, t->val_cache, t->val_items, t->val_count,
                                 &plain, raw);
        if (!status) status = tt_step_use_ema(t->engine, 1);
    }
    vo.search = search; /* on the weights the run scores */
    if (!status)
        status = tt_validate(t->engine->model, t->val_cache, t->val_items, t->val_count, &vo, m);
    tt_status back = tt_step_use_ema(t->engine, 0); /* its own weights, whatever happened */
    if (!status) status = back;
    else tt_status_free(back);
    if (!status && tt_trainer_logging(t))
        tt_train_log_validation(t, m, vo.gallery_dir ? vo.gallery_max : 0, raw);
    if (!status) status = keep_search(t, search);
    tt_pp_search_destroy(search);
    tt_metrics_destroy(raw);
    if (status) {
        tt_metrics_destroy(m);
        return status;
    }
    *out = m;
    return NULL;
}

/* OUT/<name>.safetensors, a checkpoint of now. */
static tt_status save_as(tt_trainer *t, const char *name)
{
    char path[TT_OPT_STRING_MAX + 96];
    snprintf(path, sizeof path, "%s/%.63s.safetensors", t->opt.out, name);
    return tt_trainer_save(t, path);
}

/* --keep-best K: OUT/best-step<N>.safetensors for the K best validations
 * so far, the one that falls out deleted (rank 0; every rank saves). */
static tt_status keep_best(tt_trainer *t, double score)
{
    tt_validation_state *v = &t->counters.validation;
    int k = t->opt.keep_best, at = v->kept;
    while (at > 0 && score > v->keep[at - 1].score) at--;
    if (at >= k) return NULL;
    int64_t dropped = v->kept == k ? v->keep[k - 1].step : -1;
    if (v->kept < k) v->kept++;
    memmove(&v->keep[at + 1], &v->keep[at], sizeof v->keep[0] * (size_t)(v->kept - 1 - at));
    v->keep[at].step = t->counters.step, v->keep[at].score = score;
    char name[64];
    snprintf(name, sizeof name, "best-step%lld", (long long)t->counters.step);
    TT_TRY(save_as(t, name));
    if (dropped >= 0 && t->dist.rank == 0) {
        char path[TT_OPT_STRING_MAX + 64];
        snprintf(path, sizeof path, "%s/best-step%lld.safetensors", t->opt.out, (long long)dropped);
        remove(path); /* gone already: nothing to do */
    }
    return NULL;
}

/* A validation's score into the record: best.safetensors when it is the
 * best so far, --keep-best's files, --patience's count. */
static tt_status record(tt_trainer *t, double score)
{
    tt_validation_state *v = &t->counters.validation;
    int best = score > v->best;
    if (best) v->best = score, v->best_step = t->counters.step, v->since_best = 0;
    else v->since_best++;
    if (best && t->opt.out[0]) TT_TRY(save_as(t, "best"));
    if (t->opt.keep_best > 0 && t->opt.out[0]) TT_TRY(keep_best(t, score));
    if (t->opt.patience > 0 && v->since_best >= t->opt.patience) {
        t->stopped_early = 1;
        if (tt_trainer_logging(t))
            tt_trainer_log(t, "{\"step\": %lld, \"early_stop\": {\"best_mean_dice\": %.9g, "
                           "\"best_step\": %lld, \"validations_since\": %lld}}\n",
                           (long long)t->counters.step, v->best, (long long)v->best_step,
                           (long long)v->since_best);
    }
    return NULL;
}

tt_status tt_trainer_validate(tt_trainer *t, tt_metrics **out)
{
    if (out) *out = NULL;
    if (!t->val_count) return NULL;
    /* data parallel: rank 0 validates while the others wait; all learn the score */
    tt_metrics *m = NULL;
    tt_status status = t->dist.rank == 0 ? validate_here(t, &m) : NULL;
    double mean = m ? tt_metrics_mean_dice(m) : 0;
    /* the others wait as long as rank 0's validation takes; rank 0's own
     * wait stays bounded, and stops the job if the network is gone */
    tt_dist_unbounded(t->dist.rank != 0);
    status = tt_dp_sum_window(&t->dist, &mean, 1, status);
    tt_dist_unbounded(0);
    if (!status) status = record(t, mean);
    if (out && !status) *out = m;
    else tt_metrics_destroy(m);
    return status;
}
