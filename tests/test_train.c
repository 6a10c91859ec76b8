/*
 * Training: gradient accumulation equals one big batch (also with a short
 * last window and uneven ignore regions), parity with PyTorch, exact
 * resume, refused checkpoints, checkpoints loading for prediction
 * (tt_infer_model_load), skipped non-finite steps, and learning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb_image.h>
#include <stb_image_write.h>

#include "harness.h"
#include "infer/model_load.h"
#include "ref_data.h"
#include "ops/conv_autotune.h"
#include "model/weights.h"
#include "train/checkpoint.h"
#include "train/probe.h"
#include "train/recipe.h"
#include "train/report.h"
#include "io/safetensors.h"
#include "train/trainer.h"
#include "data/synth.h"

static char *cache_dir;

/* A folder data set of `count` size x size images: the class of a pixel
 * follows its brightness (learnable); image i has an ignored (255)
 * rectangle covering a different share of its pixels. */
static char *make_dataset(int count, int size, int classes, uint64_t seed)
{
    char *dir = rd_tempdir("train");
    char *images = rd_subdir(dir, "images"), *masks = rd_subdir(dir, "masks");
    uint8_t *rgb = malloc((size_t)size * size * 3), *mask = malloc((size_t)size * size);
    for (int i = 0; i < count; i++) {
        double fx = th_uniform(&seed, 0.1, 0.5), fy = th_uniform(&seed, 0.1, 0.5);
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++) {
                double v = 0.5 + 0.5 * sin(fx * x + 3 * i) * cos(fy * y);
                uint8_t g = (uint8_t)(255 * v);
                uint8_t *p = rgb + 3 * ((size_t)y * size + x);
                p[0] = g, p[1] = (uint8_t)(255 - g), p[2] = (uint8_t)(th_uniform(&seed, 0, 64));
                mask[y * size + x] = (uint8_t)fmin(classes - 1, v * classes);
            }
        int side = (i * size) / (count + 1); /* 0 .. most of the image */
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) mask[y * size + x] = 255;
        char path[512];
        snprintf(path, sizeof path, "%s/img_%03d.png", images, i);
        CU_ASSERT_FATAL(stbi_write_png(path, size, size, 3, rgb, size * 3));
        snprintf(path, sizeof path, "%s/img_%03d.png", masks, i);
        CU_ASSERT_FATAL(stbi_write_png(path, size, size, 1, mask, size));
    }
    free(rgb), free(mask), free(images), free(masks);
    return dir;
}

static void base_options(tt_train_options *o, const char *data, int size)
{
    tt_train_options_default(o);
    snprintf(o->data, sizeof o->data, "%s", data);
    snprintf(o->cache_dir, sizeof o->cache_dir, "%s", cache_dir);
    o->out[0] = '\0';
    o->tile[0] = o->tile[1] = size;
    o->base_channels = 4;
    o->depth = 2;
    o->groups = 2;
    o->no_shuffle = 1;
    o->no_augment = 1;
    o->seed = 3;
    o->quiet = 1;
    o->algo = TT_CONV_ALGO_IM2COL_GEMM; /* see main() */
    /* the trainer makes its own backend: the one the tests run on */
    TH_OK(tt_opt_set(tt_train_option_table, tt_train_option_count, o, "backend", th_backend_name(), "the test"));
    snprintf(o->device, sizeof o->device, "%s", th_backend_device() ? th_backend_device() : "");
}

/* Destroys a trainer after checking its backend's validation messages. */
static void trainer_destroy(tt_trainer *t)
{
    if (t) {
        CU_ASSERT_EQUAL(t->be->kernels_of, (int)th_backend_kind());
        th_check_validation(t->be);
    }
    tt_trainer_destroy(t);
}

/* Runs the options to the end; returns the final weights (malloc'd). */
static float *train(const tt_train_options *o, tt_trainer **keep, size_t *count)
{
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(o, &t));
    while (t->counters.step < t->max_steps && !t->finished) {
        tt_step_report r;
        TH_OK(tt_trainer_step(t, &r));
        if (r.images == 0) break;
    }
    *count = t->engine->model->params->trainable_floats;
    float *w = malloc(*count * sizeof *w);
    TH_OK(tt_model_get_params(t->engine->model, w, NULL));
    if (keep) *keep = t;
    else trainer_destroy(t);
    return w;
}

static double max_rel(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-2));
    return worst;
}

