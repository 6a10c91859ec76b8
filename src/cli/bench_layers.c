/*
 * tiletrain bench --layers: the UNet's 3x3 convolutions one shape at a time
 * (see bench_layers.h).  The shapes mirror src/model/unet.c: enc.i.conv1
 * C_{i-1} -> C_i; at every level four C_i -> C_i convolutions (enc.i.conv2,
 * the two halves of dec.i.conv1, which reads [up | skip] as two
 * convolutions into one output, and dec.i.conv2); the bottleneck's two.
 */
#include "cli/bench_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "tune/host_blas.h"
#include "core/status.h"
#include "model/unet.h"
#include "ops/conv2d.h"
#include "ops/util.h"

#define REPS 5 /* timed runs per direction, after one untimed (which may autotune) */

typedef struct layer {
    char label[40];
    int cin, cout, h, w;
    int count;              /* convolutions of this shape in the model */
    int no_input_grad;      /* enc.0.conv1: the image's gradient is never asked for */
    double ms[TT_CONV_DIR_COUNT];      /* per call, best of REPS */
    tt_conv_algo algo[TT_CONV_DIR_COUNT];
    double blas_ms[TT_CONV_DIR_COUNT]; /* OpenBLAS: micro-batch x the per-image GEMM */
} layer;

static int layers_of(const tt_unet_config *c, int h, int w, layer *out)
{
    int n = 0;
    for (int i = 0; i <= c->depth; i++) {
        int ci = tt_unet_channels(c, i), below = i ? tt_unet_channels(c, i - 1) : c->in_channels;
        layer *a = &out[n++], *b = &out[n++];
        *a = (layer){.cin = below, .cout = ci, .h = h >> i, .w = w >> i, .count = 1,
                     .no_input_grad = i == 0};
        *b = (layer){.cin = ci, .cout = ci, .h = h >> i, .w = w >> i, .count = i < c->depth ? 4 : 1};
        if (i < c->depth) {
            snprintf(a->label, sizeof a->label, "enc.%d.conv1", i);
            snprintf(b->label, sizeof b->label, "level %d, C -> C", i);
        } else {
            snprintf(a->label, sizeof a->label, "bottleneck.conv1");
            snprintf(b->label, sizeof b->label, "bottleneck.conv2");
        }
    }
    return n;
}

static double gflop_of(const layer *l, int batch)
{
    return 2e-9 * batch * (double)l->cout * l->cin * 9 * l->h * l->w;
}

static int runs(const layer *l, int dir)
{
    return !(dir == TT_CONV_DIR_BACKWARD_DATA && l->no_input_grad);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static tt_status alloc_filled(tt_backend *be, size_t floats, float value, const char *name,
                              tt_buffer **out)
{
    TT_TRY(tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_OTHER, name, out));
    return tt_fill(be, tt_mem_of(*out), value, floats);
}

/* Times the three directions of `l` on `be` with `algo` (AUTO: the
 * autotuner's pick); fills l->ms and l->algo. */
static tt_status time_layer(tt_backend *be, layer *l, int batch, tt_conv_algo algo)
{
    tt_conv2d_desc d = {.batch = batch, .in_channels = l->cin, .in_h = l->h, .in_w = l->w,
                        .out_channels = l->cout, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                        .stride_w = 1, .pad_h = 1, .pad_w = 1, .no_input_grad = l->no_input_grad,
                        .algo = algo};
    /* like the model: no room for every candidate's workspace, direct */
    if (tt_conv2d_workspace_bytes(&d) > be->device.max_alloc_bytes) d.algo = TT_CONV_ALGO_DIRECT;
    size_t in_n = (size_t)batch * l->cin * l->h * l->w, out_n = (size_t)batch * l->cout * l->h * l->w;
    size_t w_n = (size_t)l->cout * l->cin * 9, ws_bytes = tt_conv2d_workspace_bytes(&d);
    tt_buffer *x = NULL, *y = NULL, *dx = NULL, *w = NULL, *dw = NULL, *b = NULL, *ws = NULL;
    tt_status status = NULL;
    TT_CHECK(alloc_filled(be, in_n, 0.5f, "layers.x", &x));
    TT_CHECK(alloc_filled(be, out_n, 0.25f, "layers.y", &y));
    TT_CHECK(alloc_filled(be, in_n, 0.0f, "layers.dx", &dx));
    TT_CHECK(alloc_filled(be, w_n, 0.01f, "layers.w", &w));
    TT_CHECK(alloc_filled(be, w_n, 0.0f, "layers.dw", &dw));
    TT_CHECK(alloc_filled(be, (size_t)l->cout, 0.0f, "layers.b", &b));
    if (ws_bytes) TT_CHECK(tt_buffer_alloc(be, ws_bytes, TT_MEM_WORKSPACE, "layers.workspace", &ws));
    tt_mem wsm = ws ? tt_mem_of(ws) : (tt_mem){0}, none = {0};
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) l->ms[dir] = INFINITY;
    for (int rep = 0; rep <= REPS; rep++) {
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (!runs(l, dir)) continue;
            double t0 = now_ms();
            if (dir == TT_CONV_DIR_FORWARD)
                TT_CHECK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w),
                                           tt_mem_of(b), &d, wsm));
            else
                TT_CHECK(tt_conv2d_backward(
                    be, dir == TT_CONV_DIR_BACKWARD_DATA ? tt_mem_of(dx) : none,
                    dir == TT_CONV_DIR_BACKWARD_WEIGHT ? tt_mem_of(dw) : none, none, tt_mem_of(y),
                    tt_mem_of(x), tt_mem_of(w), &d, wsm));
            TT_CHECK(tt_finish(be));
            double t = now_ms() - t0;
            if (rep > 0 && t < l->ms[dir]) l->ms[dir] = t;
        }
    }
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++)
        l->algo[dir] = tt_conv2d_algo_on(be, &d, (tt_conv_dir)dir);
