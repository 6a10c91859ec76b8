/* Streamed prediction into raster files; see predict_raster.h. */
#include "infer/predict_raster.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "infer/components_stream.h"

typedef struct raster_sink {
    const tt_raster_output *out;
    int classes, width;
    tt_raster_writer *mask, *prob;
    tt_cc_stream *components; /* min_size: pass 1 */
    uint8_t *mask_rows;
    uint8_t *nodata;   /* (held_rows, width): out->nodata_rows' flags */
    float *prob_rows;
    int held_rows; /* rows the two buffers hold */
} raster_sink;

/* The input's nodata pixels of the rows: 255 (class index) or 0 in every
 * band (multi-label) in the mask rows. */
static tt_status mark_nodata(raster_sink *s, int y0, int rows)
{
    const tt_raster_output *o = s->out;
    size_t pixels = (size_t)rows * s->width;
    uint8_t *flags = tt_realloc(s->nodata, pixels);
    if (!flags) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", o->mask_path);
    s->nodata = flags;
    TT_TRY(o->nodata_rows(o->nodata_ctx, y0, rows, flags));
    int bands = o->multi_label ? s->classes : 1;
    for (size_t i = 0; i < pixels; i++)
        if (flags[i]) memset(s->mask_rows + i * bands, o->multi_label ? 0 : 255, (size_t)bands);
    return NULL;
}

static tt_status write_rows(void *ctx, int y0, int rows, const float *planes, size_t stride)
{
    raster_sink *s = ctx;
    const tt_raster_output *o = s->out;
    int classes = s->classes, w = s->width, bands = o->multi_label ? classes : 1;
    if (rows > s->held_rows) {
        uint8_t *m = tt_realloc(s->mask_rows, (size_t)rows * w * bands);
        if (m) s->mask_rows = m;
        float *p = s->prob ? tt_realloc(s->prob_rows, (size_t)rows * w * classes * sizeof *p) : NULL;
        if (p) s->prob_rows = p;
        if (!m || (s->prob && !p))
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d rows",
                                o->mask_path, rows);
        s->held_rows = rows;
    }
    float pixel[256]; /* a model has at most 254 classes (unet_config.c) */
    for (size_t i = 0; i < (size_t)rows * w; i++) {
        const float *logit = planes + i; /* row i / w, column i % w of every class plane */
        float *p = s->prob ? s->prob_rows + i * classes : pixel;
        if (s->prob || o->multi_label)
            tt_predict_pixel_probs(logit, stride, classes, o->multi_label, p);
        if (o->multi_label) {
            for (int c = 0; c < classes; c++) {
                float t = o->class_threshold ? o->class_threshold[c] : o->threshold;
                s->mask_rows[i * classes + c] = p[c] > t ? 255 : 0;
            }
        } else {
            s->mask_rows[i] = (uint8_t)tt_predict_pixel_argmax(logit, stride, classes);
        }
    }
    if (o->nodata_rows) TT_TRY(mark_nodata(s, y0, rows));
    TT_TRY(tt_raster_writer_rows(s->mask, rows, s->mask_rows));
    if (s->components) TT_TRY(tt_cc_stream_add(s->components, rows, s->mask_rows));
    if (s->prob) TT_TRY(tt_raster_writer_rows(s->prob, rows, s->prob_rows));
    return NULL;
}

/* Opens the mask or probabilities writer: a COG when asked, except the
 * first pass of a mask whose components are removed after. */
static tt_status open_writer(const tt_raster_output *out, const char *path, int cog, int width,
                             int height, int bands, tt_raster_sample sample,
                             tt_raster_writer **w)
{
    if (!cog)
        return tt_raster_writer_open(path, width, height, bands, sample, out->georef, w);
    /* a class-index mask's nodata (255) is no class to vote for */
    int ignore = sample == TT_SAMPLE_U8 && !out->multi_label ? 255 : -1;
    return tt_raster_writer_open_cog(path, width, height, bands, sample, out->georef, ignore, w);
}

/* Whether any class has a minimum to remove components under. */
static int removes(const tt_raster_output *out, int classes)
{
    for (int c = out->multi_label ? 0 : 1; out->min_size && c < classes; c++)
        if (out->min_size[c] > 1) return 1;
    return 0;
}

/* Pass 2: the first pass's mask read back a row of tiles at a time, its
 * small components cleared, written to the mask's own path. */
static tt_status filter_pass(tt_cc_stream *components, const char *first, int width, int height,
                             int bands, const tt_raster_output *out)
{
    tt_status status = NULL;
    tt_raster *in = NULL;
    tt_raster_writer *mask = NULL;
    enum { ROWS = 256 };
    uint8_t *rows = tt_malloc((size_t)ROWS * width * bands);
    if (!rows)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d rows",
                            out->mask_path, ROWS);
    TT_CHECK(tt_raster_open(first, &in));
    TT_CHECK(open_writer(out, out->mask_path, out->cog, width, height, bands, TT_SAMPLE_U8,
                         &mask));
    for (int y = 0; y < height; y += ROWS) {
        int n = height - y < ROWS ? height - y : ROWS;
        TT_CHECK(tt_raster_read_samples(in, 0, y, width, n, rows));
        TT_CHECK(tt_cc_stream_filter(components, n, rows, out->min_size));
        TT_CHECK(tt_raster_writer_rows(mask, n, rows));
    }
    tt_raster_writer *done = mask;
    mask = NULL;
    status = tt_raster_writer_close(done);
cleanup:
    tt_raster_writer_abort(mask);
    tt_raster_close(in);
    free(rows);
    return status;
}

tt_status tt_predict_raster(tt_model *model, const tt_crop_reader *reader,
                            const tt_predict_options *options, const tt_raster_output *out)
{
    int classes = model->spec.classes, w = reader->width, h = reader->height;
    int bands = out->multi_label ? classes : 1;
    raster_sink s = {out, classes, w, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    tt_status status = NULL;
    char *first = NULL; /* the mask before its small components are removed */
    const char *mask_path = out->mask_path;
    if (removes(out, classes)) {
        size_t len = strlen(out->mask_path);
        if (!(first = tt_malloc(len + 7)))
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", out->mask_path);
        memcpy(first, out->mask_path, len);
        memcpy(first + len, ".pass1", 7);
        mask_path = first;
        TT_CHECK(tt_cc_stream_new(w, bands, !out->multi_label, &s.components));
    }
    TT_CHECK(open_writer(out, mask_path, out->cog && !first, w, h, bands, TT_SAMPLE_U8, &s.mask));
    if (out->prob_path)
        TT_CHECK(open_writer(out, out->prob_path, out->cog, w, h, classes, TT_SAMPLE_F32,
                             &s.prob));
    TT_CHECK(tt_predict_stream(model, reader, options, write_rows, &s));
    tt_raster_writer *mask = s.mask, *prob = s.prob;
    s.mask = s.prob = NULL;
    status = tt_raster_writer_close(mask);
    if (!status && first) status = filter_pass(s.components, first, w, h, bands, out);
    if (prob) {
        if (status) tt_raster_writer_abort(prob);
        else status = tt_raster_writer_close(prob);
    }
cleanup:
    tt_raster_writer_abort(s.mask);
    tt_raster_writer_abort(s.prob);
    tt_cc_stream_free(s.components);
    if (first) unlink(first);
    free(first);
    free(s.mask_rows);
    free(s.nodata);
    free(s.prob_rows);
    return status;
}
