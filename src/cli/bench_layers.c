/*
 * tiletrain bench --layers: a model's convolutions one shape at a time
 * (see bench_layers.h); the model gives its shapes
 * (tt_model_conv_shapes).
 */
#include "cli/bench_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "tune/host_blas.h"
#include "core/status.h"
#include "model/model.h"
#include "train/recipe.h"
#include "ops/conv2d.h"
#include "ops/util.h"

#define REPS 5 /* timed runs per direction, after one untimed (which may autotune) */

typedef struct layer {
    tt_model_conv shape;
    double ms[TT_CONV_DIR_COUNT];      /* per call, best of REPS */
    tt_conv_algo algo[TT_CONV_DIR_COUNT];
    double blas_ms[TT_CONV_DIR_COUNT]; /* OpenBLAS: micro-batch x the per-image GEMM */
} layer;

static int groups_of(const tt_model_conv *c) { return c->groups > 1 ? c->groups : 1; }

/* A direction's GFLOP at `batch` (a group's input channels per output). */
static double gflop_of(const layer *l, int batch)
{
    const tt_model_conv *c = &l->shape;
    return 2e-9 * batch * (double)c->out_channels * (c->in_channels / groups_of(c)) * c->kernel *
           c->kernel * (double)tt_model_conv_out_plane(c);
}

static int runs(const layer *l, int dir)
{
    return !(dir == TT_CONV_DIR_BACKWARD_DATA && l->shape.no_input_grad);
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
    const tt_model_conv *c = &l->shape;
    tt_conv2d_desc d = tt_model_conv_desc(c, batch, algo);
    /* like the model: no room for every candidate's workspace, direct */
    if (tt_conv2d_workspace_bytes(&d) > be->device.max_alloc_bytes) d.algo = tt_conv_direct_row(be);
    size_t in_n = (size_t)batch * c->in_channels * c->height * c->width;
    size_t out_n = (size_t)batch * c->out_channels * tt_model_conv_out_plane(c);
    size_t w_n = (size_t)c->out_channels * (c->in_channels / groups_of(c)) * c->kernel * c->kernel;
    size_t ws_bytes = tt_conv2d_workspace_bytes(&d);
    tt_buffer *x = NULL, *y = NULL, *dx = NULL, *w = NULL, *dw = NULL, *b = NULL, *ws = NULL;
    tt_status status = NULL;
    TT_CHECK(alloc_filled(be, in_n, 0.5f, "layers.x", &x));
    TT_CHECK(alloc_filled(be, out_n, 0.25f, "layers.y", &y));
    TT_CHECK(alloc_filled(be, in_n, 0.0f, "layers.dx", &dx));
    TT_CHECK(alloc_filled(be, w_n, 0.01f, "layers.w", &w));
    TT_CHECK(alloc_filled(be, w_n, 0.0f, "layers.dw", &dw));
    TT_CHECK(alloc_filled(be, (size_t)l->shape.out_channels, 0.0f, "layers.b", &b));
    if (ws_bytes) TT_CHECK(tt_buffer_alloc(be, ws_bytes, TT_MEM_WORKSPACE, "layers.workspace", &ws));
    tt_mem wsm = ws ? tt_mem_of(ws) : (tt_mem){0}, none = {0};
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) l->ms[dir] = INFINITY;
    for (int rep = 0; rep <= REPS; rep++) {
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (!runs(l, dir)) continue;
            double t0 = (1e3 * tt_seconds());
            if (dir == TT_CONV_DIR_FORWARD)
                TT_CHECK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w),
                                           tt_mem_of(b), &d, wsm));
            else
                TT_CHECK(tt_conv2d_backward(
                    be, dir == TT_CONV_DIR_BACKWARD_DATA ? tt_mem_of(dx) : none,
                    dir == TT_CONV_DIR_BACKWARD_WEIGHT ? tt_mem_of(dw) : none, none, tt_mem_of(y),
                    tt_mem_of(x), tt_mem_of(w), &d, wsm));
            TT_CHECK(tt_finish(be));
            double t = (1e3 * tt_seconds()) - t0;
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
    tt_gemm_shape *shapes = tt_calloc((size_t)count * TT_CONV_DIR_COUNT, sizeof *shapes);
    double *secs = tt_calloc((size_t)count * TT_CONV_DIR_COUNT, sizeof *secs);
    int ok = shapes && secs;
    for (int i = 0; ok && i < count; i++) {
        const layer *l = &layers[i];
        const tt_model_conv *c = &l->shape;
        int groups = groups_of(c); /* a GEMM a group */
        size_t k = (size_t)(c->in_channels / groups) * c->kernel * c->kernel;
        size_t plane = tt_model_conv_out_plane(c);
        size_t co = (size_t)(c->out_channels / groups);
        tt_gemm_shape *g = &shapes[i * TT_CONV_DIR_COUNT];
        g[TT_CONV_DIR_FORWARD] = (tt_gemm_shape){.m = co, .n = plane, .k = k, .count = groups};
        g[TT_CONV_DIR_BACKWARD_DATA] =
            (tt_gemm_shape){.trans_a = 1, .m = k, .n = plane, .k = co, .count = groups};
        g[TT_CONV_DIR_BACKWARD_WEIGHT] =
            (tt_gemm_shape){.trans_b = 1, .m = co, .n = k, .k = plane, .count = groups};
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

/* Over every convolution of one training micro-batch (counts weigh). */
static double total_gflops(const layer *layers, int count, int batch, int blas)
{
    double gflop = 0, ms = 0;
    for (int i = 0; i < count; i++)
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (!runs(&layers[i], dir)) continue;
            gflop += layers[i].shape.count * gflop_of(&layers[i], batch);
            ms += layers[i].shape.count * (blas ? layers[i].blas_ms[dir] : layers[i].ms[dir]);
        }
    return ms > 0 && isfinite(ms) ? gflop / (ms / 1e3) : 0;
}

