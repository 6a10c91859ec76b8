/* Reading rasters crop by crop, and their GeoTIFF tags; see raster.h. */
#include "data/raster.h"

#include <stdlib.h>
#include <string.h>

#include <tiffio.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "data/image_probe.h"
#include "data/raster_tags.h"

/* One row of blocks, decoded: block_h rows of the raster's whole width
 * (rounded up to whole tiles), `have` saying which blocks are in. */
typedef struct block_row {
    int row;          /* block row index; -1: empty */
    uint8_t *pixels;  /* block_h x stride bytes */
    uint8_t *have;    /* (blocks across) */
} block_row;

struct tt_raster {
    char *path;
    TIFF *tif;
    tt_tiff_errors errors;
    tt_raster_info info;
    int sample_bytes;    /* 1, 2 or 4 */
    int across;          /* blocks in a row of blocks */
    size_t stride;       /* bytes of one decoded row */
    uint8_t *block;      /* one tile, for tiled rasters */
    block_row *rows;
    int row_count;
    int grey;            /* 1 or 2 bands: grey (R = G = B) */
    int bands[3];        /* tt_raster_select_bands's, 0-based; bands[0] < 0: the default */
    int white_is_zero;   /* PHOTOMETRIC_MINISWHITE */
};

static tt_status refuse(const char *path, const char *what, const char *todo)
{
    return tt_error_new(TT_ERR_UNSUPPORTED, "%s: %s; %s", path, what, todo);
}

const char *tt_raster_sample_name(tt_raster_sample sample)
{
    return sample == TT_SAMPLE_U16 ? "uint16" : sample == TT_SAMPLE_F32 ? "float32" : "uint8";
}

int tt_raster_sample_bytes(tt_raster_sample sample)
{
    return sample == TT_SAMPLE_U16 ? 2 : sample == TT_SAMPLE_F32 ? 4 : 1;
}

/* What cannot be read as it is, by name, with what to do. */
static tt_status check_layout(tt_raster *r)
{
    uint16_t bits = 8, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
    uint16_t photometric = PHOTOMETRIC_MINISBLACK, compression = COMPRESSION_NONE, spp = 1;
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetField(r->tif, TIFFTAG_PHOTOMETRIC, &photometric);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_COMPRESSION, &compression);
    const char *convert = "convert it to 8-bit RGB, e.g. gdal_translate -ot Byte -scale "
                          "-b 1 -b 2 -b 3 -co TILED=YES IN.tif OUT.tif";
    if (format == SAMPLEFORMAT_UINT && bits == 8) r->info.sample = TT_SAMPLE_U8;
    else if (format == SAMPLEFORMAT_UINT && bits == 16) r->info.sample = TT_SAMPLE_U16;
    else if (format == SAMPLEFORMAT_IEEEFP && bits == 32) r->info.sample = TT_SAMPLE_F32;
    else {
        char what[128];
        snprintf(what, sizeof what, "%u-bit %s samples are not read (8- and 16-bit unsigned and "
                 "32-bit float are)", bits,
                 format == SAMPLEFORMAT_IEEEFP ? "float" : format == SAMPLEFORMAT_INT ? "signed"
                 : format == SAMPLEFORMAT_UINT ? "unsigned" : "complex or untyped");
        return refuse(r->path, what, "convert it, e.g. gdal_translate -ot UInt16 (or -ot Float32) "
                      "-co TILED=YES IN.tif OUT.tif");
    }
    r->sample_bytes = tt_raster_sample_bytes(r->info.sample);
    if (planar != PLANARCONFIG_CONTIG && spp > 1)
        return refuse(r->path, "its bands are in separate planes (PLANARCONFIG_SEPARATE)",
                      "rewrite it interleaved, e.g. gdal_translate -co INTERLEAVE=PIXEL "
                      "-co TILED=YES IN.tif OUT.tif");
    if (photometric == PHOTOMETRIC_YCBCR) {
        if (compression != COMPRESSION_JPEG || bits != 8)
            return refuse(r->path, "YCbCr samples outside JPEG compression", convert);
        TIFFSetField(r->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB); /* libtiff converts */
    } else if (photometric != PHOTOMETRIC_MINISBLACK && photometric != PHOTOMETRIC_MINISWHITE &&
               photometric != PHOTOMETRIC_RGB) {
        return refuse(r->path, "its colours are a palette or another photometric kind "
                               "(grey and RGB are read)", convert);
    }
    r->grey = spp < 3;
    r->white_is_zero = photometric == PHOTOMETRIC_MINISWHITE;
    return NULL;
}

