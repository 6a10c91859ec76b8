/* The model interface: specs and their JSON, the UNet through the table
 * of functions (the same numbers as the UNet called directly), its
 * counters, and its tensors by name through model/weights.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "harness.h"
#include "model/graph_model.h"
#include "model/unet.h"
#include "model/weights.h"
#include "ops/util.h"

static tt_model_spec small_spec(tt_norm_kind norm)
{
    tt_model_spec s = tt_model_spec_default();
    s.classes = 3, s.base_channels = 4, s.depth = 2, s.groups = 2, s.norm = norm;
    return s;
}

static void test_spec_json(void)
{
    tt_model_spec a = small_spec(TT_NORM_BATCH), b;
    char json[512];
    tt_model_spec_json(&a, json, sizeof json);
    printf("\n  %s", json);
    TH_OK(tt_model_spec_parse(json, &b));
    CU_ASSERT(tt_model_spec_same(&a, &b));
    CU_ASSERT_STRING_EQUAL(b.kind, "unet");
    /* checkpoints written before the kind was recorded are UNets */
    TH_OK(tt_model_spec_parse("{\"classes\": 2, \"depth\": 2}", &b));
    CU_ASSERT_STRING_EQUAL(b.kind, "unet");
    CU_ASSERT_EQUAL(b.classes, 2);
    CU_ASSERT_EQUAL(b.base_channels, 16);
    b.depth = 3;
    CU_ASSERT(!tt_model_spec_same(&a, &b));
    const char *bad[] = {"{\"kind\": \"resnet\", \"classes\": 2}", "{\"depth\": 2}",
                         "{\"classes\": 2, \"norm\": \"layer\"}", "[1]",
                         "{\"classes\": 2, \"groups\": 3}"};
    const char *names[] = {"resnet", "classes", "layer", "JSON object", "groups"};
    for (int i = 0; i < 5; i++) {
        tt_status s = tt_model_spec_parse(bad[i], &b);
        CU_ASSERT(s != NULL);
        CU_ASSERT(s && strstr(tt_status_message(s), names[i]) != NULL);
        if (s) printf("\n  %s -> %s", bad[i], tt_status_message(s));
        tt_status_free(s);
    }
}

/* The table's "unet" is unet_config's UNet: its parameters, and a step
 * that runs. */
static void test_table_is_the_unet(void)
{
    tt_backend *be = th_backend();
    tt_model_spec spec = small_spec(TT_NORM_GROUP);
    tt_model *m = NULL;
    TH_OK(tt_model_create(be, &spec, 2, 16, 16, 11, &m));
    tt_unet_config c = tt_unet_config_of(&spec);
    tt_param_table t = {0};
    TH_OK(tt_unet_params(&c, &t));
    CU_ASSERT_EQUAL(m->capacity, 2);
    CU_ASSERT_EQUAL(m->params->trainable_floats, t.trainable_floats);
    CU_ASSERT(m->memory.activations > 0 && m->memory.activations <= m->memory.activations_apart);
    size_t in = 2 * 3 * 16 * 16, out = 2 * 3 * 16 * 16;
    TH_OK(tt_fill(be, m->input, 0.5f, in));
    TH_OK(tt_model_zero_grads(m));
    TH_OK(tt_model_forward(m, 2, 1));
    TH_OK(tt_fill(be, m->dlogits, 0.125f, out));
    TH_OK(tt_model_backward(m));
    tt_params_free(&t);
    tt_model_destroy(m);
    tt_model_destroy(NULL);
    CU_ASSERT_EQUAL(be->mem.current_total, 0);
}

/* The UNet's forward FLOPs written out: every block's two 3x3
 * convolutions, the 2x2 stride-2 up-convolutions, the 1x1 head. */
static double unet_flops(const tt_model_spec *s, int h, int w)
{
    double f = 0;
    for (int i = 0; i <= s->depth; i++) {
        double hw = (double)(h >> i) * (w >> i);
        int c = s->base_channels << i, below = i ? c / 2 : s->in_channels;
        f += 2.0 * 9 * hw * c * (below + c); /* enc.i or the bottleneck */
        if (i < s->depth) f += 2.0 * 9 * hw * c * (2 * c + c) + 2.0 * 4 * hw / 4 * 2 * c * c;
    }
    return f + 2.0 * h * w * s->base_channels * s->classes;
}