static void test_accumulation_equivalence(void)
{
    char *data = make_dataset(20, 16, 3, 1);
    tt_train_options a, b;
    base_options(&a, data, 16);
    a.micro_batch = 4, a.accum = 5, a.steps = 3;
    base_options(&b, data, 16);
    b.micro_batch = 20, b.accum = 1, b.steps = 3;
    size_t n;
    float *wa = train(&a, NULL, &n), *wb = train(&b, NULL, &n);
    double e = max_rel(wa, wb, n);
    printf("\n  4 x 5 vs 20 x 1, 3 AdamW steps, group norm, uneven ignore: max rel diff %.2e", e);
    CU_ASSERT(e <= 1e-5);
    free(wa), free(wb);
    rd_remove(data);
}

/* A device whose kernels run at most 16 work-items a group (GPU audit item
 * 7: register use holds kernels below the device's size on Mali, Adreno
 * or Intel GPUs; the test knob makes this device so): every op fits its
 * groups, and 3 steps with AUTO's convolutions (implicit GEMM and the
 * direct kernels fit the kernel's own limit) end within float rounding of
 * the same steps at the device's sizes. */
static void test_small_work_groups(void)
{
    char *data = make_dataset(8, 16, 3, 5);
    tt_train_options o;
    base_options(&o, data, 16);
    o.micro_batch = 4, o.accum = 2, o.steps = 3;
    o.algo = TT_CONV_ALGO_AUTO;
    size_t n;
    float *wide = train(&o, NULL, &n);
    th_setenv("TT_KERNEL_WG_LIMIT", "16");
    float *narrow = train(&o, NULL, &n);
    th_setenv("TT_KERNEL_WG_LIMIT", NULL);
    double e = max_rel(narrow, wide, n);
    printf("\n  kernels held to 16 work-items a group: weights after 3 steps within %.2e", e);
    CU_ASSERT(e <= 1e-4);
    free(wide), free(narrow);
    rd_remove(data);
}

/* The window's normalised gradients of options `o` (one step), from the
 * file --save-grads writes; *keep: the trainer (its model's parameter
 * table says where each tensor lies; trainer_destroy() it). */
static float *window_grads(tt_train_options *o, const char *path, tt_trainer **keep)
{
    snprintf(o->save_grads, sizeof o->save_grads, "%s", path);
    o->steps = 1;
    tt_trainer *t = NULL;
    size_t n;
    free(train(o, &t, &n));
    float *g = malloc(n * sizeof *g);
    CU_ASSERT_FATAL(g != NULL);
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    const tt_param_table *pt = t->engine->model->params;
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        if (!p->trainable) continue;
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        TH_OK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, g + p->offset));
    }
    tt_safetensors_close(f);
    *keep = t;
    return g;
}

/* B x N against N*B x 1 on `data`: the first window's gradients, each
 * tensor relative to its largest value (what "exact over the window"
 * promises; a few AdamW steps would turn rounding on near-zero gradients
 * into whole steps). */
static void window_equals_batch(const char *data, const char *loss, const char *weights, int b,
                                int n)
{
    char *work = rd_tempdir("window");
    char ga[600], gb[600];
    snprintf(ga, sizeof ga, "%s/a.safetensors", work);
    snprintf(gb, sizeof gb, "%s/b.safetensors", work);
    tt_train_options a, one;
    base_options(&a, data, 16);
    snprintf(a.loss, sizeof a.loss, "%s", loss);
    snprintf(a.class_weights, sizeof a.class_weights, "%s", weights ? weights : "");
    a.micro_batch = b, a.accum = n;
    one = a;
    one.micro_batch = b * n, one.accum = 1;
    tt_trainer *ta = NULL, *tb = NULL;
    float *g = window_grads(&a, ga, &ta);
    float *g_one = window_grads(&one, gb, &tb);
    const tt_param_table *pt = tb->engine->model->params;
    /* relative to the model's largest gradient, as tests/mpi/check.sh: a
     * convolution's bias before a norm has only rounding noise for a
     * gradient (the norm takes its mean out), no scale of its own */
    double largest = 0, worst = 0;
    const char *worst_name = "";
    for (size_t i = 0; i < pt->trainable_floats; i++) largest = fmax(largest, fabs(g_one[i]));
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        if (!p->trainable) continue;
        double scale = largest, e = 0;
        for (size_t j = 0; j < p->count; j++)
            e = fmax(e, fabs((double)g[p->offset + j] - g_one[p->offset + j]) / scale);
        if (e > worst) worst = e, worst_name = p->name;
    }
    printf("\n  --loss %s%s%s: %d x %d vs %d x 1, the window's gradients: max rel diff %.2e (%s)",
           loss, weights ? " --class-weights " : "", weights ? weights : "", b, n, b * n, worst,
           worst_name);
    CU_ASSERT(worst <= 1e-5);
    trainer_destroy(ta), trainer_destroy(tb);
    free(g), free(g_one);
    rd_remove(work);
}

