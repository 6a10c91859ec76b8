/* An image raster and its label raster read together, crop by crop; see
 * raster_pair.h. */
#include "data/raster_pair.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

struct tt_raster_pair {
    tt_raster *image, *mask;
    char *image_path, *mask_path;
    tt_raster_pair_info info;
    int mask_nodata;
    float *planes;        /* scratch: (channels, h, w) of the part inside */
    uint8_t *labels;      /* scratch: (h, w) */
    size_t scratch_pixels;
};

void tt_raster_pair_close(tt_raster_pair *p)
{
    if (!p) return;
    tt_raster_close(p->image);
    tt_raster_close(p->mask);
    free(p->image_path);
    free(p->mask_path);
    free(p->planes);
    free(p->labels);
    free(p);
}

const tt_raster_pair_info *tt_raster_pair_get_info(const tt_raster_pair *p) { return &p->info; }
const char *tt_raster_pair_image_path(const tt_raster_pair *p) { return p->image_path; }
const char *tt_raster_pair_mask_path(const tt_raster_pair *p) { return p->mask_path; }

tt_status tt_raster_bands_parse(const char *text, const char *what, int *bands, int max,
                                int *count)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1 || b > 65535 || n == max || (*end && *end != ','))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s %s: give 1 to %d band numbers "
                                "counted from 1, separated by commas, e.g. %s 4,3,2", what, text,
                                max, what);
        bands[n++] = (int)b;
        p = *end ? end + 1 : end;
    }
    if (!n)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: give band numbers counted from 1, "
                            "e.g. %s 4,3,2", what, what);
    *count = n;
    return NULL;
}

static int same_doubles(const double *a, size_t na, const double *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (fabs(a[i] - b[i]) > 1e-9 * (fabs(a[i]) + fabs(b[i]) + 1)) return 0;
    return 1;
}

static int has_grid(const tt_georef *g)
{
    return g->pixel_scale_count || g->tiepoint_count || g->transformation_count;
}

/* The mask lies on the image's grid: same size, and the same georeference
 * where both have one. */
static tt_status check_grid(tt_raster_pair *p)
{
    tt_raster_info im = tt_raster_get_info(p->image), ms = tt_raster_get_info(p->mask);
    const char *todo = "cut or resample the mask to the image's grid, e.g. gdalwarp -te and -ts "
                       "of the image, -r near";
    if (im.width != ms.width || im.height != ms.height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the mask is %dx%d pixels and its image "
                            "%s is %dx%d; %s", p->mask_path, ms.width, ms.height, p->image_path,
                            im.width, im.height, todo);
    tt_georef gi, gm;
    TT_TRY(tt_raster_georef(p->image, &gi));
    tt_status status = tt_raster_georef(p->mask, &gm);
    if (status) {
        tt_georef_free(&gi);
        return status;
    }
    int same = !has_grid(&gi) || !has_grid(&gm) ||
               (same_doubles(gi.pixel_scale, gi.pixel_scale_count, gm.pixel_scale,
                             gm.pixel_scale_count) &&
                same_doubles(gi.tiepoints, gi.tiepoint_count, gm.tiepoints, gm.tiepoint_count) &&
                same_doubles(gi.transformation, gi.transformation_count, gm.transformation,
                             gm.transformation_count));
    tt_georef_free(&gi);
    tt_georef_free(&gm);
    if (!same)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the mask's georeference (pixel size or "
                            "origin) differs from its image %s's; %s", p->mask_path,
                            p->image_path, todo);
    return NULL;
}

/* The chosen bands: checked against the image, or all of them. */
static tt_status choose_bands(tt_raster_pair *p, const tt_raster_pair_options *o)
{
    tt_raster_pair_info *in = &p->info;
    int count = o && o->bands ? o->band_count : in->raster_bands;
    if (count < 1 || count > TT_RASTER_MAX_BANDS)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d bands chosen (1 to %d are read); "
                            "pick some with --bands, e.g. --bands 4,3,2", p->image_path, count,
                            TT_RASTER_MAX_BANDS);
    for (int k = 0; k < count; k++) {
        int b = o && o->bands ? o->bands[k] : k + 1;
        if (b < 1 || b > in->raster_bands)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: band %d asked for, and it has %d "
                                "band%s (1 to %d); change --bands", p->image_path, b,
                                in->raster_bands, in->raster_bands == 1 ? "" : "s",
                                in->raster_bands);
        in->bands[k] = b;
    }
    in->channels = count;
    return NULL;
}

