/*
 * Cloud-Optimized GeoTIFF writing (data/raster.h: tt_raster_writer_open_cog).
 *
 * Pass 1, as rows come: level 0 (the raster) and each overview go to a
 * plain tiled writer of their own (PATH.part0, PATH.part1, ...).  Level l
 * keeps the one row of level l - 1 still waiting for its pair; two rows
 * reduce to one row of level l, which is written and handed to level l + 1.
 *
 * Pass 2, at close: PATH.part gets every level's directory first, the
 * tile offsets and byte counts left for later (libtiff's deferred strile
 * arrays), in order: the raster's at the start of the file, then the
 * overviews'.  Then each level's tiles are copied as they are compressed,
 * smallest overview first, and its offsets and byte counts written in the
 * place its directory kept for them.  That is the layout of the COG
 * specification (no ghost area: GDAL reads a COG without one).
 */
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
#include "data/raster_cog.h"

#define TILE TT_RASTER_TILE
#define MAX_LEVELS 32
/* above this many bytes of the raster before compression: BigTIFF (raster_write.c) */
#define CLASSIC_MOST ((uint64_t)2 << 30)

typedef struct cog_level {
    int width, height;
    char *path;               /* PATH.partN */
    tt_raster_writer *writer; /* NULL once closed */
    uint8_t *held;            /* a row of the level above waiting for its pair */
    int has_held;
    uint8_t *reduced;         /* one row of this level */
} cog_level;

struct tt_cog {
    char *path, *part;
    int bands, ignore, levels, rows_in;
    tt_raster_sample sample;
    size_t pixel; /* bytes of a pixel's samples */
    tt_georef georef; /* a copy: the main image's tags */
    cog_level level[MAX_LEVELS];
};

void tt_cog_abort(tt_cog *c)
{
    if (!c) return;
    for (int l = 0; l < c->levels; l++) {
        cog_level *v = &c->level[l];
        tt_raster_writer_abort(v->writer);
        if (v->path) unlink(v->path);
        free(v->path);
        free(v->held);
        free(v->reduced);
    }
    if (c->part) unlink(c->part);
    tt_georef_free(&c->georef);
    free(c->path);
    free(c->part);
    free(c);
}

static int copy_georef(tt_georef *to, const tt_georef *from)
{
    memset(to, 0, sizeof *to);
#define COPY(field, count)                                                               \
    if (from->count) {                                                                   \
        size_t bytes = from->count * sizeof *from->field;                                \
        if (!(to->field = tt_malloc(bytes))) return 0;                                      \
        memcpy(to->field, from->field, bytes);                                           \
        to->count = from->count;                                                         \
    }
    COPY(pixel_scale, pixel_scale_count)
    COPY(tiepoints, tiepoint_count)
    COPY(transformation, transformation_count)
    COPY(keys, key_count)
    COPY(doubles, double_count)
#undef COPY
    if (from->ascii && !(to->ascii = tt_strdup(from->ascii))) return 0;
    if (from->nodata && !(to->nodata = tt_strdup(from->nodata))) return 0;
    return 1;
}

static char *suffixed(const char *path, const char *suffix)
{
    size_t len = strlen(path), more = strlen(suffix);
    char *s = tt_malloc(len + more + 1);
    if (s) memcpy(s, path, len), memcpy(s + len, suffix, more + 1);
    return s;
}

tt_status tt_cog_open(const char *path, int width, int height, int bands,
                      tt_raster_sample sample, const tt_georef *georef, int ignore, tt_cog **out)
{
    *out = NULL;
    if (width < 1 || height < 1 || bands < 1 || bands > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: a raster of %dx%d pixels and %d bands "
                            "cannot be written (1 to 256 bands)", path, width, height, bands);
    tt_cog *c = tt_calloc(1, sizeof *c);
    if (!c || !(c->path = tt_strdup(path)) || !(c->part = suffixed(path, ".part"))) goto oom;
    c->bands = bands, c->sample = sample, c->ignore = ignore;
    c->pixel = (size_t)bands * (size_t)tt_raster_sample_bytes(sample);
    if (georef && !copy_georef(&c->georef, georef)) goto oom;
    int w = width, h = height;
    for (;;) {
        cog_level *v = &c->level[c->levels];
        char suffix[24];
        snprintf(suffix, sizeof suffix, ".part%d", c->levels);
        v->width = w, v->height = h;
        if (!(v->path = suffixed(path, suffix))) goto oom;
        c->levels++;
        if (c->levels > 1) {
            size_t above = (size_t)c->level[c->levels - 2].width * c->pixel;
            if (!(v->held = tt_malloc(above)) || !(v->reduced = tt_malloc((size_t)w * c->pixel)))
                goto oom;
        }
        tt_georef only_nodata = {0};
        only_nodata.nodata = c->georef.nodata;
        tt_status status = tt_raster_writer_open(v->path, w, h, bands, sample,
                                                 c->levels == 1 ? georef : &only_nodata,
                                                 &v->writer);
        if (status) {
            tt_cog_abort(c);
            return status;
        }
        if ((w <= TILE && h <= TILE) || c->levels == MAX_LEVELS) break;
        w = (w + 1) / 2, h = (h + 1) / 2;
    }
    *out = c;
    return NULL;
oom:
    tt_cog_abort(c);
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory for its overviews", path);
}

