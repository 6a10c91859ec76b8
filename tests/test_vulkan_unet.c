/* The whole UNet on the Vulkan backend: forward and backward of the same
 * model (same spec, same seed, so the same weights), the same images and
 * the same upstream gradient on OpenCL (PoCL) and on Vulkan (lavapipe,
 * validation on), compared: logits, every parameter's gradient and the
 * batch norm running statistics.  The convolutions run im2col + GEMM on
 * both (the AUTO case lets Vulkan pick the others too); the two sum in
 * different orders, so the bounds are float-rounding ones.  A norm's backward
 * amplifies rounding: on the batch norm case OpenCL's own direct and
 * im2col + GEMM gradients differ by 1.7e-2 (max relative, floor 1e-3), on
 * the group norm case by 3e-4, without a norm by 8e-6; the bounds sit a
 * few times above those spreads, far below what a wrong kernel gives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "ops/util.h"
#include "test_vulkan.h"

typedef struct unet_case {
    const char *name;
    tt_norm_kind norm;
    int batch, h, w;
    double grad_bound;  /* max relative error of a gradient (floor 1e-3) */
    int vulkan_auto;    /* Vulkan's model asks for AUTO: the dispatch must pick
                           among the algorithms Vulkan has */
} unet_case;

/* logits, then gradients, then running statistics, from one forward and
 * backward of the case on `be` (host arrays, malloc'd). */
static void step(tt_backend *be, const unet_case *k, float **logits, float **grads, float **stats,
                 size_t *n_logits, size_t *n_grads, size_t *n_stats)
{
    tt_model_spec spec = tt_model_spec_default();
    spec.classes = 3, spec.base_channels = 4, spec.depth = 2, spec.groups = 2;
    spec.norm = k->norm;
    spec.algo = k->vulkan_auto && be != th_backend() ? TT_CONV_ALGO_AUTO : TT_CONV_ALGO_IM2COL_GEMM;
    tt_model *m = NULL;
    TH_OK(tt_model_create(be, &spec, k->batch, k->h, k->w, 7, &m));
    size_t in = (size_t)k->batch * 3 * k->h * k->w;
    *n_logits = (size_t)k->batch * spec.classes * k->h * k->w;
    *n_grads = m->params->trainable_floats;
    *n_stats = m->params->state_floats;
    float *x = malloc(in * sizeof *x);
    uint64_t seed = 11;
    th_fill_uniform(x, in, -1, 1, &seed);
    float *dl = malloc(*n_logits * sizeof *dl);
    th_fill_uniform(dl, *n_logits, -0.5f, 0.5f, &seed);
    TH_OK(tt_write(be, m->input, x, in * sizeof *x));
    TH_OK(tt_model_zero_grads(m));
    *logits = malloc(*n_logits * sizeof **logits);
    *grads = malloc(*n_grads * sizeof **grads);
    *stats = malloc((*n_stats + 1) * sizeof **stats);
    TH_OK(tt_model_forward(m, k->batch, 1));
    /* the logits now: the plan gives their room to backward's temporaries */
    TH_OK(tt_read(be, *logits, m->logits, *n_logits * sizeof **logits));
    TH_OK(tt_write(be, m->dlogits, dl, *n_logits * sizeof *dl));
    TH_OK(tt_model_backward(m));
    TH_OK(tt_read(be, *grads, tt_mem_of(m->grad_buffer), *n_grads * sizeof **grads));
    TH_OK(tt_model_get_params(m, NULL, *stats));
    tt_model_destroy(m);
    free(x), free(dl);
}

static void check(const unet_case *k)
{
    float *l0, *g0, *s0, *l1, *g1, *s1;
    size_t nl, ng, ns;
    step(th_backend(), k, &l0, &g0, &s0, &nl, &ng, &ns);
    step(vulkan(), k, &l1, &g1, &s1, &nl, &ng, &ns);
    double el = th_max_rel_error_f(l1, l0, nl, 1e-3);
    double eg = th_max_rel_error_f(g1, g0, ng, 1e-3);
    double es = ns ? th_max_rel_error_f(s1, s0, ns, 1e-3) : 0;
    printf("\n  %s: logits %.2e, %zu gradients %.2e, %zu statistics %.2e (max rel, floor 1e-3)",
           k->name, el, ng, eg, ns, es);
    CU_ASSERT(el < 2e-3);
    CU_ASSERT(eg < k->grad_bound);
    CU_ASSERT(es < 1e-4);
    free(l0), free(g0), free(s0), free(l1), free(g1), free(s1);
    no_messages();
}

static void test_group_norm(void)
{
    unet_case k = {"group norm, 2 images of 16x24", TT_NORM_GROUP, 2, 16, 24, 1e-2, 0};
    check(&k);
}

static void test_batch_norm(void)
{
    unet_case k = {"batch norm, 3 images of 16x16", TT_NORM_BATCH, 3, 16, 16, 5e-2, 0};
    check(&k);
}

/* AUTO on Vulkan: im2col + GEMM, DIRECT and Winograd are there, the
 * F(4x4) Winograds are not, so the dispatch must not offer them to the
 * autotuner. */
static void test_auto_on_vulkan(void)
{
    CU_ASSERT(tt_backend_has_program(vulkan(), "conv"));
    CU_ASSERT(tt_backend_has_program(vulkan(), "util"));
    CU_ASSERT(tt_backend_has_program(vulkan(), "conv_direct"));
    CU_ASSERT(tt_backend_has_program(vulkan(), "conv_winograd"));
    CU_ASSERT(!tt_backend_has_program(vulkan(), "conv_winograd4"));
    CU_ASSERT(tt_backend_has_program(th_backend(), "conv_direct")); /* OpenCL has them all */
    unet_case k = {"group norm, AUTO on Vulkan", TT_NORM_GROUP, 2, 16, 16, 1e-2, 1};
    check(&k);
}

static void test_no_norm(void)
{
    unet_case k = {"no norm, 1 image of 8x16", TT_NORM_NONE, 1, 8, 16, 1e-4, 0};
    check(&k);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"UNet forward and backward, group norm: Vulkan = OpenCL", test_group_norm},
        {"UNet forward and backward, batch norm: Vulkan = OpenCL", test_batch_norm},
        {"UNet forward and backward, no norm: Vulkan = OpenCL", test_no_norm},
        {"AUTO on Vulkan picks among the algorithms Vulkan has", test_auto_on_vulkan},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_unet", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    return rc;
}
