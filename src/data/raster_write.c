/* Writing a tiled, compressed (Geo)TIFF a band of rows at a time; see raster.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tiffio.h>

#include "core/alloc.h"
#include "core/fault.h"
#include "core/status.h"
#include "data/image_probe.h"
#include "data/raster.h"
#include "data/raster_cog.h"
#include "data/raster_tags.h"

#define TILE TT_RASTER_TILE
/* Above this many bytes before compression a raster is written as BigTIFF
 * (a classic TIFF's offsets end at 4 GiB; compression may not help noise). */
#define CLASSIC_MOST ((uint64_t)2 << 30)

struct tt_raster_writer {
    char *path, *part;
    TIFF *tif;
    tt_tiff_errors errors;
    int width, height, bands, rows_in, buffered;
    tt_raster_sample sample;
    size_t pixel;       /* bytes of one pixel's samples */
    size_t line;        /* bytes of one buffered row: whole tiles wide */
    uint8_t *band;      /* TILE rows */
    uint8_t *tile;
    const tt_raster_writer_ops *ops; /* another writer (a COG's): it writes, */
    void *ctx;                       /* the rest is unused */
};

/* The tags libtiff is told of, so that it writes them (numbers: raster_tags.h). */
static const TIFFFieldInfo geo_fields[] = {
    {TT_TAG_PIXEL_SCALE, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1,
     (char *)"ModelPixelScaleTag"},
    {TT_TAG_TIEPOINT, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1,
     (char *)"ModelTiepointTag"},
    {TT_TAG_TRANSFORMATION, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1,
     (char *)"ModelTransformationTag"},
    {TT_TAG_GEO_KEYS, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_SHORT, FIELD_CUSTOM, 1, 1,
     (char *)"GeoKeyDirectoryTag"},
    {TT_TAG_GEO_DOUBLES, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1,
     (char *)"GeoDoubleParamsTag"},
    {TT_TAG_GEO_ASCII, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0,
     (char *)"GeoAsciiParamsTag"},
    {TT_TAG_GDAL_NODATA, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0,
     (char *)"GDALNoDataValue"},
};

static int set_georef(TIFF *tif, const tt_georef *g)
{
    if (TIFFMergeFieldInfo(tif, geo_fields, sizeof geo_fields / sizeof geo_fields[0]) != 0)
        return 0;
    int ok = 1;
#define ARRAY(tag, field, count) \
    if (g->count) ok = ok && TIFFSetField(tif, tag, (uint32_t)g->count, g->field);
    ARRAY(TT_TAG_PIXEL_SCALE, pixel_scale, pixel_scale_count)
    ARRAY(TT_TAG_TIEPOINT, tiepoints, tiepoint_count)
    ARRAY(TT_TAG_TRANSFORMATION, transformation, transformation_count)
    ARRAY(TT_TAG_GEO_KEYS, keys, key_count)
    ARRAY(TT_TAG_GEO_DOUBLES, doubles, double_count)
#undef ARRAY
    if (g->ascii) ok = ok && TIFFSetField(tif, TT_TAG_GEO_ASCII, g->ascii);
    if (g->nodata) ok = ok && TIFFSetField(tif, TT_TAG_GDAL_NODATA, g->nodata);
    return ok;
}

tt_status tt_raster_tags_set(TIFF *tif, const char *name, tt_tiff_errors *errors, int width,
                             int height, int bands, tt_raster_sample sample,
                             const tt_georef *georef, int reduced)
{
    int f32 = sample == TT_SAMPLE_F32, ok = 1;
    if (reduced) ok = ok && TIFFSetField(tif, TIFFTAG_SUBFILETYPE, (uint32_t)FILETYPE_REDUCEDIMAGE);
    ok = ok && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)width);
    ok = ok && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)height);
    ok = ok && TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)bands);
    ok = ok && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE,
                            (uint16_t)(8 * tt_raster_sample_bytes(sample)));
    ok = ok && TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT,
                            (uint16_t)(f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT));
    ok = ok && TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, (uint16_t)PHOTOMETRIC_MINISBLACK);
    ok = ok && TIFFSetField(tif, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG);
    if (bands > 1) { /* planes past the first are no colour: "unspecified" */
        uint16_t extra[256] = {0};
        ok = ok && TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)(bands - 1), extra);
    }
    ok = ok && TIFFSetField(tif, TIFFTAG_COMPRESSION, (uint16_t)COMPRESSION_ADOBE_DEFLATE);
    ok = ok && TIFFSetField(tif, TIFFTAG_PREDICTOR,
                            (uint16_t)(f32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL));
    ok = ok && TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)TILE);
    ok = ok && TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)TILE);
    ok = ok && TIFFSetField(tif, TIFFTAG_SOFTWARE, "tiletrain predict");
    if (ok && georef && (tt_georef_present(georef) || georef->nodata)) ok = set_georef(tif, georef);
    if (!ok)
        return tt_error_new(TT_ERR_IO, "%s: cannot set its TIFF tags (%s)", name,
                            tt_tiff_reason(errors));
    return NULL;
}

void tt_raster_writer_abort(tt_raster_writer *w)
{
    if (!w) return;
    if (w->ops) w->ops->abort(w->ctx);
    if (w->tif) TIFFClose(w->tif);
    if (w->part) unlink(w->part);
    free(w->path);
    free(w->part);
    free(w->band);
    free(w->tile);
    free(w);
}