/* The most frequent of n values, `ignore` left out unless all are it;
 * ties: the lowest. */
static uint8_t mode_of(const uint8_t *v, int n, int ignore)
{
    int best = ignore, best_count = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] == ignore) continue;
        int count = 0;
        for (int j = 0; j < n; j++) count += v[j] == v[i];
        if (count > best_count || (count == best_count && v[i] < best)) best = v[i], best_count = count;
    }
    return (uint8_t)best;
}

/* One row of level l from rows a and b (b NULL: a was the last, odd row)
 * of the level above. */
static void reduce_rows(const tt_cog *c, int l, const uint8_t *a, const uint8_t *b)
{
    const cog_level *v = &c->level[l];
    int above = c->level[l - 1].width, bands = c->bands;
    for (int x = 0; x < v->width; x++) {
        int xs[2] = {2 * x, 2 * x + 1}, across = 2 * x + 1 < above ? 2 : 1;
        for (int k = 0; k < bands; k++) {
            size_t out = (size_t)x * bands + k;
            const uint8_t *rows[2] = {a, b};
            if (c->sample == TT_SAMPLE_U8) {
                uint8_t values[4];
                int n = 0;
                for (int r = 0; r < 2 && rows[r]; r++)
                    for (int i = 0; i < across; i++) values[n++] = rows[r][(size_t)xs[i] * bands + k];
                v->reduced[out] = mode_of(values, n, c->ignore);
            } else if (c->sample == TT_SAMPLE_U16) {
                uint32_t sum = 0, n = 0;
                for (int r = 0; r < 2 && rows[r]; r++)
                    for (int i = 0; i < across; i++, n++)
                        sum += ((const uint16_t *)rows[r])[(size_t)xs[i] * bands + k];
                ((uint16_t *)v->reduced)[out] = (uint16_t)((sum + n / 2) / n);
            } else {
                float sum = 0;
                int n = 0;
                for (int r = 0; r < 2 && rows[r]; r++)
                    for (int i = 0; i < across; i++, n++)
                        sum += ((const float *)rows[r])[(size_t)xs[i] * bands + k];
                ((float *)v->reduced)[out] = sum / (float)n;
            }
        }
    }
}

/* A row of level l - 1 arrives at level l (b NULL at the end: the held row
 * alone, if any). */
static tt_status feed(tt_cog *c, int l, const uint8_t *row)
{
    if (l >= c->levels) return NULL;
    cog_level *v = &c->level[l];
    size_t bytes = (size_t)c->level[l - 1].width * c->pixel;
    if (row && !v->has_held) {
        memcpy(v->held, row, bytes);
        v->has_held = 1;
        return NULL;
    }
    if (!v->has_held) return NULL;
    reduce_rows(c, l, v->held, row);
    v->has_held = 0;
    TT_TRY(tt_raster_writer_rows(v->writer, 1, v->reduced));
    return feed(c, l + 1, v->reduced);
}

tt_status tt_cog_rows(tt_cog *c, int rows, const void *samples)
{
    if (rows < 0 || c->rows_in + rows > c->level[0].height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d more rows after %d of %d", c->part,
                            rows, c->rows_in, c->level[0].height);
    TT_TRY(tt_raster_writer_rows(c->level[0].writer, rows, samples));
    size_t row_bytes = (size_t)c->level[0].width * c->pixel;
    for (int i = 0; i < rows; i++) TT_TRY(feed(c, 1, (const uint8_t *)samples + i * row_bytes));
    c->rows_in += rows;
    return NULL;
}

/* Level l's tiles copied from its file into directory l of out, still
 * compressed, and the directory's offsets and byte counts written. */
static tt_status copy_tiles(tt_cog *c, TIFF *out, tt_tiff_errors *out_errors, int l)
{
    tt_status status = NULL;
    tt_tiff_errors errors = {{0}};
    uint8_t *buffer = NULL;
    TIFF *in = tt_tiff_open(c->level[l].path, "r", &errors);
    if (!in)
        return tt_error_new(TT_ERR_IO, "%s: cannot read it back (%s)", c->level[l].path,
                            tt_tiff_reason(&errors));
    if (!TIFFSetDirectory(out, (tdir_t)l)) {
        status = tt_error_new(TT_ERR_IO, "%s: cannot go back to its directory %d (%s)", c->part,
                              l, tt_tiff_reason(out_errors));
        goto cleanup;
    }
    uint32_t tiles = TIFFNumberOfTiles(in);
    size_t capacity = 0;
    if (tt_fault_hit(TT_FAULT_WRITE)) {
        status = tt_error_new(TT_ERR_IO, "%s: cannot copy the tiles of level %d (%s); check the "
                              "disk has room", c->part, l, strerror(ENOSPC));
        goto cleanup;
    }
    for (uint32_t t = 0; t < tiles; t++) {
        uint64_t bytes = TIFFGetStrileByteCount(in, t);
        if (bytes > capacity) {
            uint8_t *grown = tt_realloc(buffer, bytes);
            if (!grown) {
                status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->part);
                goto cleanup;
            }
            buffer = grown, capacity = bytes;
        }
        tmsize_t got = TIFFReadRawTile(in, t, buffer, (tmsize_t)capacity);
        if (got < 0 || TIFFWriteRawTile(out, t, buffer, got) != got) {
            status = tt_error_new(TT_ERR_IO, "%s: cannot copy tile %u of level %d (%s%s); check "
                                  "the disk has room", c->part, t, l, tt_tiff_reason(&errors),
                                  out_errors->message);
            goto cleanup;
        }
    }
    if (!TIFFForceStrileArrayWriting(out))
        status = tt_error_new(TT_ERR_IO, "%s: cannot write the tile offsets of level %d (%s)",
                              c->part, l, tt_tiff_reason(out_errors));