/* FLOPs, workspace and convolution shapes come from the recorded step:
 * the FLOPs are the architecture's whatever the step's storage (the
 * banded step runs its convolutions on row bands), and the shapes count
 * each convolution the forward runs (a decoder conv1 as two halves). */
static void test_recorded_convolutions(void)
{
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY,
                                                  .like = &th_backend()->device},
                            &dry));
    tt_model_spec spec = small_spec(TT_NORM_GROUP);
    double want = unet_flops(&spec, 32, 48);
    for (int banded = 0; banded < 2; banded++) {
        tt_model_spec s = spec;
        s.checkpointing = banded, s.precision = banded ? TT_PRECISION_BF16 : TT_PRECISION_FP32;
        tt_model *m = NULL;
        TH_OK(tt_model_create(dry, &s, 2, 32, 48, 1, &m));
        if (!m) continue;
        printf("\n  %s: %.6g FLOP per image, the formula's %.6g; workspace %zu bytes",
               banded ? "banded" : "plain", tt_model_flops_per_image(m), want, m->memory.workspace);
        CU_ASSERT(fabs(tt_model_flops_per_image(m) - want) <= 1e-12 * want);
        CU_ASSERT(m->memory.workspace == (m->workspace_buffer ? m->workspace_buffer->bytes : 0));
        tt_model_destroy(m);
    }
    tt_model_conv *shapes = NULL;
    int count = 0;
    TH_OK(tt_model_conv_shapes(dry, &spec, 32, 48, &shapes, &count));
    int same = 0, transposed = 0, input_grad = 0;
    for (int i = 0; i < count; i++) {
        const tt_model_conv *c = &shapes[i];
        printf("\n    %-16s %3d -> %3d %dx%d/%d at %dx%d x%d", c->label, c->in_channels,
               c->out_channels, c->kernel, c->kernel, c->stride, c->height, c->width, c->count);
        if (c->in_channels == c->out_channels && c->kernel == 3 && c->height == 32 >> 1)
            same = c->count;
        transposed += c->transposed;
        input_grad += c->no_input_grad;
    }
    CU_ASSERT_EQUAL(count, 3 * spec.depth + 3);
    CU_ASSERT_EQUAL(same, 4); /* level 1: enc.1.conv2, dec.1.conv1's halves, dec.1.conv2 */
    CU_ASSERT_EQUAL(transposed, spec.depth);
    CU_ASSERT_EQUAL(input_grad, 1); /* enc.0.conv1 reads the image */
    CU_ASSERT_STRING_EQUAL(shapes[0].label, "enc.0.conv1");
    free(shapes);
    tt_backend_destroy(dry);
    printf("\n");
}

static void test_counters(void)
{
    tt_model_spec spec = small_spec(TT_NORM_BATCH);
    tt_model *m = NULL;
    TH_OK(tt_model_create(th_backend(), &spec, 1, 8, 8, 1, &m));
    CU_ASSERT_EQUAL(m->counter_count, 2 * (2 * spec.depth + 1));
    CU_ASSERT_STRING_EQUAL(m->counters[0].name, "enc.0.norm1.num_batches_tracked");
    CU_ASSERT_PTR_NOT_NULL(m->state_buffer);
    TH_OK(tt_model_forward(m, 1, 1));
    CU_ASSERT_EQUAL(*m->counters[0].value, 1);
    tt_model_destroy(m);
    spec.norm = TT_NORM_GROUP;
    TH_OK(tt_model_create(th_backend(), &spec, 1, 8, 8, 1, &m));
    CU_ASSERT_EQUAL(m->counter_count, 0);
    CU_ASSERT_PTR_NULL(m->state_buffer);
    tt_model_destroy(m);
}

