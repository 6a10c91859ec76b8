/*
 * The UNet over a ResNet encoder (--model unet-resnet18 | unet-resnet34)
 * against PyTorch: python/unet_resnet.py's UnetResNet in float64
 * (tests/torch_resnet_unet_check.py) from the same weights, one step:
 * logits, every parameter gradient, the running statistics and
 * num_batches_tracked after it; in training, with the encoder's batch
 * norms frozen (FrozenBatchNorm2d), with every norm frozen, and in eval
 * mode.  A state_dict written by torch loads with nothing missing or
 * unexpected (test_decoders checks every kind's names against smp's), a converted
 * torchvision resnet34 loads into the encoder under --init-prefix encoder.
 * And --checkpointing gives the run without's bits in less memory.
 * On Vulkan the suite runs the checks that reach its kernels (the ResNet-18
 * step on the autotuner's picks, the bottleneck and grouped blocks,
 * recomputation, 16-bit storage); the others are smp_opencl_only().
 * (smp_compare.h: how.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "io/safetensors.h"
#include "smp_compare.h"
#include "model/model.h"
#include "model/weights.h"
#include "ops/conv_algo.h"
#include "ops/util.h"

static void test_resnet18_train(void)
{
    rcase c = {"resnet18 train", "unet-resnet18", "train", 2, 64, 96, 1, NULL};
    smp_check_step(&c);
}

/* A check of OpenCL alone (smp_opencl_only), its twin not kept for Vulkan. */
static void check_step_on_opencl(const rcase *c)
{
    if (smp_opencl_only()) return;
    smp_twin_both = 0;
    smp_check_step(c);
    smp_twin_both = 1;
}

static void test_resnet18_frozen_encoder_bn(void)
{
    rcase c = {"resnet18 frozen encoder BN", "unet-resnet18", "freeze", 2, 64, 96, 0, NULL};
    check_step_on_opencl(&c);
}