cleanup:
    TIFFClose(in);
    free(buffer);
    return status;
}

/* PATH.part from the levels' files. */
static tt_status assemble(tt_cog *c)
{
    tt_status status = NULL;
    tt_tiff_errors errors = {{0}};
    uint64_t bytes = (uint64_t)c->level[0].width * (uint64_t)c->level[0].height * c->pixel;
    unlink(c->part);
    TIFF *out = tt_tiff_open(c->part, bytes > CLASSIC_MOST ? "w8" : "w", &errors);
    if (!out)
        return tt_error_new(TT_ERR_IO, "%s: cannot be written (%s); check the folder exists and "
                            "has room", c->part, tt_tiff_reason(&errors));
    tt_georef only_nodata = {0};
    only_nodata.nodata = c->georef.nodata;
    for (int l = 0; l < c->levels; l++) {
        TT_CHECK(tt_raster_tags_set(out, c->part, &errors, c->level[l].width,
                                    c->level[l].height, c->bands, c->sample,
                                    l == 0 ? &c->georef : &only_nodata, l > 0));
        if (!TIFFDeferStrileArrayWriting(out) || !TIFFWriteCheck(out, 1, c->part) ||
            !TIFFWriteDirectory(out)) {
            status = tt_error_new(TT_ERR_IO, "%s: cannot write the directory of level %d (%s)",
                                  c->part, l, tt_tiff_reason(&errors));
            goto cleanup;
        }
    }
    for (int l = c->levels - 1; l >= 0; l--) TT_CHECK(copy_tiles(c, out, &errors, l));
    errors.message[0] = '\0';
    int flushed = TIFFFlush(out);
    TIFFClose(out);
    out = NULL;
    if (!flushed || errors.message[0])
        status = tt_error_new(TT_ERR_IO, "%s: cannot finish it (%s); check the disk has room",
                              c->part, tt_tiff_reason(&errors));
cleanup:
    if (out) TIFFClose(out);
    return status;
}

tt_status tt_cog_close(tt_cog *c)
{
    tt_status status = NULL;
    if (c->rows_in != c->level[0].height) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d of its %d rows were given; "
                              "nothing written", c->path, c->rows_in, c->level[0].height);
        goto cleanup;
    }
    for (int l = 1; l < c->levels; l++) TT_CHECK(feed(c, l, NULL));
    for (int l = 0; l < c->levels; l++) {
        tt_raster_writer *w = c->level[l].writer;
        c->level[l].writer = NULL;
        TT_CHECK(tt_raster_writer_close(w));
    }
    TT_CHECK(assemble(c));
    int fd = open(c->part, O_RDONLY);
    int synced = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) synced = close(fd) == 0 && synced;
    if (!synced) {
        status = tt_error_new(TT_ERR_IO, "%s: cannot finish it (%s); check the disk has room",
                              c->part, strerror(errno));
        goto cleanup;
    }
    if (rename(c->part, c->path) != 0)
        status = tt_error_new(TT_ERR_IO, "cannot rename %s to %s: %s", c->part, c->path,
                              strerror(errno));
cleanup:
    tt_cog_abort(c); /* the levels' files and PATH.part are gone: renamed, or removed */
    return status;
}

static tt_status cog_rows(void *ctx, int rows, const void *samples)
{
    return tt_cog_rows(ctx, rows, samples);
}
static tt_status cog_close(void *ctx) { return tt_cog_close(ctx); }
static void cog_abort(void *ctx) { tt_cog_abort(ctx); }

tt_status tt_raster_writer_open_cog(const char *path, int width, int height, int bands,
                                    tt_raster_sample sample, const tt_georef *georef, int ignore,
                                    tt_raster_writer **out)
{
    static const tt_raster_writer_ops ops = {cog_rows, cog_close, cog_abort};
    *out = NULL;
    tt_cog *c = NULL;
    TT_TRY(tt_cog_open(path, width, height, bands, sample, georef, ignore, &c));
    return tt_raster_writer_wrap(path, &ops, c, out);
}