/* Every loss term is exact over the window: B x N equals N*B x 1 for the
 * terms reduced per image, per item and over the window (two passes). */
static void test_loss_terms_accumulation(void)
{
    char *data = make_dataset(20, 16, 3, 1);
    window_equals_batch(data, "ce+0.5*dice:reduce=window+focal+lovasz", "1,2,0.5", 4, 5);
    window_equals_batch(data, "tversky:reduce=window:alpha=0.7:beta=0.3+dice+focal:gamma=1", NULL,
                        4, 5);
    rd_remove(data);
}

/* Multi-label masks (kaggle-rle): BCE, Dice over the window, focal, Lovász
 * hinge, B x N equals N*B x 1. */
static void test_multilabel_loss_accumulation(void)
{
    char *data = rd_tempdir("multilabel");
    tt_synth_config sc = {.out_dir = data, .format = TT_SYNTH_KAGGLE_RLE, .count = 12,
                          .height = 24, .width = 24, .classes = 3, .seed = 11};
    TH_OK(tt_synth_write(&sc));
    tt_train_options o;
    base_options(&o, data, 16);
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    CU_ASSERT_EQUAL(t->mask_kind, TT_MASK_MULTI_LABEL);
    trainer_destroy(t);
    window_equals_batch(data, "bce+dice:reduce=window+0.5*focal+lovasz", "1,3,0.5", 3, 4);
    window_equals_batch(data, "focal:alpha=0.25+tversky", NULL, 3, 4);
    rd_remove(data);
}

static void test_short_last_window(void)
{
    /* 10 images: 2 x 3 gives windows of 6 and 4 images, 6 x 1 batches of 6 and 4 */
    char *data = make_dataset(10, 16, 3, 2);
    tt_train_options a, b;
    base_options(&a, data, 16);
    a.micro_batch = 2, a.accum = 3, a.epochs = 1;
    base_options(&b, data, 16);
    b.micro_batch = 6, b.accum = 1, b.epochs = 1;
    size_t n;
    tt_trainer *ta = NULL;
    float *wa = train(&a, &ta, &n), *wb = train(&b, NULL, &n);
    CU_ASSERT_EQUAL(ta->counters.step, 2);
    CU_ASSERT_EQUAL(ta->counters.images_seen, 10);
    double e = max_rel(wa, wb, n);
    printf("\n  short last window (2 x 3 vs 6 x 1 over 10 images): max rel diff %.2e", e);
    CU_ASSERT(e <= 1e-5);
    trainer_destroy(ta);
    free(wa), free(wb);
    rd_remove(data);
}

/* Compares our tensors with torch's file, tensor by tensor, relative to
 * each tensor's largest magnitude. */
static double compare_file(const tt_param_table *pt, const float *ours, const char *path,
                           const char **worst_name)
{
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    double worst = 0;
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        if (!p->trainable) continue;
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        float *ref = malloc(p->count * sizeof *ref);
        TH_OK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, ref));
        double scale = 1e-6, e = 0;
        for (size_t j = 0; j < p->count; j++) scale = fmax(scale, fabs(ref[j]));
        for (size_t j = 0; j < p->count; j++)
            e = fmax(e, fabs((double)ours[p->offset + j] - ref[j]) / scale);
        if (e > worst) worst = e, *worst_name = p->name;
        free(ref);
    }
    tt_safetensors_close(f);
    return worst;
}

