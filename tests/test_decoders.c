/*
 * FPN, Linknet and DeepLabV3+ over a ResNet encoder (--model
 * fpn-resnet18 ... deeplabv3plus-resnext50_32x4d) against PyTorch: python/smp_decoders.py's
 * (smp's layout and names) in float64 from the same weights, one step with
 * dropout's masks drawn alike (tests/smp_compare.h says what is compared
 * and how); names and shapes are smp's; --checkpointing gives the same
 * bits in less memory; 16-bit storage gradients near fp32's; dropout's
 * mask follows the seed and nothing else.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "smp_compare.h"

/* On Vulkan the suite runs each decoder's training step against PyTorch
 * (every kernel the decoders add, on lavapipe) and the dropout checks; the
 * others are smp_opencl_only(). */
/* The autotuner's picks on OpenCL; on Vulkan the EfficientNet's step
 * below runs them (timing a fresh cache's candidates for each model's
 * shapes takes most of a minute of lavapipe). */
static void test_resnet18_train(void)
{
    rcase c = {"fpn-resnet18 train", "fpn-resnet18", "train", 2, 64, 96, 1, NULL};
    smp_convs = smp_picks_on_opencl();
    smp_twin_both = 1;
    smp_check_step(&c);
    smp_twin_both = 0;
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_resnet18_eval(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-resnet18 eval", "fpn-resnet18", "eval", 2, 64, 96, 0, NULL};
    smp_check_step(&c);
}

static void test_resnet18_frozen_encoder_bn(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-resnet18 frozen encoder BN", "fpn-resnet18", "freeze", 2, 64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* Bottleneck blocks under the FPN's 2048-channel c5, at 64x64: at 32x64
 * the batch norms of layer4 see four values a channel and float32's
 * rounding grows through them to 7.6e-4 of a gradient (5.4e-5 here).
 * These and the checks below run smp_fixed_row(): what they check does
 * not depend on the autotuner's picks, and timing a fresh cache's new
 * shapes takes minutes on lavapipe. */
static void test_resnet50_train(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-resnet50 train", "fpn-resnet50", "train", 2, 64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_resnet18_checkpointing(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-resnet18 train", "fpn-resnet18", "train", 2, 64, 96, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_checkpointing(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* (With checkpointing the FPN keeps no convolution output, so its 16-bit
 * step is the fp32 one's: the figures show it.) */
static void test_resnet18_16bit(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-resnet18 train", "fpn-resnet18", "train", 2, 64, 96, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_16bit(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* (Linknet's checks run smp_fixed_row(), as above.) */
static void test_linknet_resnet18_train(void)
{
    rcase c = {"linknet-resnet18 train", "linknet-resnet18", "train", 2, 64, 96, 1, NULL};
    smp_convs = smp_fixed_row();
    smp_twin_both = 1;
    smp_check_step(&c);
    smp_twin_both = 0;
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_linknet_resnet18_eval(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"linknet-resnet18 eval", "linknet-resnet18", "eval", 2, 64, 96, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_linknet_resnet50_train(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"linknet-resnet50 train", "linknet-resnet50", "train", 2, 64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_linknet_checkpointing_16bit(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"linknet-resnet18 train", "linknet-resnet18", "train", 2, 64, 96, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_checkpointing(&c);
    smp_check_16bit(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* Dilated and depthwise convolutions, the image pooling's mean and
 * broadcast, concatenations, elementwise dropout (masks alike).  Three
 * images: the image pooling's batch norm sees one value a channel an
 * image, and over two its input's gradient is a difference of two nearly
 * equal terms (xhat is +-1 within eps / var), float32's rounding of which
 * reached 3.6e-3 of a gradient here.  The autotuner's picks on OpenCL. */
static void test_deeplab_resnet18_train(void)
{
    rcase c = {"deeplabv3plus-resnet18 train", "deeplabv3plus-resnet18", "train", 3, 64, 96, 1, NULL};
    smp_convs = smp_picks_on_opencl();
    smp_twin_both = 1;
    smp_check_step(&c);
    smp_twin_both = 0;
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_deeplab_resnet18_eval(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"deeplabv3plus-resnet18 eval", "deeplabv3plus-resnet18", "eval", 2, 48, 80, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_deeplab_resnet50_train(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"deeplabv3plus-resnet50 train", "deeplabv3plus-resnet50", "train", 3, 64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_deeplab_checkpointing_16bit(void)
{
    if (smp_opencl_only()) return;
    /* the image pooling's gradient reaches every tensor (through the
     * plane's mean): all of them are behind its ill-conditioned norm */
    rcase c = {"deeplabv3plus-resnet18 train", "deeplabv3plus-resnet18", "train", 3, 64, 96, 0, ""};
    smp_convs = smp_fixed_row();
    smp_check_checkpointing(&c);
    smp_check_16bit(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* Training on micro-batches of one is refused by name (the image
 * pooling's batch norm would see one value a channel); eval runs. */
static void test_deeplab_batch_of_one(void)
{
    smp_convs = smp_fixed_row();
    tt_model *m = smp_create("deeplabv3plus-resnet18", "train", 1, 32, 32);
    smp_convs = TT_CONV_ALGO_AUTO;
    TH_OK(tt_model_forward(m, 1, 0));
    tt_status s = tt_model_forward(m, 1, 1);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) {
        printf("\n  %s", tt_status_message(s));
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), "--micro-batch 2"));
        tt_status_free(s);
    }
    tt_model_destroy(m);
}

/* EfficientNet (smp's tu-efficientnet_bN): depthwise convolutions of 3
 * and 5 with strides, SiLU, squeeze-and-excitation, residuals; under the
 * UNet and, at output stride 16 (timm's dilation), DeepLabV3+. */
static void test_effnet_b0_unet_train(void)
{
    rcase c = {"unet-efficientnet-b0 train", "unet-efficientnet-b0", "train", 2, 64, 96, 1, NULL};
    smp_twin_both = 1;
    smp_check_step(&c);
    smp_twin_both = 0;
}

/* Drop-path (stochastic depth) in training: each residual block's masks
 * drawn per image from the step's seed, alike in the twin. */
static void test_effnet_drop_path(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"unet-efficientnet-b0 drop-path 0.5", "unet-efficientnet-b0", "train", 4, 32, 64, 1,
               NULL};
    smp_convs = smp_fixed_row();
    smp_drop_path = 0.5f;
    smp_check_step(&c);
    smp_drop_path = 0;
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_effnet_b1_deeplab_train(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"deeplabv3plus-efficientnet-b1 train", "deeplabv3plus-efficientnet-b1", "train", 3,
               64, 64, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_step(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

static void test_effnet_checkpointing_16bit(void)
{
    if (smp_opencl_only()) return;
    rcase c = {"fpn-efficientnet-b0 train", "fpn-efficientnet-b0", "train", 2, 64, 96, 0, NULL};
    smp_convs = smp_fixed_row();
    smp_check_checkpointing(&c);
    smp_check_16bit(&c);
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* Issue 40's measure: a window of two micro-batches and one AdamW step
 * against float64 PyTorch.  Two pairs here (a ResNet and an EfficientNet
 * encoder); TH_EVERY_PAIR=1 runs every decoder over every encoder (about
 * 15 minutes on two cores). */
static void test_windows(void)
{
    if (smp_opencl_only()) return;
    const char *decoders[] = {"unet", "fpn", "linknet", "deeplabv3plus"};
    const char *encoders[] = {"resnet18",        "resnet34",        "resnet50",
                              "resnext50_32x4d", "efficientnet-b0", "efficientnet-b1",
                              "efficientnet-b2", "efficientnet-b3", "efficientnet-b4"};
    const char *some[] = {"fpn-resnet34", "unet-efficientnet-b0"};
    const char *every = getenv("TH_EVERY_PAIR");
    int all = every && *every && strcmp(every, "0") != 0, count = all ? 36 : 2;
    smp_convs = smp_fixed_row();
    for (int k = 0; k < count; k++) {
        char kind[40];
        snprintf(kind, sizeof kind, "%s", some[k % 2]);
        if (all) snprintf(kind, sizeof kind, "%s-%s", decoders[k / 9], encoders[k % 9]);
        int deeplab = strncmp(kind, "deeplab", 7) == 0;
        rcase c = {kind, kind, "train", deeplab ? 3 : 2, 64, 64, 0, NULL};
        smp_check_window(&c);
    }
    smp_convs = TT_CONV_ALGO_AUTO;
}

/* Every kind of --model (the table's), the UNet over a ResNet included. */
static void test_names_are_smps(void)
{
    if (smp_opencl_only() || !smp_have("torch")) return;
    char kinds[SMP_MAX_KINDS][SMP_KIND_SIZE];
    const char *each[SMP_MAX_KINDS];
    int n = smp_every_kind(kinds, SMP_MAX_KINDS);
    for (int k = 0; k < n; k++) each[k] = kinds[k];
    CU_ASSERT(n >= 36);
    smp_check_names(each, n);
}

/* The logits of one training forward of two images (in), their dropout
 * masks from `seed` and crops first, first + stride. */
static void logits_for(tt_model *m, const float *in, size_t in_n, uint64_t seed, int64_t first,
                       int stride, float *out, size_t out_n)
{
    tt_backend *be = th_backend();
    m->dropout_seed = seed, m->dropout_first = first, m->dropout_stride = stride;
    TH_OK(tt_write(be, m->input, in, in_n * sizeof *in));
    TH_OK(tt_model_forward(m, 2, 1));
    TH_OK(tt_read(be, out, m->logits, out_n * sizeof *out));
}

/* The largest difference of image i of a and image j of b (n floats an
 * image), over a's largest value there. */
static double image_off(const float *a, int i, const float *b, int j, size_t n)
{
    double top = 0, worst = 0;
    for (size_t e = 0; e < n; e++) top = fmax(top, fabs(a[i * n + e]));
    for (size_t e = 0; e < n; e++) worst = fmax(worst, fabs(a[i * n + e] - b[j * n + e]));
    return worst / (top > 0 ? top : 1);
}

/* Dropout's masks are the seed's and each crop's own: the same seed and
 * crops give the same logits bit for bit (a resumed step draws what it
 * drew), another seed or other crops other logits; a crop's image has the
 * same logits wherever it sits in a micro-batch (what makes micro-batches
 * of 2 x 3 the window of 6 x 1, and 2 ranks one process); eval mode draws
 * none.  The encoder's norms frozen, so that images do not meet. */
static void test_dropout_follows_seed_and_crop(void)
{
    smp_convs = smp_fixed_row();
    tt_model *m = smp_create("fpn-resnet18", "freeze", 2, 32, 32);
    smp_convs = TT_CONV_ALGO_AUTO;
    size_t image = 3 * 32 * 32, in_n = 2 * image, each = CLASSES * 32 * 32, out_n = 2 * each;
    float *in = malloc(in_n * sizeof *in), *swapped = malloc(in_n * sizeof *in);
    float *a = malloc(out_n * sizeof *a), *b = malloc(out_n * sizeof *b);
    float *c = malloc(out_n * sizeof *c);
    uint64_t seed = 3;
    th_fill_uniform(in, in_n, 0, 1, &seed);
    memcpy(swapped, in + image, image * sizeof *in); /* [x1, x0] */
    memcpy(swapped + image, in, image * sizeof *in);
    logits_for(m, in, in_n, 1, 10, 1, a, out_n);      /* x0 crop 10, x1 crop 11 */
    logits_for(m, in, in_n, 1, 10, 1, c, out_n);
    int same = memcmp(a, c, out_n * sizeof *a) == 0;
    logits_for(m, in, in_n, 2, 10, 1, b, out_n);
    double seed_off = image_off(a, 0, b, 0, each);
    logits_for(m, in, in_n, 1, 12, 1, b, out_n);
    double crop_off = image_off(a, 0, b, 0, each);
    logits_for(m, swapped, in_n, 1, 11, -1, b, out_n); /* x1 crop 11, x0 crop 10 */
    double moved = fmax(image_off(a, 1, b, 0, each), image_off(a, 0, b, 1, each));
    logits_for(m, in, in_n, 1, 7, 4, c, out_n);       /* x1 crop 11 again, 4 ranks apart */
    moved = fmax(moved, image_off(a, 1, c, 1, each));
    tt_backend *be = th_backend();
    m->dropout_seed = 1;
    TH_OK(tt_write(be, m->input, in, in_n * sizeof *in));
    TH_OK(tt_model_forward(m, 2, 0));
    TH_OK(tt_read(be, a, m->logits, out_n * sizeof *a));
    m->dropout_seed = 2, m->dropout_first = 99;
    TH_OK(tt_model_forward(m, 2, 0));
    TH_OK(tt_read(be, b, m->logits, out_n * sizeof *b));
    int eval_same = memcmp(a, b, out_n * sizeof *a) == 0;
    printf("\n  seed and crops twice: %s; another seed: off %.2g; other crops: off %.2g; a crop "
           "elsewhere in the micro-batch: off %.2g; eval mode: %s",
           same ? "equal" : "DIFFER", seed_off, crop_off, moved, eval_same ? "equal" : "DIFFER");
    CU_ASSERT(same);
    CU_ASSERT(seed_off > 1e-2);
    CU_ASSERT(crop_off > 1e-2);
    CU_ASSERT(moved < 1e-6);
    CU_ASSERT(eval_same);
    free(in), free(swapped), free(a), free(b), free(c);
    tt_model_destroy(m);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fpn-resnet18: a training step vs torch (dropout's masks alike)", test_resnet18_train},
        {"fpn-resnet18: eval-mode forward vs torch", test_resnet18_eval},
        {"fpn-resnet18: frozen encoder batch norm vs torch", test_resnet18_frozen_encoder_bn},
        {"fpn-resnet50: a training step vs torch", test_resnet50_train},
        {"fpn-resnet18: --checkpointing, the same bits in less memory", test_resnet18_checkpointing},
        {"fpn-resnet18: 16-bit storage, gradients near fp32's in fewer bytes", test_resnet18_16bit},
        {"linknet-resnet18: a training step vs torch", test_linknet_resnet18_train},
        {"linknet-resnet18: eval-mode forward vs torch", test_linknet_resnet18_eval},
        {"linknet-resnet50: a training step vs torch", test_linknet_resnet50_train},
        {"linknet-resnet18: --checkpointing and 16-bit storage", test_linknet_checkpointing_16bit},
        {"deeplabv3plus-resnet18: a training step vs torch", test_deeplab_resnet18_train},
        {"deeplabv3plus-resnet18: eval-mode forward vs torch", test_deeplab_resnet18_eval},
        {"deeplabv3plus-resnet50: a training step vs torch", test_deeplab_resnet50_train},
        {"deeplabv3plus-resnet18: --checkpointing and 16-bit storage",
         test_deeplab_checkpointing_16bit},
        {"deeplabv3plus: training on a micro-batch of 1 is refused", test_deeplab_batch_of_one},
        {"unet-efficientnet-b0: a training step vs torch", test_effnet_b0_unet_train},
        {"unet-efficientnet-b0: drop-path in training vs torch", test_effnet_drop_path},
        {"deeplabv3plus-efficientnet-b1: a training step vs torch", test_effnet_b1_deeplab_train},
        {"fpn-efficientnet-b0: --checkpointing and 16-bit storage", test_effnet_checkpointing_16bit},
        {"a window of two micro-batches and an AdamW step vs torch", test_windows},
        {"names and shapes are smp's, both ways", test_names_are_smps},
        {"dropout's masks follow the seed and each crop alone", test_dropout_follows_seed_and_crop},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("decoders", tests, TH_EVERY);
}
