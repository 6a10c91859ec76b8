/*
 * Sliding-window prediction on the device with a small UNet (base 4,
 * depth 2, group norm): one tile the size of the image is exactly the
 * plain forward pass; images that are not multiples of 2^depth (13x19,
 * 1x1) against a host re-implementation that runs every tile alone and
 * blends in double; a constant model blends to its constant; the device
 * memory does not grow with the image; the reader only sees crops inside
 * the image.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tiffio.h>

#include "harness.h"
#include "ops/conv_autotune.h"
#include "infer/model_load.h"
#include "infer/predict.h"
#include "infer/postprocess.h"
#include "infer/predict_raster.h"
#include "io/safetensors.h"
#include "model/unet.h"

/* A UNet built as a tt_model (its head filled), for tt_predict_image. */
static tt_model *unet_new(tt_backend *be, const tt_unet_config *c, int capacity, int h, int w,
                         uint64_t seed)
{
    tt_model_spec spec = tt_unet_spec_of(c);
    tt_model *m = NULL;
    TH_OK(tt_model_create(be, &spec, capacity, h, w, seed, &m));
    return m;
}

static tt_unet_config small_config(void)
{
    tt_unet_config c = tt_unet_config_default();
    c.classes = 2;
    c.base_channels = 4;
    c.depth = 2;
    c.groups = 2;
    return c;
}

static uint8_t *random_image(int w, int h, uint64_t seed)
{
    uint8_t *rgb = malloc((size_t)w * h * 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rgb);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) rgb[i] = (uint8_t)(th_uniform(&seed, 0, 256));
    return rgb;
}

/* The plain forward of one normalised tile whose top-left image pixel is
 * (y0, x0), padded the way `pad` says; logits (classes, T, T) into out. */
static void plain_forward(tt_model *u, const tt_memory_image *im, const tt_predict_options *o,
                          int y0, int x0, float *out)
{
    int th = u->height, tw = u->width;
    size_t plane = (size_t)th * tw;
    float *input = malloc(3 * plane * sizeof *input);
    for (int i = 0; i < th; i++)
        for (int j = 0; j < tw; j++) {
            int y = y0 + i, x = x0 + j;
            int inside = y >= 0 && y < im->height && x >= 0 && x < im->width;
            if (!inside && o->pad == TT_PAD_REFLECT) {
                y = tt_pad_reflect_index(y, im->height);
                x = tt_pad_reflect_index(x, im->width);
                inside = 1;
            }
            for (int c = 0; c < 3; c++) {
                float v = inside ? im->rgb[((size_t)y * im->width + x) * 3 + c] : 0;
                input[c * plane + (size_t)i * tw + j] = (v / 255.0f - o->mean[c]) / o->std[c];
            }
        }
    TH_OK(tt_write(u->be, u->input, input, 3 * plane * sizeof *input));
    TH_OK(tt_model_forward(u, 1, 0));
    TH_OK(tt_read(u->be, out, u->logits, u->spec.classes * plane * sizeof *out));
    free(input);
}

/* Host reference: every tile alone, blended in double. */
static double *reference_predict(tt_model *u, const tt_memory_image *im,
                                 const tt_predict_options *o)
{
    int h = im->height, w = im->width, th = u->height, tw = u->width, classes = u->spec.classes;
    tt_tile_plan plan;
    TH_OK(tt_tile_plan_make(h, w, th, tw, o->overlap, o->blend, &plan));
    double *acc = calloc((size_t)classes * h * w, sizeof *acc);
    double *wsum = calloc((size_t)h * w, sizeof *wsum);
    float *tile = malloc((size_t)classes * th * tw * sizeof *tile);
    for (int t = 0; t < tt_tile_plan_count(&plan); t++) {
        int y0, x0;
        tt_tile_plan_origin(&plan, t, &y0, &x0);
        plain_forward(u, im, o, y0, x0, tile);
        for (int i = 0; i < th; i++)
            for (int j = 0; j < tw; j++) {
                int y = y0 + i, x = x0 + j;
                if (y < 0 || y >= h || x < 0 || x >= w) continue;
                double wt = (double)plan.y.weight[i] * plan.x.weight[j];
                wsum[(size_t)y * w + x] += wt;
                for (int c = 0; c < classes; c++)
                    acc[((size_t)c * h + y) * w + x] += wt * tile[((size_t)c * th + i) * tw + j];
            }
    }
    for (int c = 0; c < classes; c++)
        for (size_t p = 0; p < (size_t)h * w; p++) acc[(size_t)c * h * w + p] /= wsum[p];
    free(wsum);
    free(tile);
    tt_tile_plan_free(&plan);
    return acc;
}