cleanup:
    tt_buffer_free(x), tt_buffer_free(y), tt_buffer_free(dx), tt_buffer_free(w);
    tt_buffer_free(dw), tt_buffer_free(b), tt_buffer_free(ws);
    return status;
}

/* The im2col GEMMs of each layer and direction, per image, timed with
 * OpenBLAS; l->blas_ms = micro-batch x that.  Returns 0 when not measured. */
static int time_openblas(layer *layers, int count, int batch)
{
    tt_gemm_shape *shapes = calloc((size_t)count * TT_CONV_DIR_COUNT, sizeof *shapes);
    double *secs = calloc((size_t)count * TT_CONV_DIR_COUNT, sizeof *secs);
    int ok = shapes && secs;
    for (int i = 0; ok && i < count; i++) {
        const layer *l = &layers[i];
        size_t k = (size_t)l->cin * 9, plane = (size_t)l->h * l->w, co = (size_t)l->cout;
        tt_gemm_shape *g = &shapes[i * TT_CONV_DIR_COUNT];
        g[TT_CONV_DIR_FORWARD] = (tt_gemm_shape){.m = co, .n = plane, .k = k, .count = 1};
        g[TT_CONV_DIR_BACKWARD_DATA] =
            (tt_gemm_shape){.trans_a = 1, .m = k, .n = plane, .k = co, .count = 1};
        g[TT_CONV_DIR_BACKWARD_WEIGHT] =
            (tt_gemm_shape){.trans_b = 1, .m = co, .n = k, .k = plane, .count = 1};
    }
    ok = ok && tt_host_sgemm_time("bench", shapes, count * TT_CONV_DIR_COUNT, secs, stderr);
    for (int i = 0; ok && i < count; i++)
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++)
            layers[i].blas_ms[dir] = batch * secs[i * TT_CONV_DIR_COUNT + dir] * 1e3;
    free(shapes);
    free(secs);
    return ok;
}

/* GFLOP/s of the directions that run, from ms (or blas_ms). */
static double layer_gflops(const layer *l, int batch, int blas)
{
    double gflop = 0, ms = 0;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        if (!runs(l, dir)) continue;
        gflop += gflop_of(l, batch);
        ms += blas ? l->blas_ms[dir] : l->ms[dir];
    }
    return ms > 0 && isfinite(ms) ? gflop / (ms / 1e3) : 0;
}

/* Over every 3x3 convolution of one training micro-batch (counts weigh). */
static double total_gflops(const layer *layers, int count, int batch, int blas)
{
    double gflop = 0, ms = 0;
    for (int i = 0; i < count; i++)
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (!runs(&layers[i], dir)) continue;
            gflop += layers[i].count * gflop_of(&layers[i], batch);
            ms += layers[i].count * (blas ? layers[i].blas_ms[dir] : layers[i].ms[dir]);
        }
    return ms > 0 && isfinite(ms) ? gflop / (ms / 1e3) : 0;
}