static void parity_with(const char *optimizer, const char *loss, const char *class_weights)
{
    char *data = make_dataset(8, 16, 3, 4);
    char *work = rd_tempdir("parity");
    char init[600], grads[600], tgrads[600], tweights[600];
    snprintf(init, sizeof init, "%s/init.safetensors", work);
    snprintf(grads, sizeof grads, "%s/grads.safetensors", work);
    snprintf(tgrads, sizeof tgrads, "%s/torch-grads.safetensors", work);
    snprintf(tweights, sizeof tweights, "%s/torch-weights.safetensors", work);
    tt_train_options o;
    base_options(&o, data, 16);
    o.micro_batch = 2, o.accum = 2, o.steps = 2;
    TH_OK(tt_opt_set(tt_train_option_table, tt_train_option_count, &o, "optimizer", optimizer, "the test"));
    o.lr = strcmp(optimizer, "sgd") == 0 ? 0.05 : 1e-3;
    snprintf(o.save_grads, sizeof o.save_grads, "%s", grads);
    snprintf(o.loss, sizeof o.loss, "%s", loss ? loss : "auto");
    snprintf(o.class_weights, sizeof o.class_weights, "%s", class_weights ? class_weights : "");
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    TH_OK(tt_trainer_save(t, init));
    trainer_destroy(t);
    size_t n;
    float *w = train(&o, &t, &n);

    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             TH_PYTHON " %s/tests/torch_train.py --data %s "
             "--init %s --grads-out %s --weights-out %s --steps 2 --micro-batch 2 --accum 2 "
             "--optimizer %s --lr %g --weight-decay %g --momentum 0.9 --classes 3 "
             "--base-channels 4 --depth 2 --norm group --groups 2%s%s%s%s",
             TT_SOURCE_DIR, data, init, tgrads, tweights, optimizer, o.lr,
             strcmp(optimizer, "sgd") == 0 ? 0.0 : 0.01, loss ? " --loss " : "", loss ? loss : "",
             class_weights ? " --class-weights " : "", class_weights ? class_weights : "");
    if (system(cmd) != 0) {
        printf("\n  SKIPPED parity with PyTorch: '%s' failed (needs python3-torch, python3-pil "
               "and python/tiletrain_torch.py or $TT_TORCH_UNET)", cmd);
    } else {
        float *g = malloc(n * sizeof *g);
        tt_safetensors *f = NULL;
        TH_OK(tt_safetensors_open(grads, &f));
        for (int i = 0; i < t->engine->model->params->count; i++) {
            const tt_param *p = &t->engine->model->params->params[i];
            int64_t shape[4];
            for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
            TH_OK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, g + p->offset));
        }
        tt_safetensors_close(f);
        const char *wg = "", *ww = "";
        double eg = compare_file(t->engine->model->params, g, tgrads, &wg);
        double ew = compare_file(t->engine->model->params, w, tweights, &ww);
        printf("\n  %s%s%s vs PyTorch after 2 steps: gradients %.2e (%s), weights %.2e (%s)",
               optimizer, loss ? ", --loss " : "", loss ? loss : "", eg, wg, ew, ww);
        CU_ASSERT(eg <= 1e-4);
        CU_ASSERT(ew <= 1e-4);
        free(g);
    }
    trainer_destroy(t);
    free(w);
    rd_remove(work);
    rd_remove(data);
}

static void test_parity_adamw(void) { parity_with("adamw", NULL, NULL); }
static void test_parity_sgd(void) { parity_with("sgd", NULL, NULL); }

/* Every class-index loss term at once, with class weights: 2 x 2 windows
 * against torch_losses.py's window as one batch. */
static void test_parity_loss_terms(void)
{
    parity_with("adamw", "ce+0.5*dice:reduce=window+focal:gamma=2:alpha=0.25+lovasz", "1,2,0.5");
    parity_with("adamw", "0.5*ce+tversky:alpha=0.3:beta=0.7+2*dice", NULL);
}

