/*
 * Dynamic loss scaling (train/loss_scale.h): the rule alone (halve and skip
 * on an overflow, double after 2000 clean windows or the interval given,
 * the flag's forms), then through the trainer with fp16 storage: a forced
 * overflow skips the window with weights and optimizer state unchanged and
 * halves the scale; --loss-scale-interval clean windows of a small model
 * double it; scaling by powers of two trains the very weights an unscaled
 * run does; a checkpoint carries the scale and its count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/synth.h"
#include "harness.h"
#include "ref_data.h"
#include "train/checkpoint.h"
#include "train/loss_scale.h"
#include "train/trainer.h"

static char *data_dir, *cache_dir;

static void rule(void)
{
    tt_loss_scale s;
    TH_OK(tt_loss_scale_start("auto", TT_PRECISION_FP16, &s));
    CU_ASSERT_EQUAL(s.scale, 65536.0);
    TH_OK(tt_loss_scale_start("auto", TT_PRECISION_BF16, &s));
    CU_ASSERT_EQUAL(s.scale, 0.0); /* fp32's range: none needed */
    TH_OK(tt_loss_scale_start("off", TT_PRECISION_FP16, &s));
    CU_ASSERT_EQUAL(s.scale, 0.0);
    TH_OK(tt_loss_scale_start("1024", TT_PRECISION_FP32, &s));
    CU_ASSERT_EQUAL(s.scale, 1024.0);
    const char *bad[] = {"1000", "0", "-4", "x", "1e300", "0.3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tt_status e = tt_loss_scale_start(bad[i], TT_PRECISION_FP16, &s);
        CU_ASSERT(e && strstr(tt_status_message(e), "--loss-scale") != NULL);
        tt_status_free(e);
    }
    TH_OK(tt_loss_scale_start("auto", TT_PRECISION_FP16, &s));
    for (int i = 0; i < 1999; i++) CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 0), 0);
    CU_ASSERT_EQUAL(s.scale, 65536.0);
    CU_ASSERT_EQUAL(s.clean, 1999);
    CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 1), 1); /* an overflow: halved, count restarts */
    CU_ASSERT_EQUAL(s.scale, 32768.0);
    CU_ASSERT_EQUAL(s.clean, 0);
    for (int i = 0; i < 1999; i++) tt_loss_scale_update(&s, 0);
    CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 0), 1); /* the 2000th clean window */
    CU_ASSERT_EQUAL(s.scale, 65536.0);
    CU_ASSERT_EQUAL(s.clean, 0);
    s = (tt_loss_scale){1024.0, 0, 3}; /* --loss-scale-interval 3 */
    CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 0), 0);
    CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 0), 0);
    CU_ASSERT_EQUAL(tt_loss_scale_update(&s, 0), 1);
    CU_ASSERT_EQUAL(s.scale, 2048.0);
    tt_loss_scale none = {0};
    CU_ASSERT_EQUAL(tt_loss_scale_update(&none, 1), 0);
    CU_ASSERT_EQUAL(none.scale, 0.0);
}

/* fp16 storage, a tiny UNet on 16x16 crops, micro-batch 2 x accum 2. */
static void options(tt_train_options *o, const char *loss_scale, int steps)
{
    tt_train_options_default(o);
    snprintf(o->data, sizeof o->data, "%s", data_dir);
    snprintf(o->cache_dir, sizeof o->cache_dir, "%s", cache_dir);
    o->out[0] = '\0';
    o->tile[0] = o->tile[1] = 16;
    o->base_channels = 4, o->depth = 2, o->groups = 2;
    o->micro_batch = 2, o->accum = 2, o->steps = steps;
    o->no_shuffle = 1, o->no_augment = 1, o->quiet = 1, o->seed = 5;
    o->precision = TT_PRECISION_FP16;
    snprintf(o->loss_scale, sizeof o->loss_scale, "%s", loss_scale);
    TH_OK(tt_opt_set(tt_train_option_table, tt_train_option_count, o, "backend", th_backend_name(), "the test"));
    snprintf(o->device, sizeof o->device, "%s", th_backend_device() ? th_backend_device() : "");
}