/* Tensors out by name and back into a model of other weights. */
static void test_weights_round_trip(void)
{
    tt_backend *be = th_backend();
    tt_model_spec spec = small_spec(TT_NORM_BATCH);
    tt_model *a = NULL, *b = NULL;
    TH_OK(tt_model_create(be, &spec, 1, 8, 8, 1, &a));
    TH_OK(tt_model_create(be, &spec, 1, 8, 8, 2, &b));
    TH_OK(tt_model_forward(a, 1, 1)); /* running statistics and counters move */
    char path[] = "/tmp/tt_model_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_weights_add(w, a));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    TH_OK(tt_weights_load(b, path));
    size_t n = a->params->trainable_floats, k = a->params->state_floats;
    float *pa = malloc((n + k) * sizeof *pa), *pb = malloc((n + k) * sizeof *pb);
    TH_OK(tt_model_get_params(a, pa, pa + n));
    TH_OK(tt_model_get_params(b, pb, pb + n));
    CU_ASSERT(memcmp(pa, pb, (n + k) * sizeof *pa) == 0);
    CU_ASSERT_EQUAL(*b->counters[0].value, 1);
    /* a model of another shape: the error names the tensor */
    tt_model_spec wider = spec;
    wider.base_channels = 8;
    tt_model *c = NULL;
    TH_OK(tt_model_create(be, &wider, 1, 8, 8, 3, &c));
    tt_status s = tt_weights_load(c, path);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT(s && strstr(tt_status_message(s), "enc.0.conv1.weight") != NULL);
    if (s) printf("\n  %s", tt_status_message(s));
    tt_status_free(s);
    unlink(path);
    free(pa), free(pb);
    tt_model_destroy(a), tt_model_destroy(b), tt_model_destroy(c);
}

/* A model for prediction (spec.predict_only): no gradients, the plan and
 * workspace of a training model, parameters zero until loaded; with
 * a training model's weights its forward gives that model's logits; a
 * training forward and backward are refused with a reason. */
static void test_predict_only(void)
{
    tt_backend *be = th_backend();
    tt_model_spec spec = small_spec(TT_NORM_BATCH), only = spec;
    only.predict_only = 1;
    tt_model *a = NULL, *p = NULL;
    TH_OK(tt_model_create(be, &spec, 1, 16, 16, 5, &a));
    TH_OK(tt_model_create(be, &only, 1, 16, 16, 6, &p));
    CU_ASSERT_PTR_NOT_NULL(a->grad_buffer);
    CU_ASSERT_PTR_NULL(p->grad_buffer);
    CU_ASSERT_EQUAL(p->memory.activations, a->memory.activations);
    CU_ASSERT_EQUAL(p->memory.workspace, a->memory.workspace);
    size_t n = a->params->trainable_floats, k = a->params->state_floats;
    float *w = malloc((n + k) * sizeof *w);
    TH_OK(tt_model_get_params(p, w, w + n));
    size_t nonzero = 0;
    for (size_t i = 0; i < n + k; i++) nonzero += w[i] != 0.0f;
    CU_ASSERT_EQUAL(nonzero, 0);
    TH_OK(tt_model_get_params(a, w, w + n));
    TH_OK(tt_model_set_params(p, w, w + n));
    size_t in = 3 * 16 * 16, out = 3 * 16 * 16;
    float *la = malloc(out * sizeof *la), *lp = malloc(out * sizeof *lp);
    TH_OK(tt_fill(be, a->input, 0.5f, in));
    TH_OK(tt_fill(be, p->input, 0.5f, in));
    TH_OK(tt_model_forward(a, 1, 0));
    TH_OK(tt_model_forward(p, 1, 0));
    TH_OK(tt_read(be, la, a->logits, out * sizeof *la));
    TH_OK(tt_read(be, lp, p->logits, out * sizeof *lp));
    double worst = 0;
    for (size_t i = 0; i < out; i++) worst = fmax(worst, fabs((double)la[i] - lp[i]));
    CU_ASSERT(worst < 1e-5);
    tt_status s = tt_model_backward(p);
    CU_ASSERT(s && strstr(tt_status_message(s), "no gradients") != NULL);
    tt_status_free(s);
    s = tt_model_forward(p, 1, 1);
    CU_ASSERT(s && strstr(tt_status_message(s), "a training forward") != NULL);
    tt_status_free(s);
    free(w), free(la), free(lp);
    tt_model_destroy(a), tt_model_destroy(p);
}