static void test_resume_bit_identical(void)
{
    char *data = make_dataset(6, 24, 3, 5);
    char *out = rd_tempdir("resume");
    tt_train_options o;
    base_options(&o, data, 16); /* crops of 24x24 images: shuffled and augmented */
    o.no_shuffle = o.no_augment = 0;
    o.fg_fraction = 0.33;
    o.micro_batch = 2, o.accum = 2, o.steps = 6;
    size_t n;
    float *whole = train(&o, NULL, &n);

    o.steps = 3;
    tt_trainer *t = NULL;
    float *half = train(&o, &t, &n);
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/half.safetensors", out);
    TH_OK(tt_trainer_save(t, ckpt));
    /* the checkpoint loads for prediction: same configuration, same weights */
    tt_infer_model m;
    TH_OK(tt_infer_model_load(t->be, ckpt, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m));
    if (m.model) {
        CU_ASSERT(tt_model_spec_same(&t->model, &m.spec));
        /* trainable weights then running statistics, one arena each side */
        size_t floats = t->engine->model->params->trainable_floats, states = t->engine->model->params->state_floats;
        float *trained = malloc((floats + states + 1) * sizeof *trained);
        float *loaded = malloc((floats + states + 1) * sizeof *loaded);
        TH_OK(tt_model_get_params(t->engine->model, trained, trained + floats));
        TH_OK(tt_model_get_params(m.model, loaded, loaded + floats));
        int same = memcmp(trained, loaded, (floats + states) * sizeof *trained) == 0;
        printf("\n  checkpoint through tt_infer_model_load: %zu weights, %zu statistics %s", floats,
               states, same ? "identical" : "DIFFERENT");
        CU_ASSERT(same);
        free(trained), free(loaded);
    }
    tt_infer_model_free(&m);
    trainer_destroy(t);
    free(half);
    o.steps = 6;
    snprintf(o.resume, sizeof o.resume, "%s", ckpt);
    float *resumed = train(&o, &t, &n);
    CU_ASSERT_EQUAL(t->counters.step, 6);
    trainer_destroy(t);
    int same = memcmp(whole, resumed, n * sizeof *whole) == 0;
    printf("\n  6 steps vs 3 + 3 resumed: %s", same ? "bit-identical" : "DIFFERENT");
    CU_ASSERT(same);

    /* a truncated and a corrupted checkpoint are refused, naming the file */
    size_t size = 0;
    unsigned char *bytes = rd_read(out, "half.safetensors", &size);
    CU_ASSERT_FATAL(bytes != NULL && size > 100);
    rd_truncate(out, "half.safetensors", size - 7);
    tt_status s = tt_trainer_create(&o, &t);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) printf("\n  truncated: %s", tt_status_message(s));
    CU_ASSERT(s && strstr(tt_status_message(s), "half.safetensors") != NULL);
    tt_status_free(s);
    bytes[12] ^= 0x5a; /* inside the JSON header */
    rd_write_bytes(out, "half.safetensors", bytes, size);
    s = tt_trainer_create(&o, &t);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) printf("\n  corrupted: %s", tt_status_message(s));
    tt_status_free(s);
    free(bytes), free(whole), free(resumed);
    rd_remove(out);
    rd_remove(data);
}

static void test_nonfinite_skips(void)
{
    char *data = make_dataset(4, 16, 3, 6);
    tt_train_options o;
    base_options(&o, data, 16);
    o.optimizer = TT_OPTIMIZER_SGD;
    o.lr = 1e30; /* the first update overflows the weights; later gradients are NaN */
    o.momentum = 0;
    o.micro_batch = 2, o.accum = 1, o.steps = 4;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    size_t n = t->engine->model->params->trainable_floats;
    float *before = malloc(n * sizeof *before), *after = malloc(n * sizeof *after);
    tt_step_report r;
    TH_OK(tt_trainer_step(t, &r));
    int skipped_seen = 0;
    for (int i = 0; i < 3; i++) {
        TH_OK(tt_model_get_params(t->engine->model, before, NULL));
        TH_OK(tt_trainer_step(t, &r));
        TH_OK(tt_model_get_params(t->engine->model, after, NULL));
        if (r.skipped) {
            skipped_seen++;
            CU_ASSERT(memcmp(before, after, n * sizeof *before) == 0); /* unchanged */
        }
    }
    printf("\n  lr 1e30: %d of 3 later steps skipped, %lld counted", skipped_seen,
           (long long)t->counters.skipped_steps);
    CU_ASSERT(skipped_seen >= 1);
    CU_ASSERT_EQUAL(t->counters.skipped_steps, skipped_seen);
    trainer_destroy(t);
    free(before), free(after);
    rd_remove(data);
}

static void test_learns(void)
{
    char *data = make_dataset(8, 32, 3, 7);
    tt_train_options o;
    base_options(&o, data, 32);
    o.no_shuffle = 0;
    o.base_channels = 8;
    o.groups = 4;
    o.micro_batch = 2, o.accum = 1, o.steps = 100;
    o.lr = 3e-3;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    double first = 0, last = 0;
    for (int i = 0; i < o.steps; i++) {
        tt_step_report r;
        TH_OK(tt_trainer_step(t, &r));
        if (i < 5) first += r.loss / 5;
        if (i >= o.steps - 5) last += r.loss / 5;
    }
    printf("\n  loss over the first 5 steps %.4f, over the last 5 of %d %.4f", first, o.steps, last);
    CU_ASSERT(last < 0.5 * first);
    trainer_destroy(t);
    rd_remove(data);
}

