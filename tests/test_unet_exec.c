/*
 * The UNet as a layer list on the executor (src/model/unet_graph.c)
 * against the hand-written passes it is to replace (src/model/unet.c):
 * the same logits, gradients and running statistics bit for bit, the same
 * convolution work, and an arena no larger (work in progress, issue 40;
 * this suite goes when the hand passes do).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/unet_graph.h"
#include "ops/conv_log.h"

static double forward_work(const tt_conv_log *log)
{
    double macs = 0;
    for (int i = 0; i < log->count; i++) {
        const tt_conv_log_entry *e = &log->entries[i];
        if (e->dir != TT_CONV_DIR_FORWARD) continue;
        if (e->transposed) {
            const tt_conv_transpose2d_desc *d = &e->convt;
            macs += (double)d->batch * d->in_h * d->in_w * d->in_channels * d->out_channels *
                    d->kernel_h * d->kernel_w;
            continue;
        }
        const tt_conv2d_desc *d = &e->conv;
        macs += (double)d->batch * tt_conv2d_out_h(d) * tt_conv2d_out_w(d) * d->out_channels *
                d->in_channels * d->kernel_h * d->kernel_w;
    }
    return macs;
}

static void compare(tt_norm_kind norm, int checkpointing, tt_precision precision, int batch)
{
    tt_backend *be = th_backend();
    tt_unet_config c = {3, 3, 4, 2, norm, 2, checkpointing, TT_CONV_ALGO_AUTO, precision};
    int h = 32, w = 48;
    tt_unet *hand = NULL;
    tt_model *twin = NULL;
    TH_OK(tt_unet_create(be, &c, 2, h, w, 7, &hand));
    TH_OK(tt_unet_graph_create(be, &c, 2, h, w, 7, &twin));
    if (!hand || !twin) return;
    tt_model *m = &hand->model;
    size_t in = (size_t)batch * 3 * h * w, out = (size_t)batch * 3 * h * w;
    size_t n = m->params->trainable_floats, ns = m->params->state_floats;
    float *img = malloc(in * sizeof *img), *dl = malloc(out * sizeof *dl);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    float *sa = malloc((ns + 1) * sizeof *sa), *sb = malloc((ns + 1) * sizeof *sb);
    float *la = malloc(out * sizeof *la), *lb = malloc(out * sizeof *lb);
    uint64_t seed = 5;
    th_fill_uniform(img, in, -1, 1, &seed);
    th_fill_uniform(dl, out, -1, 1, &seed);
    TH_OK(tt_write(be, m->input, img, in * sizeof *img));
    TH_OK(tt_write(be, twin->input, img, in * sizeof *img));
    tt_conv_log logs[2] = {{0}, {0}};
    be->conv_log = &logs[0];
    TH_OK(tt_model_forward(m, batch, 1));
    be->conv_log = &logs[1];
    TH_OK(tt_model_forward(twin, batch, 1));
    be->conv_log = NULL;
    TH_OK(tt_read(be, la, m->logits, out * sizeof *la));
    TH_OK(tt_read(be, lb, twin->logits, out * sizeof *lb));
    TH_OK(tt_write(be, m->dlogits, dl, out * sizeof *dl));
    TH_OK(tt_write(be, twin->dlogits, dl, out * sizeof *dl));
    be->conv_log = &logs[0];
    TH_OK(tt_model_backward(m));
    be->conv_log = &logs[1];
    TH_OK(tt_model_backward(twin));
    be->conv_log = NULL;
    TH_OK(tt_model_get_params(m, NULL, sa));
    TH_OK(tt_model_get_params(twin, NULL, sb));
    TH_OK(tt_read(be, a, tt_mem_of(m->grad_buffer), n * sizeof *a));
    TH_OK(tt_read(be, b, tt_mem_of(twin->grad_buffer), n * sizeof *b));
    int logits_same = memcmp(la, lb, out * sizeof *la) == 0;
    int grads_same = memcmp(a, b, n * sizeof *a) == 0;
    int stats_same = memcmp(sa, sb, ns * sizeof *sa) == 0;
    double worst = 0;
    const char *where = "";
    for (int p = 0; p < m->params->count; p++) {
        const tt_param *t = &m->params->params[p];
        if (!t->trainable) continue;
        double here = 0;
        for (size_t i = 0; i < t->count; i++)
            here = fmax(here, fabs(a[t->offset + i] - b[t->offset + i]));
        if (here > 0 && getenv("TH_DIFFS")) printf("\n    %-28s %.3e", t->name, here);
        for (size_t i = 0; i < t->count; i++) {
            double d = fabs(a[t->offset + i] - b[t->offset + i]);
            if (d > worst || (d == 0 && a[t->offset + i] != b[t->offset + i] && !*where))
                worst = d, where = t->name;
        }
    }
    printf("\n  %s%s %s batch %d: logits %s, gradients %s (worst %.2e, %s), statistics %s; "
           "work %.4g MAC, the hand's %.4g; arena %zu bytes, the hand's %zu (%+.1f%%)",
           tt_norm_kind_name(norm), checkpointing ? " checkpointing" : "",
           tt_precision_name(precision), batch, logits_same ? "same" : "DIFFER",
           grads_same ? "same" : "DIFFER", worst, where, stats_same ? "same" : "DIFFER",
           forward_work(&logs[1]), forward_work(&logs[0]), twin->memory.activations,
           m->memory.activations,
           100.0 * ((double)twin->memory.activations / (double)m->memory.activations - 1));
    if (getenv("TH_WORK"))
        for (int k = 0; k < 2; k++) {
            printf("\n   %s:", k ? "exec" : "hand");
            for (int i = 0; i < logs[k].count; i++)
                if (logs[k].entries[i].dir == TT_CONV_DIR_FORWARD)
                    printf(" %s", logs[k].entries[i].layer);
        }
    CU_ASSERT(logits_same);
    CU_ASSERT(grads_same);
    CU_ASSERT(stats_same);
    CU_ASSERT(twin->memory.activations <= m->memory.activations);
    tt_conv_log_free(&logs[0]), tt_conv_log_free(&logs[1]);
    free(img), free(dl), free(a), free(b), free(sa), free(sb), free(la), free(lb);
    tt_unet_destroy(hand);
    tt_model_destroy(twin);
}

/* The arenas at a full-resolution tile, planned on a dry backend. */
static void compare_plans(tt_norm_kind norm, int checkpointing, tt_precision precision)
{
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY,
                                                  .like = &th_backend()->device},
                            &dry));
    tt_unet_config c = {3, 4, 16, 3, norm, 8, checkpointing, TT_CONV_ALGO_AUTO, precision};
    tt_unet *hand = NULL;
    tt_model *twin = NULL;
    TH_OK(tt_unet_create(dry, &c, 2, 1408, 2112, 1, &hand));
    TH_OK(tt_unet_graph_create(dry, &c, 2, 1408, 2112, 1, &twin));
    if (hand && twin) {
        printf("\n  %s%s %s 1408x2112 x2: arena %.1f MiB, the hand's %.1f MiB (%+.2f%%)",
               tt_norm_kind_name(norm), checkpointing ? " checkpointing" : "",
               tt_precision_name(precision), twin->memory.activations / 1048576.0,
               hand->model.memory.activations / 1048576.0,
               100.0 * ((double)twin->memory.activations / (double)hand->model.memory.activations - 1));
        CU_ASSERT(twin->memory.activations <= hand->model.memory.activations);
    }
    tt_unet_destroy(hand);
    tt_model_destroy(twin);
    tt_backend_destroy(dry);
}

