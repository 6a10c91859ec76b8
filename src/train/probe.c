/* The memory probe and bench over the step engine; see probe.h. */
#include "train/probe.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"

/* A schedule that keeps the base rate: the probe and bench time the
 * update, not the curve. */
static tt_schedule constant_schedule(void)
{
    tt_schedule s;
    memset(&s, 0, sizeof s);
    s.kind = TT_SCHEDULE_CONSTANT;
    return s;
}

tt_status tt_probe_memory(tt_backend *be, const tt_step_config *config, int accum,
                          tt_memstats *out)
{
    tt_memstats_reset_peaks(&be->mem);
    tt_status status = NULL;
    tt_step *s = NULL;
    void *zeros = NULL;
    TT_CHECK(tt_step_create(be, config, &s));
    int b = config->micro_batch, planes = config->planes;
    size_t pixels = (size_t)b * config->height * config->width;
    int per_pixel = planes > config->model.in_channels ? planes : config->model.in_channels;
    zeros = tt_calloc(pixels * (size_t)per_pixel, sizeof(float));
    if (!zeros) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_step_begin(s));
    for (int m = 0; m < accum && m < 2; m++) { /* a second micro-batch shows any growth */
        TT_CHECK(tt_step_upload(s, zeros, zeros, b));
        TT_CHECK(tt_step_micro_batch(s, b, NULL, 1.0f));
    }
    TT_CHECK(tt_step_scale_grads(s, 1.0));
    tt_schedule constant = constant_schedule();
    tt_update_result r;
    TT_CHECK(tt_step_update(s, &constant, config->optimizer.lr, &r));
    TT_CHECK(tt_finish(be));
    *out = be->mem;
    out->live = NULL;
cleanup:
    free(zeros);
    tt_step_destroy(s);
    return status;
}

void tt_probe_random_batch(const tt_step_config *c, uint64_t seed, float **image,
                           uint8_t **labels)
{
    size_t pixels = (size_t)c->micro_batch * c->height * c->width;
    size_t values = pixels * (size_t)c->model.in_channels, targets = pixels * (size_t)c->planes;
    *image = tt_malloc(values * sizeof **image);
    *labels = tt_malloc(targets);
    if (!*image || !*labels) {
        free(*image), free(*labels);
        *image = NULL, *labels = NULL;
        return;
    }
    uint64_t x = seed;
    for (size_t i = 0; i < values; i++)
        (*image)[i] = (float)((x = x * 6364136223846793005ULL + 1) >> 40) / 16777216.0f;
    for (size_t i = 0; i < targets; i++) (*labels)[i] = ((x = x * 6364136223846793005ULL + 1) >> 63) & 1;
}

tt_status tt_probe_multi_label(const tt_step_config *config, uint64_t seed, const char *what,
                               tt_step_config *c, float **image, uint8_t **labels)
{
    *c = *config;
    c->mask_kind = TT_MASK_MULTI_LABEL; /* as the peer: BCE over 0/1 targets */
    c->planes = c->model.classes;
    tt_probe_random_batch(c, seed, image, labels);
    if (!*image) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
    return NULL;
}