static void print_text(const tt_backend *be, const tt_train_options *t, const tt_model_spec *spec,
                       const layer *layers, int count, int blas)
{
    static const char *dir_label[] = {"forward", "d input", "d weight"};
    int batch = t->micro_batch;
    char described[96];
    tt_model_spec_describe(spec, described, sizeof described);
    printf("%s: the convolutions of %s at micro-batch %d and tile %dx%d\n", be->device.name,
           described, batch, t->tile[0], t->tile[1]);
    printf("ms per call, best of %d after an untimed one, and the algorithm that ran; GFLOP/s of "
           "the three together%s\n", REPS,
           blas ? ";\nOpenBLAS: cblas_sgemm on the host, the same layer's im2col GEMMs, once per "
                  "image" : "");
    printf("\n%-29s %5s %5s %12s %9s %5s", "layer", "Cin", "Cout", "k/s", "input", "count");
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) printf(" %26s", dir_label[dir]);
    printf(" %8s", "GFLOP/s");
    if (blas) printf(" %8s %6s", "OpenBLAS", "ratio");
    printf("\n");
    for (int i = 0; i < count; i++) {
        const layer *l = &layers[i];
        const tt_model_conv *c = &l->shape;
        char plane[24], ks[32];
        snprintf(plane, sizeof plane, "%dx%d", c->height, c->width);
        int used = snprintf(ks, sizeof ks, "%dx%d/%d", c->kernel, c->kernel, c->stride);
        if (c->dilation > 1) used += snprintf(ks + used, sizeof ks - (size_t)used, " d%d", c->dilation);
        if (groups_of(c) > 1)
            snprintf(ks + used, sizeof ks - (size_t)used, groups_of(c) == c->in_channels ? " dw" : " g%d",
                     groups_of(c));
        printf("%-29s %5d %5d %12s %9s %5d", c->label, c->in_channels, c->out_channels, ks, plane,
               c->count);
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            if (runs(l, dir)) printf(" %8.2f %-17s", l->ms[dir], tt_conv_algo_name(l->algo[dir]));
            else printf(" %26s", "-");
        }
        double mine = layer_gflops(l, batch, 0), theirs = blas ? layer_gflops(l, batch, 1) : 0;
        printf(" %8.1f", mine);
        if (blas) printf(" %8.1f %5.0f%%", theirs, theirs > 0 ? 100 * mine / theirs : 0);
        printf("\n");
    }
    double mine = total_gflops(layers, count, batch, 0);
    printf("%-29s %120s %8.1f", "all, by count", "", mine);
    if (blas) {
        double theirs = total_gflops(layers, count, batch, 1);
        printf(" %8.1f %5.0f%%", theirs, theirs > 0 ? 100 * mine / theirs : 0);
    }
    printf("\nk/s: kernel and stride, padded by kernel / 2 (times the dilation dN); dw: "
           "depthwise, gN: N groups; input: the input's plane%s\n",
           strcmp(spec->kind, "unet") == 0 ? "\n(C -> C at level i: enc.i.conv2, the two halves "
                                             "of dec.i.conv1, dec.i.conv2)" : "");
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
        cJSON_AddStringToObject(o, "label", l->shape.label);
        cJSON_AddNumberToObject(o, "in_channels", l->shape.in_channels);
        cJSON_AddNumberToObject(o, "out_channels", l->shape.out_channels);
        cJSON_AddNumberToObject(o, "kernel", l->shape.kernel);
        cJSON_AddNumberToObject(o, "dilation", l->shape.dilation > 1 ? l->shape.dilation : 1);
        cJSON_AddNumberToObject(o, "groups", groups_of(&l->shape));
        cJSON_AddNumberToObject(o, "stride", l->shape.stride);
        cJSON_AddNumberToObject(o, "h", l->shape.height);
        cJSON_AddNumberToObject(o, "w", l->shape.width);
        cJSON_AddNumberToObject(o, "count", l->shape.count);
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
    tt_model_spec spec;
    TT_TRY(tt_recipe_model(t, 0, &spec));
    tt_model_conv *shapes = NULL;
    layer *layers = NULL;
    int count = 0;
    tt_conv_algo algo = spec.algo;
    tt_backend *be = NULL;
    tt_backend_request request;
    TT_TRY(tt_recipe_backend(t, &request)); /* --backend, --device */
    request.profiling = 0;                  /* wall clock around tt_finish */
    TT_TRY(tt_backend_create(&request, &be));
    tt_status status = NULL;
    TT_CHECK(tt_model_conv_shapes(be, &spec, t->tile[0], t->tile[1], &shapes, &count));
    layers = tt_calloc((size_t)(count ? count : 1), sizeof *layers);
    if (!layers) TT_CHECK(tt_error_new(TT_ERR_OUT_OF_MEMORY, "bench --layers: out of host memory"));
    int kept = 0; /* the conv2d shapes: the up-convolutions are transposed ones */
    for (int i = 0; i < count; i++)
        if (!shapes[i].transposed) layers[kept++] = (layer){.shape = shapes[i]};
    count = kept;
    int progress = !json && isatty(STDERR_FILENO);
    for (int i = 0; i < count; i++) {
        if (progress) fprintf(stderr, "\rtiming %-29s", layers[i].shape.label);
        TT_CHECK(time_layer(be, &layers[i], t->micro_batch, algo));
    }
    if (progress) fprintf(stderr, "\r%36s\r", "");
    int blas = compare_openblas && time_openblas(layers, count, t->micro_batch);
    if (json) print_json(be, t, layers, count, blas);
    else print_text(be, t, &spec, layers, count, blas);
cleanup:
    free(shapes), free(layers);
    tt_backend_destroy(be);
    return status;
}