/* --init: a file of other names (a bare encoder under --init-prefix), with
 * a tensor the model lacks: what matches loads, the rest stays; a shape
 * that differs and a file of which nothing matches are errors. */
static void test_weights_init_partial(void)
{
    tt_backend *be = th_backend();
    tt_model_spec spec = small_spec(TT_NORM_BATCH);
    tt_model *a = NULL, *b = NULL;
    TH_OK(tt_model_create(be, &spec, 1, 8, 8, 1, &a));
    TH_OK(tt_model_create(be, &spec, 1, 8, 8, 2, &b));
    const tt_param *conv = tt_params_find(a->params, "enc.0.conv1.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(conv);
    size_t n = a->params->trainable_floats;
    float *pa = malloc(n * sizeof *pa), *pb = malloc(n * sizeof *pb), *before = malloc(n * sizeof *pb);
    TH_OK(tt_model_get_params(a, pa, NULL));
    TH_OK(tt_model_get_params(b, before, NULL));
    int64_t shape[4] = {conv->shape[0], conv->shape[1], conv->shape[2], conv->shape[3]};
    float extra[3] = {1, 2, 3};
    int64_t three = 3;
    char path[] = "/tmp/tt_init_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_st_writer_add(w, "conv1.weight", TT_ST_F32, 4, shape, pa + conv->offset));
    TH_OK(tt_st_writer_add(w, "fc.weight", TT_ST_F32, 1, &three, extra));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    tt_weights_report r;
    TH_OK(tt_weights_init(b, path, "enc.0.", &r));
    CU_ASSERT_EQUAL(r.matched, 1);
    CU_ASSERT_EQUAL(r.unexpected, 1);
    CU_ASSERT_STRING_EQUAL(r.unexpected_names[0], "enc.0.fc.weight");
    CU_ASSERT_EQUAL(r.missing, b->params->count + b->counter_count - 1);
    char text[1024];
    tt_weights_report_text(&r, text, sizeof text);
    printf("\n  %s", text);
    TH_OK(tt_model_get_params(b, pb, NULL));
    int loaded = memcmp(pb + conv->offset, pa + conv->offset, conv->count * sizeof *pa) == 0;
    int kept = memcmp(pb, before, conv->offset * sizeof *pb) == 0 &&
               memcmp(pb + conv->offset + conv->count, before + conv->offset + conv->count,
                      (n - conv->offset - conv->count) * sizeof *pb) == 0;
    CU_ASSERT(loaded);
    CU_ASSERT(kept);
    /* without the prefix nothing matches: an error that says to give one */
    tt_status s = tt_weights_init(b, path, NULL, &r);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "--init-prefix"));
    tt_status_free(s);
    /* a shape that differs names the tensor and both shapes */
    TH_OK(tt_st_writer_create(&w));
    shape[0] += 1;
    float *wide = calloc((size_t)(shape[0] * shape[1] * shape[2] * shape[3]), sizeof *wide);
    TH_OK(tt_st_writer_add(w, "conv1.weight", TT_ST_F32, 4, shape, wide));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    s = tt_weights_init(b, path, "enc.0.", &r);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) printf("\n  %s", tt_status_message(s));
    CU_ASSERT(s && strstr(tt_status_message(s), "'enc.0.conv1.weight'") &&
              strstr(tt_status_message(s), "'conv1.weight'"));
    tt_status_free(s);
    unlink(path);
    free(pa), free(pb), free(before), free(wide);
    tt_model_destroy(a), tt_model_destroy(b);
}

static void test_unknown_kind(void)
{
    tt_model_spec spec = small_spec(TT_NORM_GROUP);
    snprintf(spec.kind, sizeof spec.kind, "fpn");
    tt_model *m = NULL;
    tt_status s = tt_model_create(th_backend(), &spec, 1, 8, 8, 1, &m);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "fpn") && strstr(tt_status_message(s), "unet"));
    CU_ASSERT_PTR_NULL(m);
    tt_status_free(s);
}

