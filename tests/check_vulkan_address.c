/* Checks of the addressed Vulkan shaders too slow for CTest on lavapipe
 * (built, not registered; run by hand):
 *
 *   check_vulkan_address unet [H W BASE N]   (default 960 960 4 10)
 *     the UNet's (depth 2, group norm, im2col + GEMM) forward and backward
 *     on Vulkan (lavapipe, validation on) on N images whose first-level
 *     activations (N x BASE x H x W floats, 141 MiB by default) exceed
 *     maxStorageBufferRange, against OpenCL (PoCL) on the same images and
 *     weights: logits and every gradient, as test_vulkan_unet.c does at
 *     small sizes (the convolution biases too, their sums split under
 *     lavapipe's loop limit: src/backend/loop_budget.h); reports the
 *     dispatches that ran addressed.  (One image of 1536 x 1536 at base
 *     16 would need a 1.3 GiB im2col workspace, so the model runs the
 *     direct convolution, which has no Vulkan shaders yet: many images of
 *     a smaller tile instead.)
 *   check_vulkan_address speed [ROUNDS [TILE BASE]]   (default 3 64 8)
 *     whole training steps (tt_probe_bench: 2 images of TILE x TILE, base
 *     BASE, depth 2) on lavapipe with the bound shaders and with every
 *     launch addressed (TT_VULKAN_ADDRESSED=1), alternating, validation
 *     off; reports the wall and CPU seconds per step of each and their
 *     ratios (the medians of ROUNDS). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"
#include "test_vulkan.h"
#include "train/probe.h"

static int unet_h = 960, unet_w = 960, unet_base = 4, unet_n = 10, rounds = 3, tile = 64, speed_base = 8;

static double clock_seconds(clockid_t which)
{
    struct timespec t;
    clock_gettime(which, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static tt_param_table unet_params; /* the layout of the gradients (the last model's) */

/* Forward and backward of unet_n images on `be`: logits and gradients (malloc'd). */
static void unet_step(tt_backend *be, float **logits, float **grads, size_t *n_logits,
                      size_t *n_grads)
{
    tt_model_spec spec = tt_model_spec_default();
    spec.classes = 2, spec.base_channels = unet_base, spec.depth = 2, spec.groups = 2;
    spec.norm = TT_NORM_GROUP;
    spec.algo = TT_CONV_ALGO_IM2COL_GEMM; /* what Vulkan has */
    tt_model *m = NULL;
    double t0 = now();
    TH_OK(tt_model_create(be, &spec, unet_n, unet_h, unet_w, 7, &m));
    size_t in = (size_t)unet_n * 3 * unet_h * unet_w;
    *n_logits = (size_t)unet_n * spec.classes * unet_h * unet_w;
    *n_grads = m->params->trainable_floats;
    float *x = malloc(in * sizeof *x), *dl = malloc(*n_logits * sizeof *dl);
    *logits = malloc(*n_logits * sizeof **logits);
    *grads = malloc(*n_grads * sizeof **grads);
    CU_ASSERT_FATAL(x && dl && *logits && *grads);
    uint64_t seed = 11;
    th_fill_uniform(x, in, -1, 1, &seed);
    th_fill_uniform(dl, *n_logits, -0.5f, 0.5f, &seed);
    TH_OK(tt_write(be, m->input, x, in * sizeof *x));
    TH_OK(tt_model_zero_grads(m));
    double t1 = now();
    TH_OK(tt_model_forward(m, unet_n, 1));
    TH_OK(tt_read(be, *logits, m->logits, *n_logits * sizeof **logits));
    TH_OK(tt_write(be, m->dlogits, dl, *n_logits * sizeof *dl));
    TH_OK(tt_model_backward(m));
    TH_OK(tt_read(be, *grads, tt_mem_of(m->grad_buffer), *n_grads * sizeof **grads));
    printf("\n  %s: setup %.1f s, forward + backward %.1f s, %zu bytes of activations",
           be->ops->name, t1 - t0, now() - t1, m->memory.activations);
    tt_params_free(&unet_params);
    unet_params = *m->params;
    unet_params.params = malloc(sizeof *unet_params.params * (size_t)m->params->count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unet_params.params);
    memcpy(unet_params.params, m->params->params, sizeof *unet_params.params * (size_t)m->params->count);
    unet_params.capacity = unet_params.count;
    tt_model_destroy(m);
    free(x), free(dl);
}