static void test_one_tile_is_plain_forward(void)
{
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(th_backend(), &cfg, 2, 16, 16, 3);
    uint8_t *rgb = random_image(16, 16, 1);
    tt_memory_image im = {rgb, 16, 16};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    size_t n = 2 * 16 * 16;
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    tt_predict_options o = tt_predict_options_default();
    plain_forward(u, &im, &o, 0, 0, want);
    o.blend = TT_BLEND_MEAN;
    TH_OK(tt_predict_image(u, &reader, &o, got));
    CU_ASSERT_EQUAL(memcmp(got, want, n * sizeof *got), 0); /* bit for bit */
    o.blend = TT_BLEND_GAUSSIAN;
    TH_OK(tt_predict_image(u, &reader, &o, got));
    double err = th_max_rel_error_f(got, want, n, 1e-3);
    printf("\n  gaussian, one tile vs plain forward: max rel error %.2e (tol 1e-6); mean: "
           "bitwise", err);
    CU_ASSERT(err < 1e-6);
    free(got);
    free(want);
    free(rgb);
    tt_model_destroy(u);
}

/* Test-time augmentation: every view moves each pixel somewhere distinct
 * (a bijection), the views of d4 are 8 different maps; on an image of one
 * tile the TTA logits are the mean of the plain predictions of the views'
 * images mapped back (checked for flip and d4, and the multi-tile path
 * runs). */
static void test_tta(void)
{
    enum { T = 16 };
    tt_tta_kind kinds[2] = {TT_TTA_FLIP, TT_TTA_D4};
    for (int kk = 0; kk < 2; kk++) {
        tt_tta_kind kind = kinds[kk];
        int views = tt_tta_views(kind), distinct = 1;
        for (int v = 0; v < views; v++) {
            int seen[T * T] = {0}, same[8] = {0};
            for (int y = 0; y < T; y++)
                for (int x = 0; x < T; x++) {
                    int dx, dy;
                    tt_tta_dest(kind, v, T, T, x, y, &dx, &dy);
                    CU_ASSERT(dx >= 0 && dy >= 0 && dx < T && dy < T);
                    seen[dy * T + dx]++;
                    for (int u = 0; u < v; u++) {
                        int ux, uy;
                        tt_tta_dest(kind, u, T, T, x, y, &ux, &uy);
                        same[u] += ux == dx && uy == dy;
                    }
                }
            for (int i = 0; i < T * T; i++) CU_ASSERT_EQUAL(seen[i], 1);
            for (int u = 0; u < v; u++) distinct &= same[u] < T * T;
        }
        CU_ASSERT(distinct);
    }
    tt_unet_config cfg = small_config();
    tt_model *u = unet_new(th_backend(), &cfg, 2, T, T, 5);
    uint8_t *rgb = random_image(T, T, 4), *moved = malloc(T * T * 3);
    size_t n = 2 * T * T;
    float *got = malloc(n * sizeof *got), *want = calloc(n, sizeof *want), *one = malloc(n * sizeof *one);
    tt_memory_image im = {rgb, T, T}, mv = {moved, T, T};
    tt_crop_reader reader = tt_crop_reader_memory(&im), mreader = tt_crop_reader_memory(&mv);
    for (int kk = 0; kk < 2; kk++) {
        tt_predict_options o = tt_predict_options_default();
        o.tta = kinds[kk];
        TH_OK(tt_predict_image(u, &reader, &o, got));
        int views = tt_tta_views(o.tta);
        memset(want, 0, n * sizeof *want);
        o.tta = TT_TTA_NONE;
        for (int v = 0; v < views; v++) {
            for (int y = 0; y < T; y++)
                for (int x = 0; x < T; x++) {
                    int dx, dy;
                    tt_tta_dest(kinds[kk], v, T, T, x, y, &dx, &dy);
                    memcpy(moved + (dy * T + dx) * 3, rgb + (y * T + x) * 3, 3);
                }
            TH_OK(tt_predict_image(u, &mreader, &o, one));
            for (int c = 0; c < 2; c++)
                for (int y = 0; y < T; y++)
                    for (int x = 0; x < T; x++) {
                        int dx, dy;
                        tt_tta_dest(kinds[kk], v, T, T, x, y, &dx, &dy);
                        want[c * T * T + y * T + x] += one[c * T * T + dy * T + dx] / (float)views;
                    }
        }
        double err = th_max_rel_error_f(got, want, n, 1e-3);
        printf("\n  --tta %s on one tile vs the mean of the views' predictions: max rel error "
               "%.2e (tol 1e-5)", kk ? "d4" : "flip", err);
        CU_ASSERT(err < 1e-5);
    }
    /* more tiles than one batch, and a non-square tile refused for d4 */
    uint8_t *big = random_image(40, 28, 6);
    tt_memory_image bim = {big, 40, 28};
    tt_crop_reader breader = tt_crop_reader_memory(&bim);
    float *blog = malloc(2 * 40 * 28 * sizeof *blog);
    tt_predict_options o = tt_predict_options_default();
    o.tta = TT_TTA_D4;
    TH_OK(tt_predict_image(u, &breader, &o, blog));
    int finite = 1;
    for (int i = 0; i < 2 * 40 * 28; i++) finite &= isfinite(blog[i]);
    CU_ASSERT(finite);
    tt_model *r = unet_new(th_backend(), &cfg, 2, 16, 24, 5);
    tt_status st = tt_predict_image(r, &breader, &o, blog);
    CU_ASSERT(st && strstr(tt_status_message(st), "square tile") != NULL);
    tt_status_free(st);
    tt_model_destroy(r);
    free(blog), free(big);
    free(got), free(want), free(one), free(moved), free(rgb);
    tt_model_destroy(u);
}

