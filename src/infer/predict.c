/*
 * Sliding-window prediction: read, pad, normalise and batch tiles on the
 * host, run the model in eval mode, blend the logits into a band of rows
 * handed on as they are finished.  See predict.h.
 */
#include "infer/predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

static tt_status memory_read_crop(void *ctx, int x0, int y0, int w, int h, uint8_t *rgb)
{
    const tt_memory_image *m = ctx;
    if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0 + w > m->width || y0 + h > m->height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "crop %dx%d at (%d, %d) leaves the %dx%d "
                            "image", w, h, x0, y0, m->width, m->height);
    for (int y = 0; y < h; y++)
        memcpy(rgb + (size_t)y * w * 3, m->rgb + ((size_t)(y0 + y) * m->width + x0) * 3,
               (size_t)w * 3);
    return NULL;
}

tt_crop_reader tt_crop_reader_memory(const tt_memory_image *image)
{
    return (tt_crop_reader){(void *)image, image->width, image->height, memory_read_crop, NULL, 3};
}

tt_predict_options tt_predict_options_default(void)
{
    tt_predict_options o;
    memset(&o, 0, sizeof o);
    o.overlap = 0.5;
    o.blend = TT_BLEND_GAUSSIAN;
    o.pad = TT_PAD_REFLECT;
    for (int c = 0; c < 3; c++) o.std[c] = 1.0f;
    return o;
}

/* The reader's channels: 3 for RGB. */
static int channels_of(const tt_crop_reader *r) { return r->read_planes ? r->channels : 3; }

/* Reads the crop under tile (y0, x0) and writes the padded, normalised tile
 * into input (channels, th, tw).  crop holds th * tw * 3 bytes, or for a
 * planes reader th * tw * channels floats. */
static tt_status load_tile(const tt_crop_reader *r, const tt_predict_options *o, int y0, int x0,
                           int th, int tw, void *crop, float *input)
{
    int cy0 = y0 < 0 ? 0 : y0, cx0 = x0 < 0 ? 0 : x0;
    int cy1 = y0 + th > r->height ? r->height : y0 + th;
    int cx1 = x0 + tw > r->width ? r->width : x0 + tw;
    int ch = cy1 - cy0, cw = cx1 - cx0;
    if (r->read_planes) TT_TRY(r->read_planes(r->ctx, cx0, cy0, cw, ch, crop));
    else TT_TRY(r->read_crop(r->ctx, cx0, cy0, cw, ch, crop));
    size_t plane = (size_t)th * tw;
    for (int i = 0; i < th; i++) {
        int y = y0 + i, inside_y = y >= 0 && y < r->height;
        if (!inside_y && o->pad == TT_PAD_REFLECT) y = tt_pad_reflect_index(y, r->height);
        for (int j = 0; j < tw; j++) {
            int x = x0 + j, inside = inside_y && x >= 0 && x < r->width;
            if (!inside && o->pad == TT_PAD_REFLECT) {
                if (x < 0 || x >= r->width) x = tt_pad_reflect_index(x, r->width);
                inside = 1;
            }
            size_t at = (size_t)(y - cy0) * cw + (size_t)(x - cx0);
            if (r->read_planes) {
                const float *planes = crop;
                for (int c = 0; c < r->channels; c++)
                    input[c * plane + (size_t)i * tw + j] =
                        inside ? planes[(size_t)c * ch * cw + at] : 0.0f;
                continue;
            }
            const uint8_t *px = inside ? (const uint8_t *)crop + at * 3 : NULL;
            for (int c = 0; c < 3; c++)
                input[c * plane + (size_t)i * tw + j] =
                    ((px ? (float)px[c] : 0.0f) / 255.0f - o->mean[c]) / o->std[c];
        }
    }
    return NULL;
}

/* Adds weight * logits of one tile (classes, th, tw) into the band of rows
 * [band0, band0 + cap) of the accumulator (classes, cap, width). */
static void accumulate(const tt_tile_plan *p, int classes, int y0, int x0, const float *tile,
                       float *acc, int band0, int cap)
{
    int h = p->y.length, w = p->x.length, th = p->y.tile, tw = p->x.tile;
    int i0 = y0 < 0 ? -y0 : 0, i1 = y0 + th > h ? h - y0 : th;
    int j0 = x0 < 0 ? -x0 : 0, j1 = x0 + tw > w ? w - x0 : tw;
    for (int c = 0; c < classes; c++) {
        const float *src = tile + (size_t)c * th * tw;
        float *dst = acc + (size_t)c * cap * w;
        for (int i = i0; i < i1; i++) {
            float wy = p->y.weight[i];
            const float *s = src + (size_t)i * tw;
            float *d = dst + (size_t)(y0 + i - band0) * w + x0;
            for (int j = j0; j < j1; j++) d[j] += wy * p->x.weight[j] * s[j];
        }
    }
}