static void test_unet(void)
{
    tt_backend *vk = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(vk);
    size_t level = (size_t)unet_n * unet_base * unet_h * unet_w * 4;
    printf("\n  %d images of %dx%d, base %d: a first-level activation is %zu bytes, "
           "maxStorageBufferRange %u",
           unet_n, unet_h, unet_w, unet_base, level,
           ((tt_vk_backend *)vk->impl)->properties.limits.maxStorageBufferRange);
    float *l0, *g0, *l1, *g1;
    size_t nl, ng;
    unet_step(th_backend(), &l0, &g0, &nl, &ng);
    unet_step(vk, &l1, &g1, &nl, &ng);
    const tt_vk_backend *impl = vk->impl;
    printf("\n  vulkan dispatches: %llu bound, %llu addressed",
           (unsigned long long)impl->bound_dispatches,
           (unsigned long long)impl->addressed_dispatches);
    if (level > impl->properties.limits.maxStorageBufferRange)
        CU_ASSERT(impl->addressed_dispatches > 0);
    double el = th_max_rel_error_f(l1, l0, nl, 1e-3);
    printf("\n  logits %.2e (max rel, floor 1e-3)", el);
    CU_ASSERT(el < 2e-3);
    /* each gradient, summed over millions of pixels: its error relative
     * to its own largest value (test_vulkan_unet.c's group norm bound) */
    for (int p = 0; p < unet_params.count; p++) {
        const tt_param *q = &unet_params.params[p];
        if (!q->trainable) continue;
        double big = 0, diff = 0;
        for (size_t i = q->offset; i < q->offset + q->count; i++) {
            big = fabs(g0[i]) > big ? fabs(g0[i]) : big;
            diff = fabs(g1[i] - g0[i]) > diff ? fabs(g1[i] - g0[i]) : diff;
        }
        printf("\n    %-24s max |g| %.3e, max |vulkan - opencl| / max |g| %.2e", q->name, big,
               big > 0 ? diff / big : diff);
        CU_ASSERT(diff <= 1e-2 * big);
    }
    free(l0), free(g0), free(l1), free(g1);
    no_messages();
}

/* Seconds per step of `steps` timed steps (after a warm-up run that
 * makes the pipelines) on a lavapipe backend without validation, addressed
 * or not: wall clock, and *cpu the process's CPU time (all of lavapipe's
 * threads; steadier on a shared machine). */
static double step_seconds(int addressed, int steps, uint64_t *dispatches, double *cpu)
{
    th_setenv("TT_VULKAN_VALIDATION", NULL);
    th_setenv("TT_VULKAN_ADDRESSED", addressed ? "1" : NULL);
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"},
                            &be));
    th_setenv("TT_VULKAN_ADDRESSED", NULL);
    tt_step_config c = {.micro_batch = 2, .height = tile, .width = tile, .seed = 1,
                        .optimizer = {.name = "adamw", .lr = 1e-3, .weight_decay = -1}};
    c.model = tt_model_spec_default();
    c.model.classes = 2, c.model.base_channels = speed_base, c.model.depth = 2, c.model.groups = 4;
    c.model.algo = TT_CONV_ALGO_IM2COL_GEMM;
    tt_bench_result r;
    TH_OK(tt_probe_bench(be, &c, 1, 0, 1, &r));
    double cpu0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    TH_OK(tt_probe_bench(be, &c, 1, 1, steps, &r));
    *cpu = (clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / (steps + 1);
    const tt_vk_backend *vk = be->impl;
    CU_ASSERT(addressed ? vk->bound_dispatches == 0 : vk->addressed_dispatches == 0);
    *dispatches = vk->bound_dispatches + vk->addressed_dispatches;
    tt_backend_destroy(be);
    return r.seconds / steps;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_speed(void)
{
    double wall[2][16], cpu[2][16];
    uint64_t dispatches = 0;
    for (int r = 0; r < rounds; r++) {
        for (int a = 0; a < 2; a++) wall[a][r] = step_seconds(a, 3, &dispatches, &cpu[a][r]);
        printf("\n  round %d: bound %.3f s/step (CPU %.3f), addressed %.3f s/step (CPU %.3f)", r,
               wall[0][r], cpu[0][r], wall[1][r], cpu[1][r]);
    }
    double median[2][2];
    for (int a = 0; a < 2; a++) {
        qsort(wall[a], (size_t)rounds, sizeof **wall, by_value);
        qsort(cpu[a], (size_t)rounds, sizeof **cpu, by_value);
        median[a][0] = wall[a][rounds / 2], median[a][1] = cpu[a][rounds / 2];
    }
    printf("\n  median of %d rounds: bound %.3f s/step (CPU %.3f), addressed %.3f s/step (CPU "
           "%.3f); addressed / bound: wall %.3f, CPU %.3f (%llu dispatches a step)",
           rounds, median[0][0], median[0][1], median[1][0], median[1][1],
           median[1][0] / median[0][0], median[1][1] / median[0][1],
           (unsigned long long)dispatches / 5);
    CU_ASSERT(median[0][0] > 0 && median[1][0] > 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CU_TestInfo unet[] = {{"UNet forward and backward past maxStorageBufferRange: Vulkan = OpenCL",
                           test_unet},
                          CU_TEST_INFO_NULL};
    CU_TestInfo speed[] = {{"training steps, bound vs addressed", test_speed}, CU_TEST_INFO_NULL};
    int rc = 2;
    if (strcmp(mode, "unet") == 0) {
        if (argc > 5)
            unet_h = atoi(argv[2]), unet_w = atoi(argv[3]), unet_base = atoi(argv[4]),
            unet_n = atoi(argv[5]);
        rc = th_run_suite("vulkan_address_unet", unet, TH_VULKAN);
    } else if (strcmp(mode, "speed") == 0) {
        if (argc > 2) rounds = atoi(argv[2]);
        if (argc > 4) tile = atoi(argv[3]), speed_base = atoi(argv[4]);
        if (rounds < 1 || rounds > 16) rounds = 3;
        rc = th_run_suite("vulkan_address_speed", speed, TH_VULKAN);
    } else {
        fprintf(stderr,
                "usage: check_vulkan_address unet [H W BASE N] | speed [ROUNDS [TILE BASE]]\n");
    }
    tt_backend_destroy(vk_be);
    tt_params_free(&unet_params);
    return rc;
}