static void test_odd_sizes(void)
{
    /* im2col + GEMM runs image by image, so a tile's logits do not depend on
     * how many tiles share its forward pass (the reference runs them one at
     * a time); with the autotuner free, the two batch sizes may get
     * different algorithms and differ by their rounding (1e-5 seen) */
    tt_unet_config cfg = small_config();
    cfg.algo = TT_CONV_ALGO_IM2COL_GEMM;
    tt_model *u = NULL;
    u = unet_new(th_backend(), &cfg, 2, 16, 16, 4);
    static const int sizes[][2] = {{13, 19}, {1, 1}, {21, 6}};
    double worst = 0;
    for (int s = 0; s < 3; s++)
        for (int pad = 0; pad < 2; pad++) {
            int h = sizes[s][0], w = sizes[s][1];
            uint8_t *rgb = random_image(w, h, 10 + s);
            tt_memory_image im = {rgb, w, h};
            tt_crop_reader reader = tt_crop_reader_memory(&im);
            tt_predict_options o = tt_predict_options_default();
            o.pad = pad ? TT_PAD_ZERO : TT_PAD_REFLECT;
            o.overlap = s == 2 ? 0.25 : 0.5;
            o.mean[0] = 0.4f, o.mean[1] = 0.5f, o.mean[2] = 0.6f;
            o.std[0] = 0.2f, o.std[1] = 0.25f, o.std[2] = 0.3f;
            size_t n = (size_t)2 * h * w;
            float *got = malloc(n * sizeof *got);
            TH_OK(tt_predict_image(u, &reader, &o, got));
            double *want = reference_predict(u, &im, &o);
            double err = th_max_rel_error(got, want, n, 1e-2);
            if (err > worst) worst = err;
            free(want);
            free(got);
            free(rgb);
        }
    printf("\n  13x19, 1x1, 21x6 (reflect and zero padding) vs tile-by-tile reference: "
           "max rel error %.2e (tol 1e-5)", worst);
    CU_ASSERT(worst < 1e-5);
    tt_model_destroy(u);
}

/* What tt_predict_stream handed on: the image rebuilt, the rows in order. */
typedef struct stream_log {
    float *planes;
    int classes, height, width;
    int next_row, calls, most_rows, out_of_order;
} stream_log;

static tt_status log_rows(void *ctx, int y0, int rows, const float *planes, size_t stride)
{
    stream_log *l = ctx;
    if (y0 != l->next_row || rows < 1 || y0 + rows > l->height) l->out_of_order++;
    else
        for (int c = 0; c < l->classes; c++)
            memcpy(l->planes + ((size_t)c * l->height + y0) * l->width, planes + c * stride,
                   (size_t)rows * l->width * sizeof *planes);
    l->next_row = y0 + rows;
    l->calls++;
    if (rows > l->most_rows) l->most_rows = rows;
    return NULL;
}

static tt_status refuse_rows(void *ctx, int y0, int rows, const float *planes, size_t stride)
{
    (void)ctx, (void)planes, (void)stride;
    return tt_error_new(TT_ERR_IO, "rows %d..%d: the disk is full", y0, y0 + rows);
}

/* A tall image (8 rows of 3 tiles): the rows come top to bottom, each once,
 * a tile's height at most at a time (the band holds one row of tiles),
 * whatever the batch; the values are the tile-by-tile reference's;
 * a sink's error stops the prediction with its message. */