tt_status tt_raster_pair_open(const char *image_path, const char *mask_path,
                              const tt_raster_pair_options *options, tt_raster_pair **out)
{
    *out = NULL;
    tt_raster_pair *p = tt_calloc(1, sizeof *p);
    if (!p || !(p->image_path = tt_strdup(image_path)) || !(p->mask_path = tt_strdup(mask_path))) {
        tt_raster_pair_close(p);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", image_path);
    }
    p->mask_nodata = options ? options->mask_nodata : -1;
    tt_status status = NULL;
    TT_CHECK(tt_raster_open(image_path, &p->image));
    TT_CHECK(tt_raster_open(mask_path, &p->mask));
    tt_raster_info im = tt_raster_get_info(p->image), ms = tt_raster_get_info(p->mask);
    if (ms.bands != 1 || ms.sample != TT_SAMPLE_U8) {
        status = tt_error_new(TT_ERR_UNSUPPORTED, "%s: a mask is one band of 8-bit class indices "
                              "(255 = ignore), and this one has %d band%s of %s samples; write "
                              "it as one, e.g. gdal_translate -b 1 -ot Byte IN.tif OUT.tif",
                              mask_path, ms.bands, ms.bands == 1 ? "" : "s",
                              tt_raster_sample_name(ms.sample));
        goto cleanup;
    }
    tt_raster_pair_info *in = &p->info;
    in->width = im.width, in->height = im.height, in->raster_bands = im.bands;
    in->sample = im.sample, in->tiled = im.tiled, in->bigtiff = im.bigtiff;
    in->block_w = im.block_w, in->block_h = im.block_h;
    in->has_nodata = tt_raster_nodata(p->image, &in->nodata);
    TT_CHECK(choose_bands(p, options));
    TT_CHECK(check_grid(p));
cleanup:
    if (status) {
        tt_raster_pair_close(p);
        return status;
    }
    *out = p;
    return NULL;
}

static tt_status ensure_scratch(tt_raster_pair *p, size_t pixels)
{
    if (pixels <= p->scratch_pixels) return NULL;
    float *planes = tt_realloc(p->planes, pixels * (size_t)p->info.channels * sizeof *planes);
    if (planes) p->planes = planes;
    uint8_t *labels = tt_realloc(p->labels, pixels);
    if (labels) p->labels = labels;
    if (!planes || !labels)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for a crop of %zu "
                            "pixels", p->image_path, pixels);
    p->scratch_pixels = pixels;
    return NULL;
}

tt_status tt_raster_pair_has_foreground(tt_raster_pair *p, int x0, int y0, int w, int h,
                                        int *found)
{
    const tt_raster_pair_info *in = &p->info;
    *found = 0;
    int ix0 = x0 > 0 ? x0 : 0, iy0 = y0 > 0 ? y0 : 0;
    int ix1 = x0 + w < in->width ? x0 + w : in->width;
    int iy1 = y0 + h < in->height ? y0 + h : in->height;
    if (ix1 <= ix0 || iy1 <= iy0) return NULL;
    size_t inside = (size_t)(ix1 - ix0) * (iy1 - iy0);
    TT_TRY(ensure_scratch(p, inside));
    tt_status st = tt_raster_read_samples(p->mask, ix0, iy0, ix1 - ix0, iy1 - iy0, p->labels);
    tt_raster_release(p->mask);
    TT_TRY(st);
    for (size_t i = 0; i < inside && !*found; i++)
        *found = p->labels[i] != 0 && p->labels[i] != 255 && p->labels[i] != p->mask_nodata;
    return NULL;
}

static int is_nodata(float v, double nodata)
{
    return isnan(nodata) ? isnan(v) : v == (float)nodata;
}

tt_status tt_raster_pair_read(tt_raster_pair *p, int x0, int y0, int w, int h, const float *mean,
                              const float *std, float *image, uint8_t *mask, int64_t *ignored,
                              int64_t *nodata)
{
    const tt_raster_pair_info *in = &p->info;
    int channels = in->channels;
    size_t plane = (size_t)w * h;
    memset(image, 0, plane * (size_t)channels * sizeof *image);
    memset(mask, 255, plane);
    int64_t nodata_count = 0;
    int ix0 = x0 > 0 ? x0 : 0, iy0 = y0 > 0 ? y0 : 0;
    int ix1 = x0 + w < in->width ? x0 + w : in->width;
    int iy1 = y0 + h < in->height ? y0 + h : in->height;
    if (ix1 > ix0 && iy1 > iy0) {
        int iw = ix1 - ix0, ih = iy1 - iy0;
        size_t inside = (size_t)iw * ih;
        TT_TRY(ensure_scratch(p, inside));
        tt_status st = tt_raster_read_bands(p->image, ix0, iy0, iw, ih, in->bands, channels,
                                            p->planes);
        if (!st) st = tt_raster_read_samples(p->mask, ix0, iy0, iw, ih, p->labels);
        /* crops jump about the scene: hold no rows of blocks between them */
        tt_raster_release(p->image);
        tt_raster_release(p->mask);
        TT_TRY(st);
        for (int y = 0; y < ih; y++)
            for (int x = 0; x < iw; x++) {
                size_t src = (size_t)y * iw + x;
                size_t dst = (size_t)(iy0 - y0 + y) * w + (size_t)(ix0 - x0 + x);
                uint8_t label = p->labels[src];
                int off = 0;
                for (int c = 0; in->has_nodata && !off && c < channels; c++)
                    off = is_nodata(p->planes[(size_t)c * inside + src], in->nodata);
                if (off) nodata_count++, label = 255;
                if (p->mask_nodata >= 0 && label == p->mask_nodata) label = 255;
                mask[dst] = label;
                if (label == 255) continue;
                for (int c = 0; c < channels; c++) {
                    float v = p->planes[(size_t)c * inside + src];
                    image[(size_t)c * plane + dst] = mean && std ? (v - mean[c]) / std[c] : v;
                }
            }
    }
    if (ignored) {
        int64_t n = 0;
        for (size_t i = 0; i < plane; i++) n += mask[i] == 255;
        *ignored = n;
    }
    if (nodata) *nodata = nodata_count;
    return NULL;
}