int tt_tta_views(tt_tta_kind kind) { return kind == TT_TTA_D4 ? 8 : kind == TT_TTA_FLIP ? 4 : 1; }

void tt_tta_dest(tt_tta_kind kind, int view, int w, int h, int x, int y, int *dx, int *dy)
{
    int hflip = kind == TT_TTA_D4 ? view >> 2 : view & 1;
    int vflip = kind == TT_TTA_FLIP ? view >> 1 & 1 : 0;
    int turns = kind == TT_TTA_D4 ? view & 3 : 0;
    if (hflip) x = w - 1 - x;
    if (vflip) y = h - 1 - y;
    for (int t = 0; t < turns; t++) { /* one counter-clockwise turn: (x, y) -> (y, n - 1 - x) */
        int nx = y, ny = w - 1 - x;
        x = nx, y = ny;
    }
    *dx = x, *dy = y;
}

/* Planes (count, h, w) through a view: forward, out[dest(p)] = in[p]; or
 * back, added: out[p] += scale * in[dest(p)]. */
static void move_planes(tt_tta_kind kind, int view, int w, int h, int count, const float *in,
                        float *out, int back, float scale)
{
    size_t plane = (size_t)w * h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int dx, dy;
            tt_tta_dest(kind, view, w, h, x, y, &dx, &dy);
            size_t p = (size_t)y * w + x, d = (size_t)dy * w + dx;
            for (int c = 0; c < count; c++) {
                if (back) out[c * plane + p] += scale * in[c * plane + d];
                else out[c * plane + d] = in[c * plane + p];
            }
        }
}

/* The logits of n tiles (out) as the mean of every view's, each view's
 * input moved forward and its logits moved back. */
static tt_status forward_views(tt_model *model, tt_tta_kind kind, int n, const float *input,
                               float *view_in, float *view_out, float *out)
{
    int th = model->height, tw = model->width, classes = model->spec.classes;
    int channels = model->spec.in_channels;
    size_t tile_px = (size_t)th * tw, in_size = (size_t)channels * tile_px;
    size_t out_size = classes * tile_px;
    int views = tt_tta_views(kind);
    memset(out, 0, (size_t)n * out_size * sizeof *out);
    for (int v = 0; v < views; v++) {
        for (int k = 0; k < n; k++)
            move_planes(kind, v, tw, th, channels, input + k * in_size, view_in + k * in_size, 0, 1);
        TT_TRY(tt_write(model->be, model->input, view_in, (size_t)n * in_size * sizeof *view_in));
        TT_TRY(tt_model_forward(model, n, 0));
        TT_TRY(tt_read(model->be, view_out, model->logits, (size_t)n * out_size * sizeof *view_out));
        for (int k = 0; k < n; k++)
            move_planes(kind, v, tw, th, classes, view_out + k * out_size, out + k * out_size, 1,
                        1.0f / (float)views);
    }
    return NULL;
}

/* The first image row a tile row covers, and the row after its last. */
static int row_top(const tt_tile_plan *p, int r) { return p->y.origin[r] < 0 ? 0 : p->y.origin[r]; }
static int row_end(const tt_tile_plan *p, int r)
{
    int end = p->y.origin[r] + p->y.tile;
    return end > p->y.length ? p->y.length : end;
}

/* The tiles of the batch starting at tile `first`: `batch`, but where a
 * row of tiles holds that many, none past the row's end, so that the rows
 * in flight are one row of tiles (narrower images batch across rows). */
static int batch_from(const tt_tile_plan *p, int batch, int first)
{
    int cols = p->x.count, left = tt_tile_plan_count(p) - first;
    int n = left < batch ? left : batch;
    if (cols >= batch && n > cols - first % cols) n = cols - first % cols;
    return n;
}

/* The rows a batch of tiles [first, first + n) keeps unfinished at most:
 * from the top of its first tile row to the end of its last. */
static int band_rows(const tt_tile_plan *p, int batch)
{
    int cols = p->x.count, total = tt_tile_plan_count(p), most = 1;
    for (int first = 0, n; first < total; first += n) {
        n = batch_from(p, batch, first);
        int rows = row_end(p, (first + n - 1) / cols) - row_top(p, first / cols);
        if (rows > most) most = rows;
    }
    return most;
}