static void test_stream_rows(void)
{
    tt_unet_config cfg = small_config();
    cfg.algo = TT_CONV_ALGO_IM2COL_GEMM;
    tt_model *u = unet_new(th_backend(), &cfg, 2, 16, 16, 5);
    int h = 71, w = 23;
    uint8_t *rgb = random_image(w, h, 21);
    tt_memory_image im = {rgb, w, h};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    tt_predict_options o = tt_predict_options_default();
    double *want = reference_predict(u, &im, &o);
    size_t n = (size_t)2 * h * w;
    double worst = 0;
    for (int batch = 1; batch <= 2; batch++) {
        stream_log l = {calloc(n, sizeof(float)), 2, h, w, 0, 0, 0, 0};
        o.batch = batch;
        TH_OK(tt_predict_stream(u, &reader, &o, log_rows, &l));
        CU_ASSERT_EQUAL(l.out_of_order, 0);
        CU_ASSERT_EQUAL(l.next_row, h);
        CU_ASSERT(l.calls >= 4);
        CU_ASSERT(l.most_rows <= 16);
        double err = th_max_rel_error(l.planes, want, n, 1e-2);
        if (err > worst) worst = err;
        printf("\n  batch %d: %d bands of at most %d rows", batch, l.calls, l.most_rows);
        free(l.planes);
    }
    printf("\n  71x23 streamed vs tile-by-tile reference: max rel error %.2e (tol 1e-5)", worst);
    CU_ASSERT(worst < 1e-5);
    tt_status st = tt_predict_stream(u, &reader, &o, refuse_rows, NULL);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(st), "the disk is full"));
    tt_status_free(st);
    free(want);
    free(rgb);
    tt_model_destroy(u);
}

/* The float32 bands of a TIFF tt_raster_writer wrote, as planes (bands, h, w). */
static float *read_f32_planes(const char *path, int w, int h, int bands)
{
    TIFF *tif = TIFFOpen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    float *planes = malloc((size_t)bands * h * w * sizeof *planes);
    float *tile = malloc((size_t)TIFFTileSize(tif));
    uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    for (uint32_t y0 = 0; y0 < (uint32_t)h; y0 += th)
        for (uint32_t x0 = 0; x0 < (uint32_t)w; x0 += tw) {
            CU_ASSERT(TIFFReadTile(tif, tile, x0, y0, 0, 0) > 0);
            for (uint32_t y = y0; y < y0 + th && y < (uint32_t)h; y++)
                for (uint32_t x = x0; x < x0 + tw && x < (uint32_t)w; x++)
                    for (int b = 0; b < bands; b++)
                        planes[((size_t)b * h + y) * w + x] =
                            tile[((size_t)(y - y0) * tw + x - x0) * bands + b];
        }
    free(tile);
    TIFFClose(tif);
    return planes;
}

/* Streamed into TIFFs: the class-index mask is the argmax of the whole
 * image's logits and the probabilities their softmax, bit for bit; the
 * multi-label masks are sigmoid > each class's threshold. */