static void print_text(const tt_backend *be, const tt_train_options *t, const layer *layers,
                       int count, int blas)
{
    static const char *dir_label[] = {"forward", "d input", "d weight"};
    int batch = t->micro_batch;
    printf("%s: the UNet's 3x3 convolutions (base %d, depth %d) at micro-batch %d and tile %dx%d\n",
           be->device.name, t->base_channels, t->depth, batch, t->tile[0], t->tile[1]);
    printf("ms per call, best of %d after an untimed one, and the algorithm that ran; GFLOP/s of "
           "the three together%s\n", REPS,
           blas ? ";\nOpenBLAS: cblas_sgemm on the host, the same layer's im2col GEMMs, once per image" : "");
    printf("\n%-18s %5s %5s %9s %6s", "layer", "Cin", "Cout", "plane", "count");
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) printf(" %20s", dir_label[dir]);
    printf(" %8s", "GFLOP/s");
    if (blas) printf(" %8s %6s", "OpenBLAS", "ratio");
    printf("\n");
    for (int i = 0; i < count; i++) {
        const layer *l = &layers[i];
        char plane[24];
        snprintf(plane, sizeof plane, "%dx%d", l->h, l->w);
        printf("%-18s %5d %5d %9s %6d", l->label, l->cin, l->cout, plane, l->count);
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (runs(l, dir)) printf(" %8.2f %-11s", l->ms[dir], tt_conv_algo_name(l->algo[dir]));
            else printf(" %20s", "-");
        }
        double mine = layer_gflops(l, batch, 0), theirs = blas ? layer_gflops(l, batch, 1) : 0;
        printf(" %8.1f", mine);
        if (blas) printf(" %8.1f %5.0f%%", theirs, theirs > 0 ? 100 * mine / theirs : 0);
        printf("\n");
    }
    double mine = total_gflops(layers, count, batch, 0);
    printf("%-18s %75s %8.1f", "all, by count", "", mine);
    if (blas) {
        double theirs = total_gflops(layers, count, batch, 1);
        printf(" %8.1f %5.0f%%", theirs, theirs > 0 ? 100 * mine / theirs : 0);
    }
    printf("\n(C -> C at level i: enc.i.conv2, the two halves of dec.i.conv1, dec.i.conv2)\n");
}

static void print_json(const tt_backend *be, const tt_train_options *t, const layer *layers,
                       int count, int blas)
{
    static const char *dir_key[] = {"forward", "backward_data", "backward_weight"};
    int batch = t->micro_batch;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", be->device.name);
    cJSON_AddNumberToObject(root, "micro_batch", batch);
    cJSON_AddNumberToObject(root, "tile_h", t->tile[0]);
    cJSON_AddNumberToObject(root, "tile_w", t->tile[1]);
    cJSON_AddNumberToObject(root, "gflops", total_gflops(layers, count, batch, 0));
    if (blas) cJSON_AddNumberToObject(root, "gflops_openblas", total_gflops(layers, count, batch, 1));
    cJSON *arr = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < count; i++) {
        const layer *l = &layers[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "label", l->label);
        cJSON_AddNumberToObject(o, "in_channels", l->cin);
        cJSON_AddNumberToObject(o, "out_channels", l->cout);
        cJSON_AddNumberToObject(o, "h", l->h);
        cJSON_AddNumberToObject(o, "w", l->w);
        cJSON_AddNumberToObject(o, "count", l->count);
        cJSON_AddNumberToObject(o, "gflop_per_call", gflop_of(l, batch));
        cJSON *ms = cJSON_AddObjectToObject(o, "ms"), *algo = cJSON_AddObjectToObject(o, "algo");
        cJSON *bms = blas ? cJSON_AddObjectToObject(o, "ms_openblas") : NULL;
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (!runs(l, dir)) continue;
            cJSON_AddNumberToObject(ms, dir_key[dir], l->ms[dir]);
            cJSON_AddStringToObject(algo, dir_key[dir], tt_conv_algo_name(l->algo[dir]));
            if (bms) cJSON_AddNumberToObject(bms, dir_key[dir], l->blas_ms[dir]);
        }
        cJSON_AddNumberToObject(o, "gflops", layer_gflops(l, batch, 0));
        if (blas) cJSON_AddNumberToObject(o, "gflops_openblas", layer_gflops(l, batch, 1));
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_PrintUnformatted(root);
    printf("%s\n", text ? text : "null");
    cJSON_free(text);
    cJSON_Delete(root);
}

tt_status tt_bench_layers(const tt_train_options *t, int json, int compare_openblas)
{
    tt_unet_config c = tt_unet_config_default();
    c.base_channels = t->base_channels;
    c.depth = t->depth;
    c.norm = TT_NORM_NONE; /* only the convolutions are timed */
    TT_TRY(tt_unet_config_check(&c));
    if (t->tile[0] % (1 << c.depth) || t->tile[1] % (1 << c.depth))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--tile %dx%d: both sides must be multiples of 2^depth = %d",
                            t->tile[0], t->tile[1], 1 << c.depth);
    tt_conv_algo algo;
    TT_TRY(tt_conv_algo_setting(t->algo, &algo));
    layer layers[2 * (TT_UNET_MAX_DEPTH + 1)];
    int count = layers_of(&c, t->tile[0], t->tile[1], layers);
    tt_backend *be = NULL;
    TT_TRY(tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_OPENCL, .device = t->device}, &be));
    tt_status status = NULL;
    int progress = !json && isatty(STDERR_FILENO);
    for (int i = 0; i < count; i++) {
        if (progress) fprintf(stderr, "\rtiming %-18s", layers[i].label);
        TT_CHECK(time_layer(be, &layers[i], t->micro_batch, algo));
    }
    if (progress) fprintf(stderr, "\r%40s\r", "");
    int blas = compare_openblas && time_openblas(layers, count, t->micro_batch);
    if (json) print_json(be, t, layers, count, blas);
    else print_text(be, t, layers, count, blas);
cleanup:
    tt_backend_destroy(be);
    return status;
}