static float *params_of(tt_trainer *t)
{
    size_t n = t->engine->model->params->trainable_floats;
    float *p = malloc(n * sizeof *p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    TH_OK(tt_model_get_params(t->engine->model, p, NULL));
    return p;
}

/* 2^127 times the gradient of a loss weighted 1e6 (each term's gradient
 * comes divided by its window count, as a mean's does in PyTorch): the
 * logits' gradient passes fp32's largest value.  The window is skipped as
 * a whole, the scale halves, and it keeps halving until a window is clean. */
static void forced_overflow(void)
{
    tt_train_options o;
    options(&o, "0x1p127", 60);
    snprintf(o.loss, sizeof o.loss, "1e6*ce");
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, ldexp(1, 127));
    size_t n = t->engine->model->params->trainable_floats;
    float *before = params_of(t);
    tt_step_report r;
    TH_OK(tt_trainer_step(t, &r));
    float *after = params_of(t);
    CU_ASSERT(r.skipped);
    CU_ASSERT_EQUAL(r.loss_scale, ldexp(1, 127)); /* the window's scale */
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, ldexp(1, 126));
    CU_ASSERT_EQUAL(t->counters.loss_scale.clean, 0);
    CU_ASSERT_EQUAL(memcmp(before, after, n * sizeof *before), 0); /* weights unchanged */
    CU_ASSERT_EQUAL(t->engine->optimizer->updates, 0);             /* and the optimizer's state */
    int skipped = 1, step = 1;
    while (r.skipped && step < 60) {
        TH_OK(tt_trainer_step(t, &r));
        step++, skipped += r.skipped;
    }
    printf("\n  from 2^127: %d windows skipped, first update at scale 2^%d", skipped,
           (int)log2(r.loss_scale));
    CU_ASSERT(!r.skipped);
    CU_ASSERT_EQUAL(r.loss_scale, ldexp(1, 127 - skipped)); /* halved once per overflow */
    CU_ASSERT_EQUAL(t->counters.skipped_steps, skipped);
    CU_ASSERT_EQUAL(t->engine->optimizer->updates, 1);
    tt_trainer_destroy(t);
    free(before), free(after);
}

/* Scaling by a power of two and unscaling are exact on fp32 gradients:
 * three windows at 65536 train the weights an unscaled run trains. */
static void exact(void)
{
    float *w[2];
    const char *scales[2] = {"auto", "off"};
    for (int k = 0; k < 2; k++) {
        tt_train_options o;
        options(&o, scales[k], 3);
        tt_trainer *t = NULL;
        TH_OK(tt_trainer_create(&o, &t));
        CU_ASSERT_EQUAL(t->counters.loss_scale.scale, k ? 0.0 : 65536.0);
        tt_step_report r;
        for (int i = 0; i < 3; i++) TH_OK(tt_trainer_step(t, &r));
        CU_ASSERT_EQUAL(r.loss_scale, k ? 0.0 : 65536.0);
        w[k] = params_of(t);
        if (k) CU_ASSERT_EQUAL(memcmp(w[0], w[1], t->engine->model->params->trainable_floats *
                                                      sizeof *w[0]), 0);
        tt_trainer_destroy(t);
    }
    free(w[0]), free(w[1]);
}

/* --loss-scale-interval clean windows double the scale (40 here; the rule
 * above checks the default 2000); a checkpoint in between carries the
 * scale and its count, so the resumed run doubles at the same window. */
static void doubles(void)
{
    tt_train_options o;
    options(&o, "1024", 41);
    o.accum = 1, o.micro_batch = 1, o.loss_scale_interval = 40;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    tt_step_report r;
    char *dir = rd_tempdir("loss_scale");
    char path[1024];
    snprintf(path, sizeof path, "%s/at30.safetensors", dir);
    for (int i = 1; i <= 39; i++) {
        TH_OK(tt_trainer_step(t, &r));
        if (r.skipped) break;
        if (i == 30) TH_OK(tt_trainer_save(t, path));
    }
    CU_ASSERT(!r.skipped);
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, 1024.0);
    CU_ASSERT_EQUAL(t->counters.loss_scale.clean, 39);
    TH_OK(tt_trainer_step(t, &r));
    CU_ASSERT_EQUAL(r.loss_scale, 1024.0);
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, 2048.0); /* after the 40th */
    CU_ASSERT_EQUAL(t->counters.loss_scale.clean, 0);
    tt_trainer_destroy(t);

    snprintf(o.resume, sizeof o.resume, "%s", path);
    t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, 1024.0);
    CU_ASSERT_EQUAL(t->counters.loss_scale.clean, 30);
    for (int i = 31; i <= 40; i++) TH_OK(tt_trainer_step(t, &r));
    CU_ASSERT_EQUAL(t->counters.loss_scale.scale, 2048.0);
    tt_trainer_destroy(t);
    rd_remove(dir);
}

int main(void)
{
    data_dir = rd_tempdir("loss_scale_data");
    cache_dir = rd_tempdir("loss_scale_cache");
    tt_synth_config sc = {.out_dir = data_dir, .format = TT_SYNTH_FOLDER, .count = 4,
                          .height = 24, .width = 24, .classes = 3, .seed = 2};
    tt_status s = tt_synth_write(&sc);
    if (s) {
        fprintf(stderr, "cannot write the data set: %s\n", tt_status_message(s));
        return 1;
    }
    CU_TestInfo tests[] = {
        {"the rule: halve on overflow, double after 2000, the flag", rule},
        {"a forced overflow skips the window, weights unchanged, scale halved", forced_overflow},
        {"powers of two: the weights of an unscaled run, bit for bit", exact},
        {"--loss-scale-interval clean windows double it; a checkpoint carries it", doubles},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("loss_scale", tests, TH_EVERY);
    rd_remove(data_dir), rd_remove(cache_dir);
    return rc;
}