tt_status tt_raster_writer_open(const char *path, int width, int height, int bands,
                                tt_raster_sample sample, const tt_georef *georef,
                                tt_raster_writer **out)
{
    *out = NULL;
    if (width < 1 || height < 1 || bands < 1 || bands > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: a raster of %dx%d pixels and %d bands "
                            "cannot be written (1 to 256 bands)", path, width, height, bands);
    tt_raster_writer *w = tt_calloc(1, sizeof *w);
    size_t len = strlen(path);
    if (!w || !(w->path = tt_strdup(path)) || !(w->part = tt_malloc(len + 6))) {
        tt_raster_writer_abort(w);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    }
    memcpy(w->part, path, len);
    memcpy(w->part + len, ".part", 6);
    w->width = width, w->height = height, w->bands = bands, w->sample = sample;
    w->pixel = (size_t)bands * (size_t)tt_raster_sample_bytes(sample);
    size_t across = ((size_t)width + TILE - 1) / TILE;
    w->line = across * TILE * w->pixel;
    w->band = tt_calloc(TILE, w->line);
    w->tile = tt_malloc((size_t)TILE * TILE * w->pixel);
    if (!w->band || !w->tile) {
        tt_raster_writer_abort(w);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d rows of %d "
                            "pixels", path, TILE, width);
    }
    uint64_t bytes = (uint64_t)width * (uint64_t)height * w->pixel;
    unlink(w->part); /* a run that died before left it */
    w->tif = tt_tiff_open(w->part, bytes > CLASSIC_MOST ? "w8" : "w", &w->errors);
    if (!w->tif) {
        tt_status status = tt_error_new(TT_ERR_IO, "%s: cannot be written (%s); check the "
                                        "folder exists and has room", w->part,
                                        tt_tiff_reason(&w->errors));
        tt_raster_writer_abort(w);
        return status;
    }
    tt_status status = tt_raster_tags_set(w->tif, w->part, &w->errors, width, height, bands,
                                          sample, georef, 0);
    if (status) {
        tt_raster_writer_abort(w);
        return status;
    }
    *out = w;
    return NULL;
}

/* Writes the buffered rows as one row of tiles (rows past them zero). */
static tt_status flush_band(tt_raster_writer *w)
{
    if (!w->buffered) return NULL;
    uint32_t y = (uint32_t)(w->rows_in - w->buffered);
    if (tt_fault_hit(TT_FAULT_WRITE))
        return tt_error_new(TT_ERR_IO, "%s: cannot write the tiles of rows %u and on (%s); check "
                            "the disk has room", w->part, y, strerror(ENOSPC));
    size_t span = (size_t)TILE * w->pixel;
    memset(w->band + (size_t)w->buffered * w->line, 0, (size_t)(TILE - w->buffered) * w->line);
    for (size_t x = 0; x * TILE < (size_t)w->width; x++) {
        for (int i = 0; i < TILE; i++)
            memcpy(w->tile + i * span, w->band + i * w->line + x * span, span);
        uint32_t index = TIFFComputeTile(w->tif, (uint32_t)(x * TILE), y, 0, 0);
        w->errors.message[0] = '\0';
        if (TIFFWriteEncodedTile(w->tif, index, w->tile, (tmsize_t)(TILE * span)) < 0)
            return tt_error_new(TT_ERR_IO, "%s: cannot write the tile at (%zu, %u) (%s); check "
                                "the disk has room", w->part, x * TILE, y,
                                tt_tiff_reason(&w->errors));
    }
    w->buffered = 0;
    return NULL;
}

tt_status tt_raster_writer_wrap(const char *path, const tt_raster_writer_ops *ops, void *ctx,
                                tt_raster_writer **out)
{
    *out = NULL;
    tt_raster_writer *w = tt_calloc(1, sizeof *w);
    if (!w) {
        ops->abort(ctx);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    }
    w->ops = ops, w->ctx = ctx;
    *out = w;
    return NULL;
}

tt_status tt_raster_writer_rows(tt_raster_writer *w, int rows, const void *samples)
{
    if (w->ops) return w->ops->rows(w->ctx, rows, samples);
    if (rows < 0 || w->rows_in + rows > w->height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d more rows after %d of %d", w->part,
                            rows, w->rows_in, w->height);
    const uint8_t *src = samples;
    size_t row_bytes = (size_t)w->width * w->pixel;
    for (int i = 0; i < rows; i++) {
        memcpy(w->band + (size_t)w->buffered * w->line, src + i * row_bytes, row_bytes);
        w->buffered++, w->rows_in++;
        if (w->buffered == TILE) TT_TRY(flush_band(w));
    }
    return NULL;
}

/* fsync of a finished file, so that the rename shows the whole of it. */
static int sync_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    int ok = fsync(fd) == 0;
    return close(fd) == 0 && ok;
}

tt_status tt_raster_writer_close(tt_raster_writer *w)
{
    tt_status status = NULL;
    if (w->ops) {
        const tt_raster_writer_ops *ops = w->ops;
        w->ops = NULL;
        status = ops->close(w->ctx);
        goto cleanup;
    }
    if (w->rows_in != w->height) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d of its %d rows were given; "
                              "nothing written", w->path, w->rows_in, w->height);
        goto cleanup;
    }
    TT_CHECK(flush_band(w));
    w->errors.message[0] = '\0';
    int flushed = TIFFFlush(w->tif);
    TIFFClose(w->tif);
    w->tif = NULL;
    if (!flushed || w->errors.message[0] || !sync_file(w->part)) {
        status = tt_error_new(TT_ERR_IO, "%s: cannot finish it (%s); check the disk has room",
                              w->part, w->errors.message[0] ? w->errors.message : strerror(errno));
        goto cleanup;
    }
    if (rename(w->part, w->path) != 0)
        status = tt_error_new(TT_ERR_IO, "cannot rename %s to %s: %s", w->part, w->path,
                              strerror(errno));
cleanup:
    tt_raster_writer_abort(w); /* PATH.part is gone: renamed, or removed */
    return status;
}