tt_status tt_raster_open(const char *path, tt_raster **out)
{
    *out = NULL;
    size_t size = 0;
    TT_TRY(tt_probe_file_size(path, &size));
    tt_raster *r = tt_calloc(1, sizeof *r);
    if (!r || !(r->path = tt_strdup(path))) {
        free(r);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    }
    tt_status status = NULL;
    /* "m": read(), not mmap: a mapped file counts in the resident memory as it
     * is read, and a raster may be larger than the memory */
    r->tif = tt_tiff_open(path, "rm", &r->errors);
    if (!r->tif) {
        status = tt_error_new(TT_ERR_FORMAT, "%s: not a readable TIFF (%s)", path,
                              tt_tiff_reason(&r->errors));
        goto cleanup;
    }
    uint32_t w = 0, h = 0, bw = 0, bh = 0;
    uint16_t spp = 1;
    TIFFGetField(r->tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(r->tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    r->info.tiled = TIFFIsTiled(r->tif) ? 1 : 0;
    r->info.bigtiff = TIFFIsBigTIFF(r->tif) ? 1 : 0;
    if (r->info.tiled) {
        TIFFGetField(r->tif, TIFFTAG_TILEWIDTH, &bw);
        TIFFGetField(r->tif, TIFFTAG_TILELENGTH, &bh);
    } else {
        bw = w;
        TIFFGetFieldDefaulted(r->tif, TIFFTAG_ROWSPERSTRIP, &bh);
        if (bh > h) bh = h;
    }
    if (w < 1 || h < 1 || w > 0x7fffffff || h > 0x7fffffff || bw < 1 || bh < 1 ||
        bw > 1u << 16 || bh > 1u << 16 || spp < 1) {
        status = tt_error_new(TT_ERR_FORMAT, "%s: its header gives %u x %u pixels in blocks of "
                              "%u x %u; the file is damaged", path, w, h, bw, bh);
        goto cleanup;
    }
    r->info.width = (int)w, r->info.height = (int)h, r->info.bands = spp;
    r->bands[0] = -1;
    r->info.block_w = (int)bw, r->info.block_h = (int)bh;
    TT_CHECK(check_layout(r));
    r->across = (int)((w + bw - 1) / bw);
    r->stride = (size_t)r->across * bw * spp * (size_t)r->sample_bytes;
    if (r->info.tiled && !(r->block = tt_malloc((size_t)TIFFTileSize(r->tif)))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for a tile", path);
        goto cleanup;
    }
cleanup:
    if (status) {
        tt_raster_close(r);
        return status;
    }
    *out = r;
    return NULL;
}

void tt_raster_close(tt_raster *r)
{
    if (!r) return;
    if (r->tif) TIFFClose(r->tif);
    tt_raster_release(r);
    free(r->block);
    free(r->path);
    free(r);
}

tt_raster_info tt_raster_get_info(const tt_raster *r) { return r->info; }

void tt_raster_release(tt_raster *r)
{
    for (int i = 0; i < r->row_count; i++) {
        free(r->rows[i].pixels);
        free(r->rows[i].have);
    }
    free(r->rows);
    r->rows = NULL;
    r->row_count = 0;
}

/* Each of bands[0..count) (1-based) is one of the raster's. */
static tt_status check_bands(const tt_raster *r, const int *bands, int count)
{
    for (int k = 0; k < count; k++)
        if (bands[k] < 1 || bands[k] > r->info.bands)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: band %d asked for, and it has %d "
                                "band%s (1 to %d)", r->path, bands[k], r->info.bands,
                                r->info.bands == 1 ? "" : "s", r->info.bands);
    return NULL;
}

tt_status tt_raster_select_bands(tt_raster *r, const int bands[3])
{
    TT_TRY(check_bands(r, bands, 3));
    for (int k = 0; k < 3; k++) r->bands[k] = bands[k] - 1;
    return NULL;
}

size_t tt_raster_held_bytes(const tt_raster *r)
{
    size_t held = 0;
    for (int i = 0; i < r->row_count; i++)
        if (r->rows[i].row >= 0) held += (size_t)r->info.block_h * r->stride;
    return held;
}

/* The slot holding block row `row`, made (empty) when missing: an empty
 * slot, else the one of the lowest row outside [lo, hi] (rows above the
 * crop: the reader goes down), else a new slot. */
static tt_status slot_of(tt_raster *r, int row, int lo, int hi, block_row **out)
{
    block_row *spare = NULL;
    for (int i = 0; i < r->row_count; i++) {
        block_row *s = &r->rows[i];
        if (s->row == row) {
            *out = s;
            return NULL;
        }
        if (s->row < lo || s->row > hi)
            if (!spare || s->row < spare->row) spare = s;
    }
    if (!spare) {
        block_row *rows = tt_realloc(r->rows, (size_t)(r->row_count + 1) * sizeof *rows);
        if (!rows) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", r->path);
        r->rows = rows;
        spare = &rows[r->row_count];
        memset(spare, 0, sizeof *spare);
        spare->pixels = tt_malloc((size_t)r->info.block_h * r->stride);
        spare->have = tt_malloc((size_t)r->across);
        r->row_count++;
        if (!spare->pixels || !spare->have)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d rows of "
                                "%d pixels", r->path, r->info.block_h, r->info.width);
    }
    spare->row = row;
    memset(spare->have, 0, (size_t)r->across);
    *out = spare;
    return NULL;
}