/* Activations are planned into buffers that a kernel can address whole
 * from their start (Vulkan's maxStorageBufferRange, 128 MiB on lavapipe):
 * a plan larger than that is split over several buffers, and one tensor
 * larger than that is an error that names it and the limit. */
static void test_binding_limit(void)
{
    tt_device_info like = th_backend()->device;
    tt_model_spec spec = small_spec(TT_NORM_GROUP); /* largest tensor: 2 x 8 x 16 x 16 floats */
    const uint64_t limits[2] = {24u << 10, 4u << 10};
    for (int i = 0; i < 2; i++) {
        like.max_binding_bytes = limits[i];
        tt_backend *dry = NULL;
        TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &like},
                                &dry));
        tt_model *m = NULL;
        tt_status s = tt_model_create(dry, &spec, 2, 16, 16, 11, &m);
        if (i == 0) {
            CU_ASSERT(s == NULL);
            if (m) {
                printf("\n  %zu bytes of activations in buffers of at most %llu", m->memory.activations,
                       (unsigned long long)limits[i]);
                CU_ASSERT(m->memory.activations > limits[i]);
            }
        } else {
            CU_ASSERT(s && tt_status_code(s) == TT_ERR_TOO_LARGE &&
                      strstr(tt_status_message(s), "maxStorageBufferRange"));
            if (s) printf("\n  %s", tt_status_message(s));
        }
        tt_status_free(s);
        tt_model_destroy(m);
        tt_backend_destroy(dry);
    }
}

/* The ResNet UNet's convolution shapes (bench --layers) are every
 * convolution it runs: their FLOPs by count are the model's own count. */
static void test_resnet_conv_shapes(void)
{
    static const char *kinds[] = {"unet-resnet18", "unet-resnet34"};
    for (int k = 0; k < 2; k++) {
        tt_model_spec spec = tt_model_spec_default();
        snprintf(spec.kind, sizeof spec.kind, "%s", kinds[k]);
        spec.norm = TT_NORM_BATCH;
        tt_backend *dry = NULL;
        TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY,
                                                      .like = &th_backend()->device},
                                &dry));
        tt_model *m = NULL;
        TH_OK(tt_model_create(dry, &spec, 1, 64, 96, 3, &m));
        tt_model_conv *shapes = NULL;
        int count = 0;
        TH_OK(tt_model_conv_shapes(dry, &spec, 64, 96, &shapes, &count));
        double flops = 0;
        int strided = 0;
        for (int i = 0; i < count; i++) {
            const tt_model_conv *c = &shapes[i];
            int p = c->kernel / 2, oh = (c->height + 2 * p - c->kernel) / c->stride + 1;
            int ow = (c->width + 2 * p - c->kernel) / c->stride + 1;
            flops += 2.0 * c->count * c->out_channels * c->in_channels * c->kernel * c->kernel *
                     oh * ow;
            strided += c->stride == 2;
        }
        double want = m ? tt_model_flops_per_image(m) : 0;
        printf("\n  %s: %d shapes (%d strided), %.4g FLOP vs the model's %.4g", kinds[k], count,
               strided, flops, want);
        CU_ASSERT(fabs(flops - want) <= 1e-9 * want);
        CU_ASSERT_EQUAL(strided, 7); /* the stem, 3 x (3x3 and 1x1) */
        free(shapes);
        tt_model_destroy(m);
        tt_backend_destroy(dry);
    }
    /* every shape, however many (bench --layers and selftest --algos list
     * them all: EfficientNet-B4's UNet has more than 64) */
    tt_model_spec spec = tt_model_spec_default();
    snprintf(spec.kind, sizeof spec.kind, "unet-efficientnet-b4");
    spec.norm = TT_NORM_BATCH;
    tt_model_conv *all = NULL;
    int count = 0;
    TH_OK(tt_model_conv_shapes(th_backend(), &spec, 64, 64, &all, &count));
    printf("\n  unet-efficientnet-b4: %d shapes\n", count);
    CU_ASSERT(count > 64);
    free(all);
}