static void test_resnet18_frozen_bn(void)
{
    rcase c = {"resnet18 every BN frozen", "unet-resnet18", "freeze_all", 2, 64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    check_step_on_opencl(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_resnet18_eval(void)
{
    rcase c = {"resnet18 eval", "unet-resnet18", "eval", 2, 64, 96, 0, NULL};
    check_step_on_opencl(&c);
}

/* ResNet-18's blocks, more of them */
static void test_resnet34_train(void)
{
    rcase c = {"resnet34 train", "unet-resnet34", "train", 2, 64, 96, 0, NULL};
    check_step_on_opencl(&c);
}

/* Bottleneck blocks, and ResNeXt's grouped 3x3 convolutions: the
 * autotuner's picks on OpenCL; on Vulkan im2col_gemm's (timing a fresh
 * cache's candidates for these shapes took 105 s of lavapipe; the
 * ResNet-18 steps above run the autotuner's picks there). */
static void bottleneck_step(const rcase *c)
{
    smp_convs = smp_picks_on_opencl();
    smp_check_step(c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_resnet50_train(void)
{
    rcase c = {"resnet50 train", "unet-resnet50", "train", 2, 32, 64, 0, NULL};
    bottleneck_step(&c);
}

static void test_resnext50_train(void)
{
    rcase c = {"resnext50_32x4d train", "unet-resnext50_32x4d", "train", 2, 32, 64, 0, NULL};
    bottleneck_step(&c);
}

static void test_resnet18_checkpointing(void)
{
    rcase c = {"resnet18 train", "unet-resnet18", "train", 2, 64, 96, 0, NULL};
    smp_check_checkpointing(&c);
}

static void test_resnet34_checkpointing_frozen(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"resnet34 every BN frozen", "unet-resnet34", "freeze_all", 2, 32, 32, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_checkpointing(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}


static void test_resnet18_16bit(void)
{
    rcase c = {"resnet18 train", "unet-resnet18", "train", 2, 64, 96, 0, NULL};
    smp_check_16bit(&c);
}




/* A state_dict torch wrote (its own init, statistics off 0 and 1, counters
 * 7) loads with nothing missing or unexpected, every value as written. */
static void test_torch_state_dict_loads(void)
{
    if (smp_opencl_only() || !smp_have("torch")) return;
    char path[64], cmd[512];
    smp_temp_path(path, sizeof path, "sd");
    snprintf(cmd, sizeof cmd, PY " %s/tests/torch_resnet_unet_check.py state-dict resnet34 %d %s 3",
             TT_SOURCE_DIR, CLASSES, path);
    CU_ASSERT_FATAL(smp_run(cmd));
    tt_model *m = smp_create("unet-resnet34", "train", 2, 32, 32);
    tt_weights_report r;
    TH_OK(tt_weights_init(m, path, NULL, &r));
    char text[1024];
    tt_weights_report_text(&r, text, sizeof text);
    printf("\n  %s", text);
    CU_ASSERT_EQUAL(r.missing, 0);
    CU_ASSERT_EQUAL(r.unexpected, 0);
    CU_ASSERT_EQUAL(r.matched, m->params->count + m->counter_count);
    /* the values arrived where their names say */
    const tt_param_table *pt = m->params;
    float *params = malloc(pt->trainable_floats * sizeof *params);
    float *state = malloc((pt->state_floats + 1) * sizeof *state);
    TH_OK(tt_model_get_params(m, params, state));
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    int differ = 0;
    for (int i = 0; i < pt->count; i++) {
        const tt_param *p = &pt->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        float *ref = malloc(p->count * sizeof *ref);
        TH_OK(tt_safetensors_get_f32(f, p->name, p->ndim, shape, ref));
        differ += memcmp(ref, (p->trainable ? params : state) + p->offset, p->count * sizeof *ref) != 0;
        free(ref);
    }
    for (int i = 0; i < m->counter_count; i++) differ += *m->counters[i].value != 7;
    printf("\n  tensors or counters differing from the file: %d", differ);
    CU_ASSERT_EQUAL(differ, 0);
    tt_safetensors_close(f);
    unlink(path);
    free(params), free(state);
    tt_model_destroy(m);
}

/* torchvision's resnet34() (random weights), converted by
 * tools/convert_weights.py --drop fc., loads into unet-resnet34's encoder
 * under the prefix encoder.: every encoder tensor and counter found,
 * nothing unexpected; only the decoder and head are missing. */
static void test_torchvision_encoder_loads(void)
{
    if (smp_opencl_only() || !smp_have("torch, torchvision")) return;
    char pth[64], st[64], cmd[768];
    smp_temp_path(pth, sizeof pth, "pth");
    smp_temp_path(st, sizeof st, "st");
    snprintf(cmd, sizeof cmd, PY " %s/tests/torch_resnet_unet_check.py torchvision resnet34 %s 4",
             TT_SOURCE_DIR, pth);
    CU_ASSERT_FATAL(smp_run(cmd));
    snprintf(cmd, sizeof cmd, PY " %s/tools/convert_weights.py %s %s --drop fc. >/dev/null",
             TT_SOURCE_DIR, pth, st);
    int converted = smp_run(cmd);
    unlink(pth);
    CU_ASSERT_FATAL(converted);
    tt_model *m = smp_create("unet-resnet34", "train", 2, 32, 32);
    int encoder = 0, total = m->params->count + m->counter_count;
    for (int i = 0; i < m->params->count; i++) encoder += smp_is_encoder(m->params->params[i].name);
    for (int i = 0; i < m->counter_count; i++) encoder += smp_is_encoder(m->counters[i].name);
    tt_weights_report r;
    TH_OK(tt_weights_init(m, st, "encoder.", &r));
    char text[1024];
    tt_weights_report_text(&r, text, sizeof text);
    printf("\n  %s", text);
    printf("\n  the model's encoder has %d tensors and counters of %d", encoder, total);
    CU_ASSERT_EQUAL(r.unexpected, 0);
    CU_ASSERT_EQUAL(r.matched, encoder);
    CU_ASSERT_EQUAL(r.missing, total - encoder);
    int named_encoder = 0;
    for (int i = 0; i < r.missing && i < TT_WEIGHTS_REPORT_NAMES; i++)
        named_encoder += smp_is_encoder(r.missing_names[i]);
    CU_ASSERT_EQUAL(named_encoder, 0);
    /* the stem's weights are the file's conv1.weight */
    const tt_param *conv = tt_params_find(m->params, "encoder.conv1.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(conv);
    float *params = malloc(m->params->trainable_floats * sizeof *params);
    float *ref = malloc(conv->count * sizeof *ref);
    TH_OK(tt_model_get_params(m, params, NULL));
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(st, &f));
    int64_t shape[4] = {64, 3, 7, 7};
    TH_OK(tt_safetensors_get_f32(f, "conv1.weight", 4, shape, ref));
    CU_ASSERT(memcmp(ref, params + conv->offset, conv->count * sizeof *ref) == 0);
    tt_safetensors_close(f);
    unlink(st);
    free(params), free(ref);
    tt_model_destroy(m);
}

int main(void)
{
    smp_twin_both = 1; /* every case runs on both backends */
    CU_TestInfo tests[] = {
        {"resnet18: a training step vs torch", test_resnet18_train},
        {"resnet18: frozen encoder batch norm vs torch", test_resnet18_frozen_encoder_bn},
        {"resnet18: every batch norm frozen vs torch", test_resnet18_frozen_bn},
        {"resnet18: eval-mode forward vs torch", test_resnet18_eval},
        {"resnet34: a training step vs torch", test_resnet34_train},
        {"resnet50: a training step vs torch", test_resnet50_train},
        {"resnext50_32x4d: a training step vs torch", test_resnext50_train},
        {"resnet18: --checkpointing, the same bits in less memory", test_resnet18_checkpointing},
        {"resnet34, every norm frozen: --checkpointing, the same bits", test_resnet34_checkpointing_frozen},
        {"resnet18: 16-bit storage, gradients near fp32's in fewer bytes", test_resnet18_16bit},
        {"a torch state_dict loads: nothing missing or unexpected", test_torch_state_dict_loads},
        {"torchvision resnet34 into the encoder (--init-prefix encoder.)", test_torchvision_encoder_loads},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("resnet_unet", tests, TH_EVERY);
}