static void test_raster_output(void)
{
    tt_unet_config cfg = small_config();
    cfg.algo = TT_CONV_ALGO_IM2COL_GEMM;
    tt_model *u = unet_new(th_backend(), &cfg, 2, 16, 16, 6);
    int h = 45, w = 37;
    size_t px = (size_t)h * w;
    uint8_t *rgb = random_image(w, h, 31);
    tt_memory_image im = {rgb, w, h};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    tt_predict_options o = tt_predict_options_default();
    float *logits = malloc(2 * px * sizeof *logits);
    uint8_t *index = malloc(px), *got = malloc(px * 3);
    TH_OK(tt_predict_image(u, &reader, &o, logits));
    char dir[] = "/tmp/tt-predict-raster-XXXXXX", mask[96], prob[96];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(mask, sizeof mask, "%s/m.tif", dir);
    snprintf(prob, sizeof prob, "%s/p.tif", dir);
    tt_raster_output out = {.mask_path = mask, .prob_path = prob};
    TH_OK(tt_predict_raster(u, &reader, &o, &out));
    tt_predict_argmax(logits, 2, px, index);
    tt_raster *r = NULL;
    TH_OK(tt_raster_open(mask, &r));
    TH_OK(tt_raster_read_crop(r, 0, 0, w, h, got));
    int wrong = 0;
    for (size_t i = 0; i < px; i++) wrong += got[3 * i] != index[i];
    tt_raster_close(r);
    float *probs = read_f32_planes(prob, w, h, 2);
    tt_predict_softmax(logits, 2, px);
    CU_ASSERT_EQUAL(memcmp(probs, logits, 2 * px * sizeof *probs), 0);
    free(probs);
    CU_ASSERT_EQUAL(wrong, 0);
    /* multi-label: a threshold per class */
    TH_OK(tt_predict_image(u, &reader, &o, logits));
    tt_predict_sigmoid(logits, 2, px);
    float thresholds[2] = {0.3f, 0.6f};
    tt_raster_output ml = {.mask_path = mask, .multi_label = 1, .class_threshold = thresholds};
    TH_OK(tt_predict_raster(u, &reader, &o, &ml));
    TIFF *tif = TIFFOpen(mask, "r");
    uint16_t spp = 0;
    TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    CU_ASSERT_EQUAL(spp, 2);
    uint8_t *tile = malloc((size_t)TIFFTileSize(tif));
    CU_ASSERT(TIFFReadTile(tif, tile, 0, 0, 0, 0) > 0);
    int ml_wrong = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 2; c++)
                ml_wrong += tile[((size_t)y * 256 + x) * 2 + c] !=
                            (logits[c * px + (size_t)y * w + x] > thresholds[c] ? 255 : 0);
    TIFFClose(tif);
    free(tile);
    CU_ASSERT_EQUAL(ml_wrong, 0);
    /* small components: removed as on the whole image (multi-label planes:
     * random weights give speckled ones), the first pass's file gone */
    int least[2] = {2000, 30}; /* class 0: every component (the image has 1665 pixels) */
    float mean[2] = {0, 0};    /* thresholds: each plane's mean probability */
    TH_OK(tt_predict_image(u, &reader, &o, logits));
    tt_predict_sigmoid(logits, 2, px);
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < px; i++) mean[c] += logits[c * px + i] / (float)px;
    TH_OK(tt_predict_image(u, &reader, &o, logits));
    tt_mask_rule rule = {.multi_label = 1, .class_threshold = mean, .class_min_size = least};
    uint8_t *planes = malloc(2 * px), *kept = malloc(2 * px);
    TH_OK(tt_predict_to_masks(logits, 2, w, h, &rule, planes));
    tt_raster_output small = {.mask_path = mask, .multi_label = 1, .class_threshold = mean,
                              .min_size = least};
    TH_OK(tt_predict_raster(u, &reader, &o, &small));
    TH_OK(tt_raster_open(mask, &r));
    TH_OK(tt_raster_read_samples(r, 0, 0, w, h, kept));
    tt_raster_close(r);
    int small_wrong = 0, removed = 0;
    for (size_t i = 0; i < px; i++)
        for (int c = 0; c < 2; c++) {
            small_wrong += (kept[2 * i + c] != 0) != (planes[c * px + i] != 0);
            removed += logits[c * px + i] > mean[c] && !planes[c * px + i]; /* probabilities now */
        }
    free(planes), free(kept);
    char pass1[128];
    snprintf(pass1, sizeof pass1, "%s.pass1", mask);
    CU_ASSERT(access(pass1, F_OK) != 0);
    CU_ASSERT_EQUAL(small_wrong, 0);
    CU_ASSERT(removed > 0);
    printf("\n  45x37 streamed into TIFFs: class index %d pixels off the argmax, probabilities "
           "the softmax bit for bit; multi-label %d off; components under 2000 and 30 pixels: %d "
           "removed, %d off the whole image's removal", wrong, ml_wrong, removed, small_wrong);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    free(logits), free(index), free(got), free(rgb);
    tt_model_destroy(u);
}

/* Every weight zero, the head's bias (b0, b1): logits are (b0, b1) everywhere. */
static void test_constant_model(void)
{
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(th_backend(), &cfg, 1, 16, 16, 5);
    float *params = calloc(u->params->trainable_floats, sizeof *params);
    float *state = calloc(u->params->state_floats + 1, sizeof *state);
    const tt_param *bias = tt_params_find(u->params, "head.bias");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bias);
    params[bias->offset] = 0.75f;
    params[bias->offset + 1] = -2.5f;
    TH_OK(tt_model_set_params(u, params, state));
    int h = 16, w = 24; /* two tiles across, overlapping by 8 columns */
    uint8_t *rgb = random_image(w, h, 7);
    tt_memory_image im = {rgb, w, h};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    float *got = malloc((size_t)2 * h * w * sizeof *got);
    double worst = 0;
    for (int blend = 0; blend < 2; blend++) {
        tt_predict_options o = tt_predict_options_default();
        o.blend = (tt_blend_kind)blend;
        TH_OK(tt_predict_image(u, &reader, &o, got));
        for (int p = 0; p < h * w; p++) {
            worst = fmax(worst, fabs(got[p] - 0.75) / 0.75);
            worst = fmax(worst, fabs(got[h * w + p] + 2.5) / 2.5);
        }
    }
    printf("\n  constant model through two blended tiles: max rel error %.2e (tol 1e-6)", worst);
    CU_ASSERT(worst < 1e-6);
    free(got);
    free(rgb);
    free(params);
    free(state);
    tt_model_destroy(u);
}

typedef struct {
    tt_crop_reader inner;
    int crops, outside, largest;
} counting_reader;

static tt_status count_crop(void *ctx, int x0, int y0, int w, int h, uint8_t *rgb)
{
    counting_reader *c = ctx;
    c->crops++;
    if (x0 < 0 || y0 < 0 || x0 + w > c->inner.width || y0 + h > c->inner.height) c->outside++;
    if (w * h > c->largest) c->largest = w * h;
    return c->inner.read_crop(c->inner.ctx, x0, y0, w, h, rgb);
}