static void test_validation_and_best(void)
{
    char *data = make_dataset(8, 16, 3, 9);
    char *out = rd_tempdir("val");
    tt_train_options o;
    base_options(&o, data, 16);
    snprintf(o.out, sizeof o.out, "%s", out);
    o.val_fraction = 0.25;
    o.micro_batch = 2, o.steps = 2;
    size_t n;
    tt_trainer *t = NULL;
    float *w = train(&o, &t, &n);
    CU_ASSERT_EQUAL(t->val_count, 2);
    CU_ASSERT_EQUAL(t->train_count, 6);
    tt_metrics *m = NULL;
    TH_OK(tt_trainer_validate(t, &m));
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->images, 2);
    double mean = tt_metrics_mean_dice(m);
    printf("\n  validation: mean Dice %.4f over %d images", mean, m->images);
    CU_ASSERT(mean >= 0 && mean <= 1);
    /* the best checkpoint is written and loads as weights, with the
     * validation's post-processing search, which prediction takes */
    char best[600];
    snprintf(best, sizeof best, "%s/best.safetensors", out);
    TH_OK(tt_weights_load(t->engine->model, best));
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->postprocess);
    tt_infer_model im;
    TH_OK(tt_infer_model_load(t->be, best, 1, 16, 16, TT_CONV_ALGO_IM2COL_GEMM, TT_PRECISION_FP32,
                              &im));
    CU_ASSERT_PTR_NOT_NULL_FATAL(im.class_min_size);
    for (int c = 0; c < t->model.classes; c++) {
        CU_ASSERT_EQUAL(im.class_min_size[c], t->postprocess[c].min_size);
        CU_ASSERT(fabsf(im.class_threshold[c] - t->postprocess[c].threshold) < 1e-6f);
        CU_ASSERT(t->postprocess[c].dice >= t->postprocess[c].default_dice);
    }
    tt_infer_model_free(&im);
    tt_metrics_destroy(m);
    trainer_destroy(t);
    /* the log has a one-line validation record */
    size_t size = 0;
    unsigned char *bytes = rd_read(out, "train.jsonl", &size);
    char *log = calloc(size + 1, 1); /* rd_read does not terminate the text */
    if (bytes && log) memcpy(log, bytes, size);
    free(bytes);
    CU_ASSERT(log && strstr(log, "{\"step\": 2, \"validation\": {\"images\":2,") != NULL);
    /* and the gallery: one picture per validation image, truth | prediction
     * side by side (16 + 8 + 16 pixels wide), listed in the log */
    CU_ASSERT(log && strstr(log, "{\"gallery\":[\"gallery/img_") != NULL);
    char *gallery = log ? strstr(log, "\"gallery\":[\"") : NULL;
    char picture[700];
    int pw = 0, ph = 0, pc = 0;
    if (gallery) {
        snprintf(picture, sizeof picture, "%s/%.*s", out, (int)strcspn(gallery + 12, "\""), gallery + 12);
        CU_ASSERT(stbi_info(picture, &pw, &ph, &pc));
    }
    CU_ASSERT(pw == 40 && ph == 16 && pc == 3);
    /* and the report draws it */
    TH_OK(tt_report_write(out));
    bytes = rd_read(out, "report.html", &size);
    char *html = calloc(size + 1, 1);
    if (bytes && html) memcpy(html, bytes, size);
    free(bytes);
    CU_ASSERT(html && strstr(html, "<svg") != NULL);
    CU_ASSERT(html && strstr(html, "Dice per class") != NULL);
    CU_ASSERT(html && strstr(html, "Device and recipe") != NULL);
    CU_ASSERT(html && strstr(html, "<polyline") != NULL);
    CU_ASSERT(html && strstr(html, "Validation images at step 2") != NULL);
    CU_ASSERT(html && strstr(html, "src='data:image/png;base64,iVBORw0KGgo") != NULL); /* PNG magic */
    CU_ASSERT(html && strstr(html, "(missing)") == NULL);
    free(html);
    /* the log cannot be read (EIO; TT_FAULT=read:1): an error naming it and
     * no page; a picture that cannot be read is captioned missing (read:3:
     * the count goes on while TT_FAULT is set, and the log was call 2) */
    char page[600];
    snprintf(page, sizeof page, "%s/report.html", out);
    unlink(page);
    th_setenv("TT_FAULT", "read:1");
    tt_status s = tt_report_write(out);
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "train.jsonl") != NULL);
    CU_ASSERT_NOT_EQUAL(access(page, F_OK), 0);
    tt_status_free(s);
    th_setenv("TT_FAULT", "read:3");
    TH_OK(tt_report_write(out));
    th_setenv("TT_FAULT", NULL);
    bytes = rd_read(out, "report.html", &size);
    html = calloc(size + 1, 1);
    if (bytes && html) memcpy(html, bytes, size);
    free(bytes);
    CU_ASSERT(html && strstr(html, "(missing)") != NULL);
    free(html);
    free(log), free(w);
    rd_remove(out);
    rd_remove(data);
}

