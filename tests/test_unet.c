/*
 * The whole UNet, forward and backward, against PyTorch (float64) running
 * python/tiletrain_torch.py's model from the same weights: logits, every
 * parameter gradient and batch norm's running statistics.  Also: a short
 * micro-batch, and backward twice adds twice.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "model/unet.h"
#include "ops/conv_autotune.h"
#include "ops/util.h"
#include "io/safetensors.h"

typedef struct {
    const char *label;
    tt_unet_config config;
    int capacity, batch, height, width;
} unet_case;

static int torch_missing;

static tt_status unet_new(tt_backend *be, const tt_unet_config *c, int capacity, int height,
                          int width, uint64_t seed, tt_model **out)
{
    tt_model_spec spec = tt_unet_spec_of(c);
    return tt_model_create(be, &spec, capacity, height, width, seed, out);
}

static tt_model *make(const unet_case *c, float **host_params, float **host_state)
{
    tt_model *u = NULL;
    TH_OK(unet_new(th_backend(), &c->config, c->capacity, c->height, c->width, 11, &u));
    *host_params = malloc(u->params->trainable_floats * sizeof(float));
    *host_state = malloc((u->params->state_floats + 1) * sizeof(float));
    TH_OK(tt_model_get_params(u, *host_params, *host_state));
    return u;
}

/* Writes params, input and dlogits; runs torch; returns the result file or
 * NULL when torch is not available. */
static tt_safetensors *run_torch(const unet_case *c, tt_model *u, const float *params,
                                 const float *state, const float *input, const float *dlogits,
                                 int train)
{
    char in_path[] = "/tmp/tt-unet-in-XXXXXX", out_path[] = "/tmp/tt-unet-out-XXXXXX";
    int fd = mkstemp(in_path);
    close(fd);
    fd = mkstemp(out_path);
    close(fd);
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    for (int i = 0; i < u->params->count; i++) {
        const tt_param *p = &u->params->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        TH_OK(tt_st_writer_add(w, p->name, TT_ST_F32, p->ndim, shape,
                               (p->trainable ? params : state) + p->offset));
    }
    int64_t ishape[4] = {c->batch, 3, c->height, c->width};
    int64_t lshape[4] = {c->batch, c->config.classes, c->height, c->width};
    TH_OK(tt_st_writer_add(w, "input", TT_ST_F32, 4, ishape, input));
    TH_OK(tt_st_writer_add(w, "dlogits", TT_ST_F32, 4, lshape, dlogits));
    TH_OK(tt_st_writer_write(w, in_path));
    tt_st_writer_destroy(w);

    const char *norm = tt_norm_kind_name(c->config.norm);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             TH_PYTHON " %s/tests/torch_unet_check.py %s %s "
             "'{\"classes\": %d, \"base_channels\": %d, \"depth\": %d, \"norm\": \"%s\", "
             "\"groups\": %d, \"train\": %d}'",
             TT_SOURCE_DIR, in_path, out_path, c->config.classes,
             c->config.base_channels, c->config.depth, norm, c->config.groups, train);
    int rc = system(cmd);
    unlink(in_path);
    if (rc != 0) {
        printf("\n  SKIPPED torch comparison: '%s' failed (needs python3-torch and "
               "python/tiletrain_torch.py or $TT_TORCH_UNET)\n", cmd);
        torch_missing = 1;
        unlink(out_path);
        return NULL;
    }
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(out_path, &f));
    unlink(out_path);
    return f;
}

/* Error relative to the tensor's largest reference magnitude (gradients sum
 * many terms), floored at `floor`: a conv bias before batch norm has an
 * exact gradient of 0, so its float error is measured against the others. */
static double compare(const float *got, const float *want, size_t n, double floor)
{
    double scale = floor, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]) / (scale + 1e-12);
        if (isnan(e)) return INFINITY;
        worst = fmax(worst, e);
    }
    return worst;
}