static void test_memory_bounded(void)
{
    tt_backend *be = th_backend();
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(be, &cfg, 4, 32, 32, 6);
    uint64_t model_bytes = be->mem.current_total;
    int h = 180, w = 150;
    uint8_t *rgb = random_image(w, h, 8);
    tt_memory_image im = {rgb, w, h};
    float *got = malloc((size_t)2 * h * w * sizeof *got);
    tt_predict_options o = tt_predict_options_default();
    o.overlap = 0.25;
    /* a first image lets the convolution autotuner time its candidates (in
     * layer-sized scratch); after that nothing may be allocated per image */
    tt_crop_reader warm = tt_crop_reader_memory(&im);
    TH_OK(tt_predict_image(u, &warm, &o, got));
    tt_memstats_reset_peaks(&be->mem);
    counting_reader counter = {tt_crop_reader_memory(&im), 0, 0, 0};
    tt_crop_reader reader = {&counter, w, h, count_crop, NULL, 3};
    TH_OK(tt_predict_image(u, &reader, &o, got));
    int finite = 1;
    for (size_t i = 0; i < (size_t)2 * h * w; i++) finite &= isfinite(got[i]) != 0;
    CU_ASSERT(finite);
    printf("\n  %dx%d image, %d tiles of 32x32 in batches of 4: device peak %llu bytes, "
           "model %llu bytes", w, h, counter.crops, (unsigned long long)be->mem.peak_total,
           (unsigned long long)model_bytes);
    CU_ASSERT_EQUAL(be->mem.peak_total, model_bytes); /* nothing allocated for the image */
    CU_ASSERT_EQUAL(counter.crops, 8 * 6);
    CU_ASSERT_EQUAL(counter.outside, 0);
    CU_ASSERT_EQUAL(counter.largest, 32 * 32);
    free(got);
    free(rgb);
    tt_model_destroy(u);
}

/* Writes u's weights with the given metadata (NULL values left out). */
static void write_checkpoint(tt_model *u, const char *path, const char *model, const char *classes,
                             const uint8_t *rgb, int height, int width)
{
    float *params = malloc(u->params->trainable_floats * sizeof *params);
    float *state = malloc((u->params->state_floats + 1) * sizeof *state);
    TH_OK(tt_model_get_params(u, params, state));
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    for (int i = 0; i < u->params->count; i++) {
        const tt_param *p = &u->params->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        TH_OK(tt_st_writer_add(w, p->name, TT_ST_F32, p->ndim, shape,
                               (p->trainable ? params : state) + p->offset));
    }
    if (rgb) {
        int64_t shape[3] = {height, width, 3};
        TH_OK(tt_st_writer_add(w, "image", TT_ST_U8, 3, shape, rgb));
    }
    if (model) TH_OK(tt_st_writer_metadata(w, "model", model));
    if (classes) TH_OK(tt_st_writer_metadata(w, "classes", classes));
    TH_OK(tt_st_writer_metadata(w, "mask_kind", "multi-label"));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    free(params);
    free(state);
}