/* Decodes block (row, col) into its slot. */
static tt_status decode(tt_raster *r, block_row *s, int col)
{
    int bw = r->info.block_w, bh = r->info.block_h, spp = r->info.bands * r->sample_bytes;
    int rows = r->info.height - s->row * bh < bh ? r->info.height - s->row * bh : bh;
    r->errors.message[0] = '\0';
    TT_TRY(tt_read_fault("the raster", r->path));
    if (!r->info.tiled) {
        tmsize_t want = (tmsize_t)rows * (tmsize_t)r->stride;
        if (TIFFReadEncodedStrip(r->tif, (uint32_t)s->row, s->pixels, want) < want)
            return tt_error_new(TT_ERR_FORMAT, "%s: strip %d (rows %d..%d) does not decode (%s); "
                                "the file is damaged", r->path, s->row, s->row * bh,
                                s->row * bh + rows - 1, tt_tiff_reason(&r->errors));
    } else {
        uint32_t tile = TIFFComputeTile(r->tif, (uint32_t)(col * bw), (uint32_t)(s->row * bh), 0, 0);
        if (TIFFReadEncodedTile(r->tif, tile, r->block, TIFFTileSize(r->tif)) < 0)
            return tt_error_new(TT_ERR_FORMAT, "%s: the tile at (%d, %d) does not decode (%s); "
                                "the file is damaged", r->path, col * bw, s->row * bh,
                                tt_tiff_reason(&r->errors));
        size_t line = (size_t)bw * spp;
        for (int y = 0; y < rows; y++)
            memcpy(s->pixels + (size_t)y * r->stride + (size_t)col * line,
                   r->block + (size_t)y * line, line);
    }
    if (r->info.tiled) s->have[col] = 1;
    else memset(s->have, 1, (size_t)r->across);
    return NULL;
}

/* Calls copy(ctx, y, row) for each raster row y of the crop, row pointing
 * at pixel x0 of the decoded row (bands interleaved). */