tt_status tt_probe_bench(tt_backend *be, const tt_step_config *config, int accum, int warmup,
                         int steps, tt_bench_result *out)
{
    memset(out, 0, sizeof *out);
    tt_step_config c;
    tt_step *s = NULL;
    float *image = NULL;
    uint8_t *labels = NULL;
    tt_status status = tt_probe_multi_label(config, 0x9e3779b97f4a7c15ULL, "bench", &c, &image, &labels);
    if (status) return status;
    int b = c.micro_batch;
    TT_CHECK(tt_step_create(be, &c, &s));
    /* the window's counts: accum copies of the one batch */
    tt_loss_counts counts = {0};
    for (int m = 0; m < accum; m++)
        tt_loss_count(&counts, labels, b, c.planes, (size_t)c.height * c.width, c.model.classes,
                      c.mask_kind, TT_LOSS_IGNORE_DEFAULT, c.class_weighted ? c.class_weights : NULL);
    tt_schedule constant = constant_schedule();
    for (int step = 0; step < warmup + steps; step++) {
        if (step == warmup) {
            TT_CHECK(tt_finish(be));
            if (be->profile) *be->profile = (tt_profile){.by_kernel = be->profile->by_kernel};
            out->seconds = -tt_seconds();
        }
        TT_CHECK(tt_step_begin(s));
        for (int m = 0; m < accum; m++) {
            TT_CHECK(tt_step_upload(s, image, labels, b));
            TT_CHECK(tt_step_micro_batch(s, b, &counts, 1.0f));
        }
        tt_loss_value values[TT_LOSS_TERMS_MAX];
        TT_CHECK(tt_step_losses(s, values));
        tt_update_result r;
        TT_CHECK(tt_step_update(s, &constant, c.optimizer.lr, &r));
    }
    out->seconds += tt_seconds();
    out->images = (double)steps * accum * b;
    out->flops_per_image = 3.0 * tt_model_flops_per_image(s->model);
    out->peak_bytes = be->mem.peak_total;
cleanup:
    free(image);
    free(labels);
    tt_step_destroy(s);
    return status;
}

/* The sum of the terms' losses of the window just run. */
static tt_status window_loss(tt_step *s, const tt_step_config *c, double *loss)
{
    tt_loss_value values[TT_LOSS_TERMS_MAX];
    TT_TRY(tt_step_losses(s, values));
    *loss = 0;
    for (int i = 0; i < c->loss.count; i++)
        *loss += values[i].count ? (double)values[i].sum / values[i].count : 0;
    return NULL;
}

tt_status tt_probe_overfit(tt_backend *be, const tt_step_config *config, int steps,
                           tt_overfit_result *out)
{
    memset(out, 0, sizeof *out);
    tt_step_config c;
    tt_step *s = NULL;
    float *image = NULL;
    uint8_t *labels = NULL;
    tt_status status = tt_probe_multi_label(config, 0x6a09e667f3bcc909ULL, "overfit", &c, &image, &labels);
    if (status) return status;
    int b = c.micro_batch;
    size_t plane = (size_t)c.height * c.width;
    int channels = c.model.in_channels;
    for (int n = 0; n < b; n++)
        for (int k = 0; k < c.planes; k++)
            for (size_t p = 0; p < plane; p++)
                labels[((size_t)n * c.planes + k) * plane + p] =
                    image[((size_t)n * channels + k % channels) * plane + p] > 0.5f;
    if (c.optimizer.lr < TT_OVERFIT_LR) c.optimizer.lr = TT_OVERFIT_LR;
    TT_CHECK(tt_step_create(be, &c, &s));
    tt_loss_counts counts = {0};
    tt_loss_count(&counts, labels, b, c.planes, plane, c.model.classes, c.mask_kind,
                  TT_LOSS_IGNORE_DEFAULT, c.class_weighted ? c.class_weights : NULL);
    tt_schedule constant = constant_schedule();
    for (int step = 0; step < steps; step++) {
        if (step == 1) out->seconds = -tt_seconds();
        TT_CHECK(tt_step_begin(s));
        TT_CHECK(tt_step_upload(s, image, labels, b));
        TT_CHECK(tt_step_micro_batch(s, b, &counts, 1.0f));
        double loss;
        TT_CHECK(window_loss(s, &c, &loss));
        if (step == 0) out->first_loss = loss;
        out->last_loss = loss;
        tt_update_result r;
        TT_CHECK(tt_step_update(s, &constant, c.optimizer.lr, &r));
        out->steps = step + 1;
    }
    if (steps > 1) {
        out->seconds += tt_seconds();
        out->images = (double)(steps - 1) * b;
    }
cleanup:
    free(image);
    free(labels);
    tt_step_destroy(s);
    return status;
}