static void test_model_load(void)
{
    tt_backend *be = th_backend();
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(be, &cfg, 1, 16, 16, 21);
    char path[] = "/tmp/tt-predict-ckpt-XXXXXX";
    close(mkstemp(path));
    write_checkpoint(u, path, "{\"in_channels\": 3, \"classes\": 2, \"base_channels\": 4, "
                     "\"depth\": 2, \"norm\": \"group\", \"groups\": 2}", "[\"Fish\", \"Sugar\"]", NULL, 0, 0);
    tt_infer_model m;
    TH_OK(tt_infer_model_load(be, path, 2, 32, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m));
    CU_ASSERT_EQUAL(m.kind, TT_INFER_KIND_MULTI_LABEL);
    CU_ASSERT_STRING_EQUAL(m.class_names[1], "Sugar");
    CU_ASSERT_EQUAL(m.model->height, 32);
    /* same weights: the same prediction of a 16x16 image (one tile each, mean blend) */
    uint8_t *rgb = random_image(16, 16, 2);
    tt_memory_image im = {rgb, 16, 16};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    tt_predict_options o = tt_predict_options_default();
    o.blend = TT_BLEND_MEAN;
    float a[512], b[512];
    TH_OK(tt_predict_image(u, &reader, &o, a));
    tt_model_destroy(u);
    u = NULL;
    u = unet_new(be, &cfg, 1, 16, 16, 99); /* other weights */
    tt_infer_model_free(&m);
    TH_OK(tt_infer_model_load(be, path, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m));
    TH_OK(tt_predict_image(m.model, &reader, &o, b));
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    tt_infer_model_free(&m);

    /* no "model" metadata: a clear error naming the file */
    write_checkpoint(u, path, NULL, NULL, NULL, 0, 0);
    tt_status s = tt_infer_model_load(be, path, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), "\"model\" metadata"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), path));
    if (s) printf("\n  message: %s", tt_status_message(s));
    tt_status_free(s);
    CU_ASSERT_PTR_NULL(m.model);
    /* a model that does not match the tensors: the tensor is named */
    write_checkpoint(u, path, "{\"classes\": 3, \"base_channels\": 4, \"depth\": 2, \"groups\": 2}",
                     NULL, NULL, 0, 0);
    s = tt_infer_model_load(be, path, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    if (s) printf("\n  message: %s", tt_status_message(s));
    tt_status_free(s);
    /* batch norm: the running statistics are loaded, and required */
    tt_unet_config bn = cfg;
    bn.norm = TT_NORM_BATCH;
    tt_model *bu = NULL;
    bu = unet_new(be, &bn, 1, 16, 16, 5);
    float *state = malloc((bu->params->state_floats + 1) * sizeof *state);
    float *loaded = malloc((bu->params->state_floats + 1) * sizeof *loaded);
    for (size_t i = 0; i < bu->params->state_floats; i++) state[i] = 0.25f + 0.001f * (float)i;
    TH_OK(tt_model_set_params(bu, NULL, state));
    const char *bn_json = "{\"in_channels\": 3, \"classes\": 2, \"base_channels\": 4, "
                          "\"depth\": 2, \"norm\": \"batch\", \"groups\": 2}";
    write_checkpoint(bu, path, bn_json, NULL, NULL, 0, 0);
    TH_OK(tt_infer_model_load(be, path, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m));
    if (m.model) {
        TH_OK(tt_model_get_params(m.model, NULL, loaded));
        int stats = 0, differing = 0;
        for (int i = 0; i < bu->params->count; i++) {
            const tt_param *p = &bu->params->params[i];
            if (p->trainable) continue;
            stats++;
            differing += memcmp(state + p->offset, loaded + p->offset, p->count * sizeof *state) != 0;
        }
        printf("\n  batch norm checkpoint: %d running statistics, %d differing", stats, differing);
        CU_ASSERT(stats > 0);
        CU_ASSERT_EQUAL(differing, 0);
    }
    tt_infer_model_free(&m);
    tt_st_writer *w = NULL; /* trainable tensors only */
    float *params = malloc(bu->params->trainable_floats * sizeof *params);
    TH_OK(tt_model_get_params(bu, params, NULL));
    TH_OK(tt_st_writer_create(&w));
    for (int i = 0; i < bu->params->count; i++) {
        const tt_param *p = &bu->params->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        if (p->trainable) TH_OK(tt_st_writer_add(w, p->name, TT_ST_F32, p->ndim, shape, params + p->offset));
    }
    TH_OK(tt_st_writer_metadata(w, "model", bn_json));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    s = tt_infer_model_load(be, path, 1, 16, 16, TT_CONV_ALGO_AUTO, TT_PRECISION_FP32, &m);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(s && strstr(tt_status_message(s), "running_mean") != NULL);
    if (s) printf("\n  message: %s", tt_status_message(s));
    tt_status_free(s);
    free(params), free(state), free(loaded);
    tt_model_destroy(bu);

    tt_model_spec parsed;
    s = tt_model_spec_parse("{\"base_channels\": 4}", &parsed);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    tt_status_free(s);
    unlink(path);
    free(rgb);
    tt_model_destroy(u);
}

/* The whole prediction against tests/infer_torch_check.py: an independent
 * PyTorch (float64) implementation of the plan, the padding and the blend. */