static void check_against_torch(const unet_case *c)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float *params, *state;
    tt_model *u = make(c, &params, &state);
    size_t in_n = (size_t)c->batch * 3 * c->height * c->width;
    size_t out_n = (size_t)c->batch * c->config.classes * c->height * c->width;
    float *input = malloc(in_n * sizeof *input), *dlogits = malloc(out_n * sizeof *dlogits);
    float *logits = malloc(out_n * sizeof *logits);
    float *grads = malloc(u->params->trainable_floats * sizeof *grads);
    float *grads2 = malloc(u->params->trainable_floats * sizeof *grads2);
    uint64_t seed = 5;
    th_fill_uniform(input, in_n, 0, 1, &seed);
    th_fill_uniform(dlogits, out_n, -1, 1, &seed);

    /* the logits are read before backward: the memory plan gives their
     * bytes to backward temporaries once the loss has read them */
    TH_OK(tt_write(be, u->input, input, in_n * sizeof(float)));
    TH_OK(tt_model_forward(u, c->batch, 1));
    TH_OK(tt_read(be, logits, u->logits, out_n * sizeof(float)));
    TH_OK(tt_write(be, u->dlogits, dlogits, out_n * sizeof(float)));
    TH_OK(tt_model_backward(u));
    TH_OK(tt_read(be, grads, tt_mem_of(u->grad_buffer), u->params->trainable_floats * sizeof(float)));
    float *new_state = malloc((u->params->state_floats + 1) * sizeof(float));
    TH_OK(tt_model_get_params(u, NULL, new_state));

    /* forward and backward again add the same gradient again (eval-mode
     * batch norm statistics are not involved: the batch is the same) */
    TH_OK(tt_model_forward(u, c->batch, 1));
    TH_OK(tt_write(be, u->dlogits, dlogits, out_n * sizeof(float)));
    TH_OK(tt_model_backward(u));
    TH_OK(tt_read(be, grads2, tt_mem_of(u->grad_buffer), u->params->trainable_floats * sizeof(float)));
    /* relative, with a floor of 1e-3 of the largest gradient: the conv
     * biases before a norm have an exact gradient of 0, so theirs is float
     * noise from one backward to the next (the kernels reduce in parallel) */
    double largest = 0, twice = 0;
    for (size_t i = 0; i < u->params->trainable_floats; i++) largest = fmax(largest, fabs(2 * grads[i]));
    for (size_t i = 0; i < u->params->trainable_floats; i++)
        twice = fmax(twice, fabs(grads2[i] - 2 * grads[i]) / (fabs(2 * grads[i]) + 1e-3 * largest));
    printf("\n  %s: backward twice vs 2x: %.2e", c->label, twice);
    CU_ASSERT(twice < 1e-5);

    tt_safetensors *f = run_torch(c, u, params, state, input, dlogits, 1);
    if (f) {
        float *want = malloc(out_n * sizeof *want);
        int64_t lshape[4] = {c->batch, c->config.classes, c->height, c->width};
        TH_OK(tt_safetensors_get_f32(f, "logits", 4, lshape, want));
        double e = compare(logits, want, out_n, 0);
        printf("\n  %s: logits vs torch: %.2e", c->label, e);
        CU_ASSERT(e < 1e-4);
        free(want);
        /* the floor: 1e-2 of the largest parameter gradient of the model (the
         * conv bias before batch norm has an exact gradient of 0 and float
         * noise near 1e-7 of the largest) */
        double floor = 0;
        for (size_t i = 0; i < u->params->trainable_floats; i++) floor = fmax(floor, fabs(grads[i]));
        floor *= 1e-2;
        double worst = 0;
        const char *worst_name = "";
        for (int i = 0; i < u->params->count; i++) {
            const tt_param *p = &u->params->params[i];
            int64_t shape[4];
            for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
            float *ref = malloc(p->count * sizeof *ref);
            char name[96];
            if (p->trainable) {
                snprintf(name, sizeof name, "grad.%s", p->name);
                TH_OK(tt_safetensors_get_f32(f, name, p->ndim, shape, ref));
                e = compare(grads + p->offset, ref, p->count, floor);
            } else {
                TH_OK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, ref));
                e = compare(new_state + p->offset, ref, p->count, 0);
            }
            if (e > worst) worst = e, worst_name = p->name;
            free(ref);
        }
        printf("\n  %s: worst gradient/statistic vs torch: %.2e (%s)", c->label, worst, worst_name);
        CU_ASSERT(worst < 1e-4);
        tt_safetensors_close(f);
    }
    free(input), free(dlogits), free(logits), free(grads), free(grads2), free(params), free(state);
    free(new_state);
    tt_model_destroy(u);
    CU_ASSERT_EQUAL(be->mem.current_total, 0); /* everything freed */
}