static void test_plans(void)
{
    if (getenv("TH_PLAN")) {
        compare_plans(TT_NORM_GROUP, atoi(getenv("TH_PLAN")) > 1, atoi(getenv("TH_PLAN")) % 2 ? TT_PRECISION_FP32 : TT_PRECISION_BF16);
        return;
    }
    if (getenv("TH_ONE")) return;
    compare_plans(TT_NORM_GROUP, 0, TT_PRECISION_FP32);
    compare_plans(TT_NORM_BATCH, 0, TT_PRECISION_FP32);
    compare_plans(TT_NORM_NONE, 0, TT_PRECISION_FP32);
    compare_plans(TT_NORM_GROUP, 1, TT_PRECISION_FP32);
    compare_plans(TT_NORM_NONE, 1, TT_PRECISION_FP32);
    compare_plans(TT_NORM_BATCH, 1, TT_PRECISION_FP32);
    compare_plans(TT_NORM_GROUP, 0, TT_PRECISION_BF16);
    compare_plans(TT_NORM_NONE, 0, TT_PRECISION_BF16);
    compare_plans(TT_NORM_NONE, 1, TT_PRECISION_FP16);
    printf("\n");
}

static void test_plain(void)
{
    if (getenv("TH_ONE")) {
        compare(TT_NORM_GROUP, atoi(getenv("TH_ONE")), TT_PRECISION_FP32, 2);
        return;
    }
    compare(TT_NORM_GROUP, 0, TT_PRECISION_FP32, 2);
    compare(TT_NORM_BATCH, 0, TT_PRECISION_FP32, 2);
    compare(TT_NORM_NONE, 0, TT_PRECISION_FP32, 1);
    compare(TT_NORM_GROUP, 1, TT_PRECISION_FP32, 2);
    compare(TT_NORM_BATCH, 1, TT_PRECISION_FP32, 2);
    compare(TT_NORM_NONE, 1, TT_PRECISION_FP32, 2);
    printf("\n");
}

static void test_half(void)
{
    compare(TT_NORM_GROUP, 0, TT_PRECISION_BF16, 2);
    compare(TT_NORM_BATCH, 0, TT_PRECISION_FP16, 2);
    compare(TT_NORM_NONE, 0, TT_PRECISION_BF16, 1);
    compare(TT_NORM_NONE, 1, TT_PRECISION_FP16, 2);
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"the UNet on the executor: the hand passes' bits (fp32)", test_plain},
        {"the UNet on the executor: arenas at full resolution", test_plans},
        {"the UNet on the executor: the hand passes' bits (16-bit storage)", test_half},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("unet_exec", tests, TH_OPENCL);
}