static void test_vs_torch(void)
{
    tt_backend *be = th_backend();
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(be, &cfg, 3, 32, 32, 31);
    static const struct {
        int h, w;
        double overlap;
        tt_blend_kind blend;
        tt_pad_kind pad;
    } cases[] = {{45, 70, 0.5, TT_BLEND_GAUSSIAN, TT_PAD_REFLECT},
                 {20, 77, 0.25, TT_BLEND_MEAN, TT_PAD_ZERO},
                 {3, 2, 0.5, TT_BLEND_GAUSSIAN, TT_PAD_REFLECT}};
    /* the model: python/tiletrain_torch.py, or $TT_TORCH_UNET (tests/torch_model.py) */
    double worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int h = cases[k].h, w = cases[k].w;
        uint8_t *rgb = random_image(w, h, 40 + k);
        char in_path[] = "/tmp/tt-infer-in-XXXXXX", out_path[] = "/tmp/tt-infer-out-XXXXXX";
        close(mkstemp(in_path));
        close(mkstemp(out_path));
        write_checkpoint(u, in_path, NULL, NULL, rgb, h, w);
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 TH_PYTHON " %s/tests/infer_torch_check.py %s %s "
                 "'{\"classes\": %d, \"base_channels\": %d, \"depth\": %d, \"norm\": \"%s\", "
                 "\"groups\": %d, \"tile\": [32, 32], \"overlap\": %g, \"blend\": \"%s\", "
                 "\"pad\": \"%s\"}'", TT_SOURCE_DIR, in_path, out_path,
                 cfg.classes, cfg.base_channels, cfg.depth, tt_norm_kind_name(cfg.norm),
                 cfg.groups, cases[k].overlap,
                 cases[k].blend == TT_BLEND_MEAN ? "mean" : "gaussian",
                 cases[k].pad == TT_PAD_ZERO ? "zero" : "reflect");
        int rc = system(cmd);
        unlink(in_path);
        if (rc != 0) {
            printf("\n  SKIPPED torch comparison: '%s' failed (needs python3-torch and "
                   "python/tiletrain_torch.py or $TT_TORCH_UNET)", cmd);
            unlink(out_path);
            free(rgb);
            break;
        }
        tt_safetensors *f = NULL;
        TH_OK(tt_safetensors_open(out_path, &f));
        unlink(out_path);
        size_t n = (size_t)cfg.classes * h * w;
        float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        int64_t shape[3] = {cfg.classes, h, w};
        TH_OK(tt_safetensors_get_f32(f, "logits", 3, shape, want));
        tt_safetensors_close(f);
        tt_memory_image im = {rgb, w, h};
        tt_crop_reader reader = tt_crop_reader_memory(&im);
        tt_predict_options o = tt_predict_options_default();
        o.overlap = cases[k].overlap;
        o.blend = cases[k].blend;
        o.pad = cases[k].pad;
        TH_OK(tt_predict_image(u, &reader, &o, got));
        double err = th_max_rel_error_f(got, want, n, 1e-2);
        printf("\n  %dx%d overlap %.2f %s %s vs PyTorch: max rel error %.2e (tol 1e-4)", w, h,
               o.overlap, o.blend == TT_BLEND_MEAN ? "mean" : "gaussian",
               o.pad == TT_PAD_ZERO ? "zero" : "reflect", err);
        if (err > worst) worst = err;
        free(want);
        free(got);
        free(rgb);
    }
    CU_ASSERT(worst < 1e-4);
    tt_model_destroy(u);
}

static void test_errors(void)
{
    tt_unet_config cfg = small_config();
    tt_model *u = NULL;
    u = unet_new(th_backend(), &cfg, 1, 16, 16, 3);
    uint8_t rgb[3] = {1, 2, 3};
    tt_memory_image im = {rgb, 1, 1};
    tt_crop_reader reader = tt_crop_reader_memory(&im);
    float out[2];
    tt_predict_options o = tt_predict_options_default();
    o.std[1] = 0;
    tt_status s = tt_predict_image(u, &reader, &o, out);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    o = tt_predict_options_default();
    o.overlap = 1.5;
    s = tt_predict_image(u, &reader, &o, out);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    if (s) printf("\n  message: %s", tt_status_message(s));
    tt_status_free(s);
    tt_model_destroy(u);

    /* softmax, sigmoid, argmax on two classes of three pixels */
    float planes[6] = {0, 2, -1, 0, 1, 3};
    uint8_t index[3];
    tt_predict_argmax(planes, 2, 3, index);
    CU_ASSERT(index[0] == 0 && index[1] == 0 && index[2] == 1); /* tie -> lower class */
    tt_predict_softmax(planes, 2, 3);
    CU_ASSERT_DOUBLE_EQUAL(planes[0], 0.5, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(planes[1], 1 / (1 + exp(-1.0)), 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(planes[2] + planes[5], 1.0, 1e-7);
    float logits[2] = {-100, 3};
    tt_predict_sigmoid(logits, 1, 2);
    CU_ASSERT(logits[0] >= 0 && logits[0] < 1e-40);
    CU_ASSERT_DOUBLE_EQUAL(logits[1], 1 / (1 + exp(-3.0)), 1e-7);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"one tile = the plain forward pass", test_one_tile_is_plain_forward},
        {"sizes not multiples of 2^depth vs reference", test_odd_sizes},
        {"test-time augmentation: flip and d4", test_tta},
        {"rows streamed top to bottom in a band", test_stream_rows},
        {"streamed into TIFF masks and probabilities", test_raster_output},
        {"a constant model blends to its constant", test_constant_model},
        {"device memory bounded by the tile batch", test_memory_bounded},
        {"checkpoint loading", test_model_load},
        {"whole images vs PyTorch", test_vs_torch},
        {"bad options; softmax, sigmoid, argmax", test_errors},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("predict", tests, TH_EVERY);
    th_backend_release();
    return rc;
}