static void test_group_norm(void)
{
    unet_case c = {"group norm", {3, 3, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, 2, 2, 16, 12};
    check_against_torch(&c);
}

static void test_batch_norm(void)
{
    unet_case c = {"batch norm", {3, 2, 4, 2, TT_NORM_BATCH, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, 3, 3, 8, 8};
    check_against_torch(&c);
}

static void test_no_norm_short_batch(void)
{
    /* capacity 3, a micro-batch of 1: the short last micro-batch */
    unet_case c = {"no norm, batch 1 of 3", {3, 4, 4, 1, TT_NORM_NONE, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, 3, 1, 6, 10};
    check_against_torch(&c);
}

/* Gradients and running statistics of one step, with or without
 * checkpointing (and with the arena filled with NaN before the forward:
 * `poison`); the activation arena's size in *arena. */
static void one_step_poisoned(tt_unet_config cfg, int checkpointing, int poison, float **grads,
                              float **state, size_t *count, size_t *arena, size_t *unplanned)
{
    cfg.checkpointing = checkpointing;
    tt_model *u = NULL;
    th_setenv("TT_POISON_ACTIVATIONS", poison ? "" : NULL); /* NaN before each forward */
    TH_OK(unet_new(th_backend(), &cfg, 2, 16, 16, 9, &u));
    size_t in_n = 2 * 3 * 16 * 16, out_n = 2 * (size_t)cfg.classes * 16 * 16;
    float *input = malloc(in_n * sizeof *input), *dlogits = malloc(out_n * sizeof *dlogits);
    uint64_t seed = 8;
    th_fill_uniform(input, in_n, 0, 1, &seed);
    th_fill_uniform(dlogits, out_n, -1, 1, &seed);
    TH_OK(tt_write(u->be, u->input, input, in_n * sizeof(float)));
    TH_OK(tt_model_forward(u, 2, 1));
    TH_OK(tt_write(u->be, u->dlogits, dlogits, out_n * sizeof(float)));
    TH_OK(tt_model_backward(u));
    *count = u->params->trainable_floats;
    *grads = malloc(*count * sizeof **grads);
    *state = malloc((u->params->state_floats + 1) * sizeof **state);
    TH_OK(tt_read(u->be, *grads, tt_mem_of(u->grad_buffer), *count * sizeof(float)));
    TH_OK(tt_model_get_params(u, NULL, *state));
    *arena = u->memory.activations;
    *unplanned = u->memory.activations_apart;
    tt_model_destroy(u);
    th_setenv("TT_POISON_ACTIVATIONS", NULL);
    free(input), free(dlogits);
}

static void one_step(tt_unet_config cfg, int checkpointing, float **grads, float **state,
                     size_t *count, size_t *arena, size_t *unplanned)
{
    one_step_poisoned(cfg, checkpointing, 0, grads, state, count, arena, unplanned);
}

/* The memory plan never gives a tensor's bytes to another while it is
 * still read: with the arena filled with NaN before each forward, every
 * gradient and running statistic comes out the same bits. */
static void test_poisoned_arena_same_bits(void)
{
    tt_unet_config configs[] = {{3, 3, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, {3, 2, 4, 2, TT_NORM_BATCH, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32},
                                {3, 2, 4, 2, TT_NORM_NONE, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}};
    for (int k = 0; k < 3; k++)
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            float *g0, *g1, *s0, *s1;
            size_t n, a0, a1, u0, u1;
            one_step_poisoned(configs[k], ckpt, 0, &g0, &s0, &n, &a0, &u0);
            one_step_poisoned(configs[k], ckpt, 1, &g1, &s1, &n, &a1, &u1);
            tt_param_table t = {0};
            TH_OK(tt_unet_params(&configs[k], &t));
            CU_ASSERT(memcmp(g0, g1, n * sizeof *g0) == 0);
            CU_ASSERT(memcmp(s0, s1, t.state_floats * sizeof *s0) == 0);
            tt_params_free(&t);
            free(g0), free(g1), free(s0), free(s1);
        }
}

static void test_checkpointing_identical(void)
{
    tt_unet_config configs[] = {{3, 3, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, {3, 2, 4, 2, TT_NORM_BATCH, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32},
                                {3, 2, 4, 2, TT_NORM_NONE, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}};
    for (int k = 0; k < 3; k++) {
        float *g0, *g1, *s0, *s1;
        size_t n, a0, a1, u0, u1;
        one_step(configs[k], 0, &g0, &s0, &n, &a0, &u0);
        one_step(configs[k], 1, &g1, &s1, &n, &a1, &u1);
        int same = memcmp(g0, g1, n * sizeof *g0) == 0;
        printf("\n  %s: checkpointing gradients %s; activations %zu bytes planned (%zu as separate "
               "buffers), %zu with checkpointing", tt_norm_kind_name(configs[k].norm),
               same ? "bit-identical" : "DIFFER", a0, u0, a1);
        CU_ASSERT(same);
        CU_ASSERT(a0 < u0);  /* planning reuses dead bytes */
        CU_ASSERT(a1 < a0);  /* checkpointing keeps less */
        tt_unet_config c = configs[k];
        if (c.norm == TT_NORM_BATCH) {
            tt_param_table t = {0};
            TH_OK(tt_unet_params(&c, &t));
            /* the recomputation must not update the running statistics again */
            CU_ASSERT(memcmp(s0, s1, t.state_floats * sizeof *s0) == 0);
            tt_params_free(&t);
        }
        free(g0), free(g1), free(s0), free(s1);
    }
}

/* 16-bit storage (precision fp16, bf16): what the forward keeps is packed
 * and unpacked where the backward reads it, so (1) the plan never hands out
 * a tensor's bytes while it is read (the NaN-poisoned arena gives the same
 * bits), (2) the arena is smaller than fp32's without checkpointing, and
 * (3) the gradients stay near fp32's: |g16 - g32| / |g32| over all of them
 * (L2; per tensor, max |g16 - g32| / max |g32| is printed, the tensor's
 * scale at least 1e-3 of the largest gradient).  A stored value moves by
 * at most 2^-11 (fp16) or 2^-8 (bf16) of itself, and the forward computes
 * with the stored values, so the function differentiated is a slightly
 * different one: on these 16x16 tiles the gradients move by up to 5.8e-3
 * (fp16) and 1.3e-1 (bf16, through the norms; 1.8e-3 without), far more
 * than the rounding, because max-pool ties and near-cancelling norm sums
 * change with it.  With checkpointing (and a norm) the step is banded
 * (model/exec_band.c): every tensor is stored, enc.0's convolutions of the
 * image and the gradients too, and the fp16 gradients move by up to 5.7e-2
 * (batch norm: an image's convolution has a mean far above its spread, so
 * a rounded one loses digits in x - mean; 3.3e-2 kept and banded alike on
 * a centred image).  The bounds are about 3x those; an unpack from the
 * wrong place or a dropped rounding gives errors of order 1. */
static void test_half_storage(void)
{
    tt_unet_config configs[] = {{3, 3, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}, {3, 2, 4, 2, TT_NORM_BATCH, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32},
                                {3, 2, 4, 2, TT_NORM_NONE, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}};
    const tt_precision kinds[2] = {TT_PRECISION_FP16, TT_PRECISION_BF16};
    const double bounds[2][2] = {{2e-2, 4e-1}, {1.5e-1, 4e-1}}; /* [checkpointing][kind] */
    for (int k = 0; k < 3; k++)
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            float *g32, *s32;
            size_t n, a32, u32;
            one_step_poisoned(configs[k], ckpt, 0, &g32, &s32, &n, &a32, &u32);
            tt_param_table t = {0};
            TH_OK(tt_unet_params(&configs[k], &t));
            for (int p = 0; p < 2; p++) {
                tt_unet_config c = configs[k];
                c.precision = kinds[p];
                float *g0, *g1, *s0, *s1;
                size_t a0, a1, u0, u1;
                one_step_poisoned(c, ckpt, 0, &g0, &s0, &n, &a0, &u0);
                one_step_poisoned(c, ckpt, 1, &g1, &s1, &n, &a1, &u1);
                CU_ASSERT(memcmp(g0, g1, n * sizeof *g0) == 0);
                CU_ASSERT(memcmp(s0, s1, t.state_floats * sizeof *s0) == 0);
                if (!ckpt) CU_ASSERT(a0 < a32);
                /* a tensor whose fp32 gradient is rounding noise (a conv
                 * bias before batch norm: 0 in exact arithmetic) is
                 * measured against the largest gradient of all */
                double largest = 0, worst = 0, d2 = 0, r2 = 0;
                for (size_t j = 0; j < n; j++) largest = fmax(largest, fabs(g32[j]));
                for (size_t j = 0; j < n; j++)
                    d2 += ((double)g0[j] - g32[j]) * ((double)g0[j] - g32[j]),
                    r2 += (double)g32[j] * g32[j];
                double l2 = sqrt(d2 / r2);
                const char *worst_name = "";
                for (int i = 0; i < t.count; i++) {
                    const tt_param *q = &t.params[i];
                    if (!q->trainable) continue;
                    double scale = 1e-3 * largest, diff = 0;
                    for (size_t j = 0; j < q->count; j++) {
                        scale = fmax(scale, fabs(g32[q->offset + j]));
                        diff = fmax(diff, fabs((double)g0[q->offset + j] - g32[q->offset + j]));
                    }
                    double rel = diff / scale;
                    if (getenv("TT_TEST_VERBOSE")) printf("\n    %-24s %.2e", q->name, rel);
                    if (!(rel <= worst)) worst = rel, worst_name = q->name;
                }
                printf("\n  %s%s %s: all gradients %.2e (L2, relative); worst tensor %.2e of its "
                       "largest (%s); arena %zu bytes (fp32 %zu)", tt_norm_kind_name(c.norm),
                       ckpt ? " checkpointing" : "", tt_precision_name(c.precision), l2, worst,
                       worst_name, a0, a32);
                CU_ASSERT(l2 <= bounds[ckpt][p]);
                free(g0), free(g1), free(s0), free(s1);
            }
            tt_params_free(&t);
            free(g32), free(s32);
        }
}

/* The banded step (model/exec_band.c) in fp32 (TT_UNET_BANDED=1) takes
 * the same gradients and running statistics as the plain checkpointed
 * step, up to the order of the convolutions' sums: bands of 2 rows (every
 * halo and every band's late write in place) and of the whole tile, group
 * and batch norm, all within 1e-5 of the largest (5e-7 measured); and the
 * NaN-poisoned arena gives the same bits. */
static void test_banded_step(void)
{
    tt_unet_config configs[] = {{3, 3, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32},
                                {3, 2, 4, 2, TT_NORM_BATCH, 1, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32}};
    const char *rows[] = {"2", "16"};
    for (int k = 0; k < 2; k++) {
        float *g0, *s0;
        size_t n, a0, u0;
        one_step(configs[k], 1, &g0, &s0, &n, &a0, &u0);
        tt_param_table t = {0};
        TH_OK(tt_unet_params(&configs[k], &t));
        th_setenv("TT_UNET_BANDED", "1");
        for (int r = 0; r < 2; r++) {
            th_setenv("TT_UNET_BAND_ROWS", rows[r]);
            float *g1, *s1, *g2, *s2;
            size_t a1, u1;
            one_step_poisoned(configs[k], 1, 0, &g1, &s1, &n, &a1, &u1);
            one_step_poisoned(configs[k], 1, 1, &g2, &s2, &n, &a1, &u1);
            CU_ASSERT(memcmp(g1, g2, n * sizeof *g1) == 0);
            double largest = 0, worst = 0;
            for (size_t j = 0; j < n; j++) largest = fmax(largest, fabs(g0[j]));
            for (size_t j = 0; j < n; j++) worst = fmax(worst, fabs((double)g1[j] - g0[j]));
            for (size_t j = 0; j < t.state_floats; j++)
                worst = fmax(worst, fabs((double)s1[j] - s0[j]));
            printf("\n  %s, bands of %s rows: largest difference %.2e of the largest gradient",
                   tt_norm_kind_name(configs[k].norm), rows[r], worst / largest);
            CU_ASSERT(worst <= 1e-5 * largest);
            free(g1), free(s1), free(g2), free(s2);
        }
        th_setenv("TT_UNET_BANDED", NULL), th_setenv("TT_UNET_BAND_ROWS", NULL);
        tt_params_free(&t);
        free(g0), free(s0);
    }
}

/* Once a step has run (and the autotuner has timed what it ran), a model
 * of the same shapes sizes its shared workspace from those picks alone:
 * its recorded step holds no shape the model does not run (a decoder's
 * whole [up, skip] conv1, the image's gradient), so none is sized for
 * every candidate. */
static void test_workspace_of_what_runs(void)
{
    tt_unet_config cfg = {3, 2, 4, 2, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32};
    tt_model *u = NULL, *again = NULL;
    TH_OK(unet_new(th_backend(), &cfg, 2, 16, 24, 5, &u));
    TH_OK(tt_fill(u->be, u->input, 0.5f, 2 * 3 * 16 * 24));
    TH_OK(tt_model_forward(u, 2, 1));
    TH_OK(tt_fill(u->be, u->dlogits, 0.25f, 2 * 2 * 16 * 24));
    TH_OK(tt_model_backward(u));
    uint64_t before = tt_conv_autotune_stats_get().sized_unknown;
    TH_OK(unet_new(th_backend(), &cfg, 2, 16, 24, 5, &again));
    uint64_t unknown = tt_conv_autotune_stats_get().sized_unknown - before;
    printf("\n  workspace after a step: %zu bytes (%zu before), %llu shapes sized for every "
           "candidate", again ? again->memory.workspace : 0, u->memory.workspace,
           (unsigned long long)unknown);
    CU_ASSERT_EQUAL(unknown, 0);
    tt_model_destroy(again);
    tt_model_destroy(u);
}

static void test_bad_tile(void)
{
    tt_unet_config cfg = {3, 2, 4, 3, TT_NORM_GROUP, 2, 0, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32};
    tt_model *u = NULL;
    tt_status s = unet_new(th_backend(), &cfg, 1, 20, 16, 1, &u);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "multiples of 8") != NULL);
    CU_ASSERT(s && strstr(tt_status_message(s), "--tile 24x16") != NULL);
    CU_ASSERT_PTR_NULL(u);
    tt_status_free(s);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"group norm UNet vs torch", test_group_norm},
        {"batch norm UNet vs torch (running statistics too)", test_batch_norm},
        {"no-norm UNet, short micro-batch", test_no_norm_short_batch},
        {"checkpointing: identical gradients, less memory", test_checkpointing_identical},
        {"NaN-poisoned arena: the same bits (no live bytes reused)", test_poisoned_arena_same_bits},
        {"16-bit storage: poisoned arena same bits, gradients near fp32", test_half_storage},
        {"banded step in fp32: the plain step's gradients, in bands of any height", test_banded_step},
        {"workspace sized for what the model runs", test_workspace_of_what_runs},
        {"tile not a multiple of 2^depth", test_bad_tile},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("unet", tests, TH_EVERY);
}