/* --ema: the average after each step against its formula on the host (the
 * weights read back after every step); validation runs on the average and
 * leaves the weights bit for bit; a checkpoint keeps it (ema.<name>), a
 * resume goes on with it, and prediction loads it. */
static void test_ema(void)
{
    char *data = make_dataset(8, 16, 3, 21);
    char *out = rd_tempdir("ema");
    tt_train_options o;
    base_options(&o, data, 16);
    snprintf(o.out, sizeof o.out, "%s", out);
    o.val_fraction = 0.25;
    o.micro_batch = 2, o.steps = 4, o.lr = 1e-2, o.ema = 0.75;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->engine->ema);
    size_t n = t->engine->model->params->trainable_floats;
    float *w = malloc(n * sizeof *w), *e = malloc(n * sizeof *e), *dev = malloc(n * sizeof *dev);
    float *before = malloc(n * sizeof *before);
    TH_OK(tt_model_get_params(t->engine->model, e, NULL)); /* it starts at the weights */
    for (int k = 0; k < 3; k++) {
        tt_step_report r;
        TH_OK(tt_trainer_step(t, &r));
        TH_OK(tt_model_get_params(t->engine->model, w, NULL));
        for (size_t i = 0; i < n; i++) e[i] = e[i] * 0.75f + 0.25f * w[i];
    }
    TH_OK(tt_read(t->be, dev, tt_mem_of(t->engine->ema), n * sizeof *dev));
    double err = max_rel(dev, e, n);
    printf("\n  --ema 0.75, 3 steps: the device's average vs the host's: max rel diff %.2e", err);
    CU_ASSERT(err < 1e-6);
    /* validation on the average, the weights untouched */
    TH_OK(tt_model_get_params(t->engine->model, before, NULL));
    tt_metrics *m = NULL;
    TH_OK(tt_trainer_validate(t, &m));
    TH_OK(tt_model_get_params(t->engine->model, w, NULL));
    CU_ASSERT(memcmp(w, before, n * sizeof *w) == 0);
    CU_ASSERT_EQUAL(t->engine->ema_in_use, 0);
    tt_metrics_destroy(m);
    /* the checkpoint holds it; prediction loads it as the weights */
    char path[600];
    snprintf(path, sizeof path, "%s/e.safetensors", out);
    TH_OK(tt_trainer_save(t, path));
    tt_infer_model im;
    TH_OK(tt_infer_model_load(t->be, path, 1, 16, 16, TT_CONV_ALGO_IM2COL_GEMM,
                              TT_PRECISION_FP32, &im));
    TH_OK(tt_model_get_params(im.model, w, NULL));
    CU_ASSERT(memcmp(w, dev, n * sizeof *w) == 0);
    TH_OK(tt_infer_model_use_raw(&im, path)); /* predict --weights raw */
    TH_OK(tt_model_get_params(im.model, w, NULL));
    CU_ASSERT(memcmp(w, before, n * sizeof *w) == 0);
    tt_infer_model_free(&im);
    /* one more step, against a resume from the checkpoint and one step */
    tt_step_report r;
    TH_OK(tt_trainer_step(t, &r));
    TH_OK(tt_read(t->be, e, tt_mem_of(t->engine->ema), n * sizeof *e));
    trainer_destroy(t);
    snprintf(o.resume, sizeof o.resume, "%s", path);
    snprintf(o.out, sizeof o.out, "%s/resumed", out);
    TH_OK(tt_trainer_create(&o, &t));
    TH_OK(tt_trainer_step(t, &r));
    TH_OK(tt_read(t->be, dev, tt_mem_of(t->engine->ema), n * sizeof *dev));
    CU_ASSERT(memcmp(e, dev, n * sizeof *e) == 0);
    trainer_destroy(t);
    free(w), free(e), free(dev), free(before);
    rd_remove(out);
    rd_remove(data);
}