/* At full resolution (FPN-ResNet18, 1408x2112, one image, on the dry
 * backend) the convolution workspace is held to the model's limit, the
 * larger of its largest tensor and 128 MiB, so that it stays below the
 * activations: every candidate's room, im2col's columns of the widest
 * 3x3 layers among them, was more than twice the activations.  On a
 * device of 8 GiB with 2 GiB buffers (an eighth: 1 GiB) AUTO keeps its
 * choice per layer: that room used to exceed an eighth of such a device,
 * and every layer then ran the direct kernels. */
static void test_workspace_within_limit(void)
{
    tt_device_info gpu = th_backend()->device;
    gpu.global_mem_bytes = (size_t)8 << 30, gpu.max_alloc_bytes = (size_t)2 << 30;
    tt_backend *gpu_like = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &gpu},
                            &gpu_like));
    tt_model_spec fpn = tt_model_spec_default();
    snprintf(fpn.kind, sizeof fpn.kind, "fpn-resnet18");
    fpn.norm = TT_NORM_BATCH, fpn.classes = 4;
    tt_model *g = NULL;
    TH_OK(tt_model_create(gpu_like, &fpn, 1, 1408, 2112, 1, &g));
    if (g) {
        printf("\n  8 GiB device: workspace %.1f MiB, limit %.1f MiB, algorithm %s",
               g->memory.workspace / 1048576.0, g->memory.workspace_limit / 1048576.0,
               tt_conv_algo_name(((tt_graph_model *)g)->conv_algo));
        CU_ASSERT(g->memory.workspace_limit <= gpu.global_mem_bytes / 8);
        CU_ASSERT(g->memory.workspace <= g->memory.workspace_limit);
        CU_ASSERT_EQUAL(((tt_graph_model *)g)->conv_algo, TT_CONV_ALGO_AUTO);
        tt_model_destroy(g);
    }
    tt_backend_destroy(gpu_like);
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY,
                                                  .like = &th_backend()->device},
                            &dry));
    for (int saving = 0; saving < 2; saving++) {
        tt_model_spec spec = tt_model_spec_default();
        snprintf(spec.kind, sizeof spec.kind, "fpn-resnet18");
        spec.norm = TT_NORM_BATCH, spec.classes = 4;
        spec.checkpointing = saving, spec.precision = saving ? TT_PRECISION_BF16 : TT_PRECISION_FP32;
        tt_model *m = NULL;
        TH_OK(tt_model_create(dry, &spec, 1, 1408, 2112, 1, &m));
        if (!m) continue;
        const tt_model_memory *mm = &m->memory;
        printf("\n  %s: workspace %.1f MiB, limit %.1f MiB, activations %.1f MiB",
               saving ? "checkpointing, bf16" : "fp32", mm->workspace / 1048576.0,
               mm->workspace_limit / 1048576.0, mm->activations / 1048576.0);
        CU_ASSERT(mm->workspace_limit >= (size_t)128 << 20);
        CU_ASSERT(mm->workspace <= mm->workspace_limit);
        CU_ASSERT(mm->workspace_limit < mm->activations);
        tt_model_destroy(m);
    }
    tt_backend_destroy(dry);
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"specs to JSON and back; bad metadata named", test_spec_json},
        {"the UNet through the table gives the UNet's bits", test_table_is_the_unet},
        {"batch norm counters by name", test_counters},
        {"weights by name round trip; a shape mismatch named", test_weights_round_trip},
        {"--init: what matches loads, the rest is reported", test_weights_init_partial},
        {"a model for prediction: no gradients, its weights loaded, the same logits", test_predict_only},
        {"an unknown kind lists the kinds", test_unknown_kind},
        {"activations split under the binding limit; a larger tensor named", test_binding_limit},
        {"the ResNet UNets' convolution shapes are all their convolutions", test_resnet_conv_shapes},
        {"at full resolution the workspace keeps within the model's limit", test_workspace_within_limit},
        {"FLOPs, workspace and shapes from the recorded step", test_recorded_convolutions},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("model", tests, TH_EVERY);
}