/* Divides rows [band0, end) of the band by their summed weight, hands them
 * to the sink and moves the band's later rows up to its top. */
static tt_status emit_rows(float *acc, int classes, int cap, int w, int band0, int end,
                           const double *sum_y, const double *sum_x, tt_predict_rows_fn sink,
                           void *ctx)
{
    int rows = end - band0;
    for (int c = 0; c < classes; c++)
        for (int y = 0; y < rows; y++) {
            float *row = acc + ((size_t)c * cap + y) * w;
            for (int x = 0; x < w; x++) row[x] = (float)(row[x] / (sum_y[band0 + y] * sum_x[x]));
        }
    TT_TRY(sink(ctx, band0, rows, acc, (size_t)cap * w));
    for (int c = 0; c < classes; c++) {
        float *plane = acc + (size_t)c * cap * w;
        memmove(plane, plane + (size_t)rows * w, (size_t)(cap - rows) * w * sizeof *plane);
        memset(plane + (size_t)(cap - rows) * w, 0, (size_t)rows * w * sizeof *plane);
    }
    return NULL;
}

tt_status tt_predict_stream(tt_model *model, const tt_crop_reader *reader,
                            const tt_predict_options *options, tt_predict_rows_fn sink, void *ctx)
{
    const tt_model_spec *cfg = &model->spec;
    int th = model->height, tw = model->width, classes = cfg->classes;
    int h = reader->height, w = reader->width;
    int channels = channels_of(reader);
    if (cfg->in_channels != channels)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "predict: the model takes %d input channels; "
                            "the image gives %d (%s)", cfg->in_channels, channels,
                            reader->read_planes ? "raster bands" : "RGB");
    for (int c = 0; c < 3; c++)
        if (!(options->std[c] > 0) || !isfinite(options->mean[c]))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "predict: channel %d has mean %g std %g; "
                                "std must be > 0", c, options->mean[c], options->std[c]);
    int batch = options->batch > 0 && options->batch < model->capacity ? options->batch
                                                                        : model->capacity;
    tt_status status = NULL;
    tt_tile_plan plan;
    void *crop = NULL;
    float *input = NULL, *out = NULL, *acc = NULL;
    double *sum_y = NULL, *sum_x = NULL;
    int *origin = NULL;
    float *view_in = NULL, *view_out = NULL;
    int views = tt_tta_views(options->tta);
    if (options->tta == TT_TTA_D4 && th != tw)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--tta d4 turns tiles a quarter: give a "
                            "square tile (this model's is %dx%d), or --tta flip", tw, th);
    TT_CHECK(tt_tile_plan_make(h, w, th, tw, options->overlap, options->blend, &plan));
    size_t tile_px = (size_t)th * tw;
    int cap = band_rows(&plan, batch);
    crop = tt_malloc(tile_px * (reader->read_planes ? (size_t)channels * sizeof(float) : 3));
    input = tt_malloc((size_t)batch * channels * tile_px * sizeof *input);
    out = tt_malloc((size_t)batch * classes * tile_px * sizeof *out);
    acc = tt_calloc((size_t)classes * cap * w, sizeof *acc);
    sum_y = tt_malloc((size_t)h * sizeof *sum_y);
    sum_x = tt_malloc((size_t)w * sizeof *sum_x);
    origin = tt_malloc((size_t)batch * 2 * sizeof *origin);
    if (views > 1) {
        view_in = tt_malloc((size_t)batch * channels * tile_px * sizeof *view_in);
        view_out = tt_malloc((size_t)batch * classes * tile_px * sizeof *view_out);
    }
    if (!crop || !input || !out || !acc || !sum_y || !sum_x || !origin ||
        (views > 1 && (!view_in || !view_out))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "predict: out of host memory for a batch of "
                              "%d tiles of %dx%d and %d rows of %d pixels", batch, th, tw, cap, w);
        goto cleanup;
    }
    tt_tile_axis_sums(&plan.y, sum_y);
    tt_tile_axis_sums(&plan.x, sum_x);
    int total = tt_tile_plan_count(&plan), cols = plan.x.count, band0 = 0;
    for (int first = 0, n; first < total; first += n) {
        n = batch_from(&plan, batch, first);
        for (int k = 0; k < n; k++) {
            tt_tile_plan_origin(&plan, first + k, &origin[2 * k], &origin[2 * k + 1]);
            TT_CHECK(load_tile(reader, options, origin[2 * k], origin[2 * k + 1], th, tw, crop,
                               input + (size_t)k * channels * tile_px));
        }
        if (views == 1) {
            TT_CHECK(tt_write(model->be, model->input, input,
                              (size_t)n * channels * tile_px * sizeof *input));
            TT_CHECK(tt_model_forward(model, n, 0));
            TT_CHECK(tt_read(model->be, out, model->logits, (size_t)n * classes * tile_px * sizeof *out));
        } else {
            TT_CHECK(forward_views(model, options->tta, n, input, view_in, view_out, out));
        }
        for (int k = 0; k < n; k++)
            accumulate(&plan, classes, origin[2 * k], origin[2 * k + 1],
                       out + (size_t)k * classes * tile_px, acc, band0, cap);
        /* rows above the next unfinished tile row take no more tiles */
        int done = (first + n) / cols;
        int end = done == plan.y.count ? h : row_top(&plan, done);
        if (end > band0) {
            TT_CHECK(emit_rows(acc, classes, cap, w, band0, end, sum_y, sum_x, sink, ctx));
            band0 = end;
        }
    }
