/* Memory fitting from the engine's own estimate; see fit.h. */
#include "train/fit.h"

#include <stdio.h>

#include "core/status.h"
#include "train/probe.h"

tt_status tt_fit_estimate(const tt_device_info *device, const tt_train_options *options,
                          const tt_model_spec *model, tt_mask_kind kind, int planes,
                          int micro_batch, const int tile[2], int checkpointing, uint64_t *peak)
{
    tt_model_spec m = *model;
    m.checkpointing = checkpointing;
    tt_step_config c = tt_recipe_step(options, &m, kind, planes);
    c.micro_batch = micro_batch;
    c.height = tile[0], c.width = tile[1];
    tt_backend *dry = NULL;
    tt_backend_request run;
    TT_TRY(tt_recipe_backend(options, &run)); /* the dry one stands in for it */
    TT_TRY(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = device,
                                                   .stands_for = (int)run.kind},
                             &dry));
    tt_memstats stats;
    tt_status s = tt_probe_memory(dry, &c, options->accum, &stats);
    tt_backend_destroy(dry);
    /* too large for one buffer, or checkpointing a model does not offer:
     * this configuration does not fit */
    if (tt_status_code(s) == TT_ERR_TOO_LARGE ||
        (checkpointing && tt_status_code(s) == TT_ERR_UNSUPPORTED)) {
        tt_status_free(s);
        *peak = UINT64_MAX;
        return NULL;
    }
    *peak = s ? 0 : stats.peak_total;
    return s;
}

/* What the searches share. */
typedef struct fit {
    const tt_device_info *device;
    const tt_train_options *options;
    const tt_model_spec *model;
    tt_mask_kind kind;
    int planes;
    uint64_t limit;
    char limit_text[32];
} fit;

static tt_status estimate(const fit *f, int micro_batch, const int tile[2], int checkpointing,
                          uint64_t *peak)
{
    return tt_fit_estimate(f->device, f->options, f->model, f->kind, f->planes, micro_batch, tile,
                           checkpointing, peak);
}

/* The largest micro-batch in least..cap whose estimate fits (least: the
 * model's smallest training micro-batch), 0 if none. */
static tt_status largest_fit(const fit *f, int cap, int checkpointing, int *best)
{
    int lo = tt_model_spec_least_micro_batch(f->model), hi = cap;
    *best = 0;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint64_t peak;
        TT_TRY(estimate(f, mid, f->options->tile, checkpointing, &peak));
        if (peak <= f->limit) *best = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* Not one image fits: name a tile that does (halves, multiples of 2^depth
 * for the UNet; of 32, and at least 64, for a ResNet encoder, whose
 * deepest batch norm needs more than one value). */
static tt_status no_fit(const fit *f)
{
    const tt_train_options *o = f->options;
    int resnet = tt_model_spec_resnet_encoder(f->model);
    int unit = tt_model_spec_tile_unit(f->model), least = resnet ? 2 * unit : unit;
    int tile[2] = {o->tile[0], o->tile[1]}, images = tt_model_spec_least_micro_batch(f->model);
    while (tile[0] > least || tile[1] > least) {
        for (int k = 0; k < 2; k++)
            tile[k] = tile[k] / 2 / unit * unit > least ? tile[k] / 2 / unit * unit : least;
        uint64_t peak, plain;
        TT_TRY(estimate(f, images, tile, 1, &peak));
        TT_TRY(estimate(f, images, tile, 0, &plain)); /* for models without checkpointing */
        if (plain < peak) peak = plain;
        if (peak <= f->limit)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                                "tile %dx%d does not fit under %s even with %d image%s and "
                                "--checkpointing; --tile %dx%d fits (the whole image is still "
                                "trained on, crop by crop)", o->tile[0], o->tile[1], f->limit_text,
                                images, images > 1 ? "s" : "", tile[0], tile[1]);
    }
    return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                        "nothing fits under %s on device '%s': raise --mem-limit or use a "
                        "smaller model (%s)", f->limit_text, f->device->name,
                        resnet ? "--model unet-resnet18, or the plain unet"
                               : "--base-channels, --depth");
}

static tt_status fit_memory(const tt_device_info *device, tt_train_options *o,
                            tt_model_spec *model, tt_mask_kind kind, int planes, int say)
{
    uint64_t global = device->global_mem_bytes;
    uint64_t margin = global / 10 > (256u << 20) ? global / 10 : (256u << 20);
    fit f = {.device = device, .options = o, .model = model, .kind = kind, .planes = planes,
             .limit = o->mem_limit ? o->mem_limit : (global > margin ? global - margin : global)};
    tt_format_bytes(f.limit, f.limit_text, sizeof f.limit_text);
    char need[32];
    int cap = o->micro_batch > 0 ? o->micro_batch : o->batch;
    int best = 0, least = tt_model_spec_least_micro_batch(model);
    if (o->micro_batch > 0 && o->micro_batch < least)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s trains on micro-batches of %d or more "
                            "(its image pooling's batch norm sees one value a channel an "
                            "image): give --micro-batch %d or more", model->kind, least, least);
    TT_TRY(largest_fit(&f, cap, model->checkpointing, &best));
    if (!best && !model->checkpointing) {
        TT_TRY(largest_fit(&f, cap, 1, &best));
        if (best) {
            model->checkpointing = 1;
            if (say)
                fprintf(stderr, "tiletrain: turning on --checkpointing: without it not even "
                        "one image fits under %s\n", f.limit_text);
        }
    }
    if (o->micro_batch > 0 && best < o->micro_batch) {
        uint64_t peak;
        TT_TRY(estimate(&f, o->micro_batch, o->tile, model->checkpointing, &peak));
        tt_format_bytes(peak, need, sizeof need);
        if (best)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                                "micro-batch %d at tile %dx%d needs about %s, over the limit of %s; "
                                "--micro-batch %d --accum %d gives the same update and fits "
                                "(or --micro-batch auto)",
                                o->micro_batch, o->tile[0], o->tile[1],
                                peak == UINT64_MAX ? "more than one buffer may hold" : need,
                                f.limit_text, best, (o->micro_batch * o->accum + best - 1) / best);
    }
    if (!best) return no_fit(&f);
    if (o->micro_batch == 0) {
        o->micro_batch = best;
        o->accum = (o->batch + best - 1) / best;
        uint64_t peak, next = 0;
        TT_TRY(estimate(&f, best, o->tile, model->checkpointing, &peak));
        if (best < o->batch) TT_TRY(estimate(&f, best + 1, o->tile, model->checkpointing, &next));
        char nx[32];
        if (say)
            fprintf(stderr, "tiletrain: micro-batch auto: %d x accum %d for a batch of %d; "
                    "estimated peak %s of %s%s%s%s\n", best, o->accum, o->batch,
                    tt_format_bytes(peak, need, sizeof need), f.limit_text,
                    next ? " (one image more would need " : "",
                    next ? (next == UINT64_MAX ? "a too large buffer"
                                               : tt_format_bytes(next, nx, sizeof nx))
                         : "",
                    next ? ")" : "");
    }
    return NULL;
}

tt_status tt_fit_memory(const tt_device_info *device, tt_train_options *options,
                        tt_model_spec *model, tt_mask_kind kind, int planes)
{
    return fit_memory(device, options, model, kind, planes, 1);
}

tt_status tt_fit_memory_silently(const tt_device_info *device, tt_train_options *options,
                                 tt_model_spec *model, tt_mask_kind kind, int planes)
{
    return fit_memory(device, options, model, kind, planes, 0);
}