static tt_status each_row(tt_raster *r, int x0, int y0, int w, int h,
                          void (*copy)(void *ctx, int y, const uint8_t *row), void *ctx)
{
    if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0 + w > r->info.width || y0 + h > r->info.height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: crop %dx%d at (%d, %d) leaves the "
                            "%dx%d raster", r->path, w, h, x0, y0, r->info.width, r->info.height);
    int bw = r->info.block_w, bh = r->info.block_h, spp = r->info.bands * r->sample_bytes;
    int lo = y0 / bh, hi = (y0 + h - 1) / bh, c0 = x0 / bw, c1 = (x0 + w - 1) / bw;
    for (int row = lo; row <= hi; row++) {
        block_row *s = NULL;
        TT_TRY(slot_of(r, row, lo, hi, &s));
        for (int col = c0; col <= c1; col++)
            if (!s->have[col]) TT_TRY(decode(r, s, col));
        int top = row * bh > y0 ? row * bh : y0;
        int end = (row + 1) * bh < y0 + h ? (row + 1) * bh : y0 + h;
        for (int y = top; y < end; y++)
            copy(ctx, y, s->pixels + (size_t)(y - row * bh) * r->stride + (size_t)x0 * spp);
    }
    return NULL;
}

typedef struct crop_out {
    const tt_raster *r;
    int y0, w;
    uint8_t *out;
} crop_out;

static void copy_rgb(void *ctx, int y, const uint8_t *src)
{
    const crop_out *c = ctx;
    const tt_raster *r = c->r;
    int spp = r->info.bands;
    uint8_t *dst = c->out + (size_t)(y - c->y0) * c->w * 3;
    if (r->bands[0] >= 0) {
        for (int x = 0; x < c->w; x++, src += spp, dst += 3)
            dst[0] = src[r->bands[0]], dst[1] = src[r->bands[1]], dst[2] = src[r->bands[2]];
        return;
    }
    for (int x = 0; x < c->w; x++, src += spp, dst += 3) {
        uint8_t v0 = src[0];
        if (r->grey) {
            if (r->white_is_zero) v0 = (uint8_t)(255 - v0);
            dst[0] = dst[1] = dst[2] = v0;
        } else {
            dst[0] = v0, dst[1] = src[1], dst[2] = src[2];
        }
    }
}

static void copy_samples(void *ctx, int y, const uint8_t *src)
{
    const crop_out *c = ctx;
    size_t line = (size_t)c->w * c->r->info.bands * (size_t)c->r->sample_bytes;
    memcpy(c->out + (size_t)(y - c->y0) * line, src, line);
}

tt_status tt_raster_read_crop(void *raster, int x0, int y0, int w, int h, uint8_t *rgb)
{
    const tt_raster *r = raster;
    if (r->info.sample != TT_SAMPLE_U8)
        return refuse(r->path, "its samples are not 8-bit, and prediction reads 8-bit RGB so far",
                      "convert it, e.g. gdal_translate -ot Byte -scale -co TILED=YES IN.tif "
                      "OUT.tif");
    crop_out c = {raster, y0, w, rgb};
    return each_row(raster, x0, y0, w, h, copy_rgb, &c);
}

typedef struct bands_out {
    const tt_raster *r;
    int y0, w, h, count;
    const int *bands; /* 1-based */
    float *planes;    /* (count, h, w) */
} bands_out;

static void copy_bands(void *ctx, int y, const uint8_t *src)
{
    const bands_out *c = ctx;
    int spp = c->r->info.bands;
    for (int k = 0; k < c->count; k++) {
        float *dst = c->planes + ((size_t)k * c->h + (size_t)(y - c->y0)) * c->w;
        int b = c->bands[k] - 1;
        switch (c->r->info.sample) {
        case TT_SAMPLE_U8:
            for (int x = 0; x < c->w; x++) dst[x] = src[(size_t)x * spp + b];
            break;
        case TT_SAMPLE_U16: {
            const uint16_t *s = (const uint16_t *)(const void *)src;
            for (int x = 0; x < c->w; x++) dst[x] = s[(size_t)x * spp + b];
            break;
        }
        case TT_SAMPLE_F32: {
            const float *s = (const float *)(const void *)src;
            for (int x = 0; x < c->w; x++) dst[x] = s[(size_t)x * spp + b];
            break;
        }
        }
    }
}

tt_status tt_raster_read_bands(tt_raster *r, int x0, int y0, int w, int h, const int *bands,
                               int count, float *planes)
{
    TT_TRY(check_bands(r, bands, count));
    bands_out c = {r, y0, w, h, count, bands, planes};
    return each_row(r, x0, y0, w, h, copy_bands, &c);
}