static void test_memory_estimate_and_no_growth(void)
{
    char *data = make_dataset(6, 32, 3, 10);
    tt_train_options o;
    base_options(&o, data, 32);
    o.no_shuffle = 0;
    o.micro_batch = 3, o.accum = 2, o.steps = 40;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &t->be->device},
                            &dry));
    tt_memstats estimate;
    tt_step_config engine = tt_recipe_step(&t->opt, &t->model, t->mask_kind, 1);
    TH_OK(tt_probe_memory(dry, &engine, t->opt.accum, &estimate));
    tt_backend_destroy(dry);
    uint64_t after2 = 0, current2 = 0;
    for (int i = 0; i < o.steps; i++) {
        tt_step_report r;
        TH_OK(tt_trainer_step(t, &r));
        if (i == 1) after2 = t->be->mem.peak_total, current2 = t->be->mem.current_total;
    }
    double off = fabs((double)estimate.peak_total - (double)t->be->mem.peak_total) /
                 (double)t->be->mem.peak_total;
    printf("\n  estimate %llu bytes, measured peak over %d steps %llu (%.2f%% off); peak after "
           "step 2 %llu, after step %d %llu", (unsigned long long)estimate.peak_total, o.steps,
           (unsigned long long)t->be->mem.peak_total, 100 * off, (unsigned long long)after2,
           o.steps, (unsigned long long)t->be->mem.peak_total);
    CU_ASSERT(off <= 0.05);
    CU_ASSERT_EQUAL(t->be->mem.peak_total, after2);       /* no growth */
    CU_ASSERT_EQUAL(t->be->mem.current_total, current2);  /* no leak */
    trainer_destroy(t);
    rd_remove(data);
}

static void test_micro_batch_auto(void)
{
    char *data = make_dataset(4, 32, 3, 11);
    tt_train_options o;
    base_options(&o, data, 32);
    o.micro_batch = 0; /* auto */
    o.batch = 12;
    o.steps = 1;
    o.mem_limit = 2u << 20;
    tt_trainer *t = NULL;
    TH_OK(tt_trainer_create(&o, &t));
    printf("\n  auto under 2 MiB: micro-batch %d x accum %d, peak %llu",
           t->opt.micro_batch, t->opt.accum, (unsigned long long)t->be->mem.peak_total);
    CU_ASSERT(t->opt.micro_batch >= 1 && t->opt.micro_batch < 12);
    CU_ASSERT(t->opt.micro_batch * t->opt.accum >= 12);
    tt_step_report r;
    TH_OK(tt_trainer_step(t, &r));
    CU_ASSERT(t->be->mem.peak_total <= o.mem_limit);
    trainer_destroy(t);
    /* too little for anything: stops before allocating, naming a tile that fits */
    o.mem_limit = 200u << 10;
    o.micro_batch = 2;
    tt_status s = tt_trainer_create(&o, &t);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_OUT_OF_MEMORY);
    if (s) printf("\n  %s", tt_status_message(s));
    tt_status_free(s);
    rd_remove(data);
}

int main(void)
{
    /* One convolution algorithm for every shape, and one that sums the
     * weight gradient image by image (im2col + GEMM): then 4 x 5 and 20 x 1
     * add the same terms in the same order.  Algorithms that reduce over
     * the batch inside a kernel (direct) agree to float rounding (gradients
     * within 1e-6), but AdamW turns the rounding of near-zero gradients into
     * steps of up to lr, which a 1e-5 bound on the weights cannot absorb;
     * and the autotuner could pick different algorithms for the two splits.
     * So every run here sets --algo im2col_gemm (base_options). */
    cache_dir = rd_tempdir("tiles");
    CU_TestInfo tests[] = {
        {"4 x 5 equals 20 x 1 (AdamW, group norm, uneven ignore)", test_accumulation_equivalence},
        {"a device whose kernels run 16 work-items a group trains alike", test_small_work_groups},
        {"short last window normalised by its own count", test_short_last_window},
        {"every loss term: 4 x 5 equals 20 x 1", test_loss_terms_accumulation},
        {"multi-label loss terms: 3 x 4 equals 12 x 1", test_multilabel_loss_accumulation},
        {"parity with PyTorch: AdamW", test_parity_adamw},
        {"parity with PyTorch: SGD momentum", test_parity_sgd},
        {"parity with PyTorch: the loss terms, class weights", test_parity_loss_terms},
        {"resume is bit-identical; bad checkpoints refused", test_resume_bit_identical},
        {"non-finite gradients skip the step", test_nonfinite_skips},
        {"validation split, metrics, best.safetensors", test_validation_and_best},
        {"--ema: the average, validation on it, checkpoint, resume, prediction", test_ema},
        {"memory: estimate within 5%, no growth over steps", test_memory_estimate_and_no_growth},
        {"memory: micro-batch auto fits a limit", test_micro_batch_auto},
        {"learns: loss halves in 100 steps", test_learns},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("train", tests, TH_EVERY);
    rd_remove(cache_dir);
    return rc;
}