cleanup:
    if (status) status = tt_error_prefix(status, "predicting a %dx%d image", w, h);
    tt_tile_plan_free(&plan);
    free(crop);
    free(input);
    free(out);
    free(acc);
    free(sum_y);
    free(sum_x);
    free(origin);
    free(view_in);
    free(view_out);
    return status;
}

/* The sink of tt_predict_image: rows copied into the whole image's planes. */
typedef struct whole_image {
    float *logits;
    int classes, height, width;
} whole_image;

static tt_status copy_rows(void *ctx, int y0, int rows, const float *planes, size_t stride)
{
    whole_image *img = ctx;
    size_t plane = (size_t)img->height * img->width, n = (size_t)rows * img->width;
    for (int c = 0; c < img->classes; c++)
        memcpy(img->logits + c * plane + (size_t)y0 * img->width, planes + c * stride,
               n * sizeof *planes);
    return NULL;
}

tt_status tt_predict_image(tt_model *model, const tt_crop_reader *reader,
                           const tt_predict_options *options, float *logits)
{
    whole_image img = {logits, model->spec.classes, reader->height, reader->width};
    return tt_predict_stream(model, reader, options, copy_rows, &img);
}

void tt_predict_pixel_probs(const float *logits, size_t stride, int classes, int multi_label,
                            float *p)
{
    if (multi_label) {
        for (int c = 0; c < classes; c++) {
            float v = logits[c * stride];
            p[c] = v >= 0 ? 1.0f / (1.0f + expf(-v)) : expf(v) / (1.0f + expf(v));
        }
        return;
    }
    float top = logits[0];
    for (int c = 1; c < classes; c++)
        if (logits[c * stride] > top) top = logits[c * stride];
    double total = 0;
    for (int c = 0; c < classes; c++) total += p[c] = expf(logits[c * stride] - top);
    for (int c = 0; c < classes; c++) p[c] = (float)(p[c] / total);
}

int tt_predict_pixel_argmax(const float *logits, size_t stride, int classes)
{
    int best = 0;
    for (int c = 1; c < classes; c++)
        if (logits[c * stride] > logits[best * stride]) best = c;
    return best;
}

/* In place over (classes, pixels) planes, pixel by pixel. */
static void planes_to_probs(float *planes, int classes, size_t pixels, int multi_label)
{
    TT_ASSERT(classes >= 1 && classes <= 256);
    float p[256];
    for (size_t i = 0; i < pixels; i++) {
        tt_predict_pixel_probs(planes + i, pixels, classes, multi_label, p);
        for (int c = 0; c < classes; c++) planes[c * pixels + i] = p[c];
    }
}

void tt_predict_softmax(float *planes, int classes, size_t pixels)
{
    planes_to_probs(planes, classes, pixels, 0);
}

void tt_predict_sigmoid(float *planes, int classes, size_t pixels)
{
    planes_to_probs(planes, classes, pixels, 1);
}

void tt_predict_argmax(const float *planes, int classes, size_t pixels, uint8_t *index)
{
    TT_ASSERT(classes >= 1 && classes <= 256);
    for (size_t i = 0; i < pixels; i++)
        index[i] = (uint8_t)tt_predict_pixel_argmax(planes + i, pixels, classes);
}