tt_status tt_raster_read_samples(tt_raster *r, int x0, int y0, int w, int h, uint8_t *samples)
{
    crop_out c = {r, y0, w, samples};
    return each_row(r, x0, y0, w, h, copy_samples, &c);
}

/* ---- GeoTIFF tags ------------------------------------------------------- */

int tt_georef_present(const tt_georef *g)
{
    return g->pixel_scale_count || g->tiepoint_count || g->transformation_count ||
           g->key_count || g->double_count || g->ascii || g->nodata;
}

void tt_georef_free(tt_georef *g)
{
    if (!g) return;
    free(g->pixel_scale);
    free(g->tiepoints);
    free(g->transformation);
    free(g->keys);
    free(g->doubles);
    free(g->ascii);
    free(g->nodata);
    memset(g, 0, sizeof *g);
}

/* The values of a tag as libtiff holds them (a known field, or the
 * anonymous one it makes for a tag it does not know); 0 when absent. */
static size_t tag_values(TIFF *tif, uint32_t tag, const void **data)
{
    const TIFFField *f = TIFFFieldWithTag(tif, tag);
    *data = NULL;
    if (!f) return 0;
    if (!TIFFFieldPassCount(f)) {
        const char *text = NULL;
        if (TIFFFieldDataType(f) != TIFF_ASCII || !TIFFGetField(tif, tag, &text) || !text) return 0;
        *data = text;
        return strlen(text) + 1;
    }
    if (TIFFFieldReadCount(f) == TIFF_VARIABLE2) {
        uint32_t n = 0;
        return TIFFGetField(tif, tag, &n, data) && *data ? n : 0;
    }
    uint16_t n = 0;
    return TIFFGetField(tif, tag, &n, data) && *data ? n : 0;
}

static int copy_array(const void *src, size_t count, size_t size, void **dst)
{
    if (!src || !count) return 1;
    *dst = tt_malloc(count * size);
    if (!*dst) return 0;
    memcpy(*dst, src, count * size);
    return 1;
}

static int copy_text(const void *src, size_t count, char **dst)
{
    if (!src || !count) return 1;
    *dst = tt_malloc(count + 1);
    if (!*dst) return 0;
    memcpy(*dst, src, count);
    (*dst)[count] = '\0';
    return 1;
}

int tt_raster_nodata(const tt_raster *r, double *value)
{
    const void *d = NULL;
    if (!tag_values(r->tif, TT_TAG_GDAL_NODATA, &d) || !d) return 0;
    const char *text = d;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text) return 0;
    while (*end == ' ') end++;
    if (*end) return 0;
    *value = v;
    return 1;
}

tt_status tt_raster_georef(const tt_raster *r, tt_georef *g)
{
    memset(g, 0, sizeof *g);
    const void *d;
    size_t n;
    int ok = 1;
    /* a tag of an unexpected type is left out rather than misread */
#define ARRAY(tag, type, field, count)                                                    \
    if ((n = tag_values(r->tif, tag, &d)) && TIFFFieldDataType(TIFFFieldWithTag(r->tif, tag)) == type) \
        ok = ok && copy_array(d, n, type == TIFF_SHORT ? 2 : 8, (void **)&g->field), g->count = n;
    ARRAY(TT_TAG_PIXEL_SCALE, TIFF_DOUBLE, pixel_scale, pixel_scale_count)
    ARRAY(TT_TAG_TIEPOINT, TIFF_DOUBLE, tiepoints, tiepoint_count)
    ARRAY(TT_TAG_TRANSFORMATION, TIFF_DOUBLE, transformation, transformation_count)
    ARRAY(TT_TAG_GEO_KEYS, TIFF_SHORT, keys, key_count)
    ARRAY(TT_TAG_GEO_DOUBLES, TIFF_DOUBLE, doubles, double_count)
#undef ARRAY
    if ((n = tag_values(r->tif, TT_TAG_GEO_ASCII, &d))) ok = ok && copy_text(d, n, &g->ascii);
    if ((n = tag_values(r->tif, TT_TAG_GDAL_NODATA, &d))) ok = ok && copy_text(d, n, &g->nodata);
    if (!ok) {
        tt_georef_free(g);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for its GeoTIFF tags",
                            r->path);
    }
    return NULL;
}
