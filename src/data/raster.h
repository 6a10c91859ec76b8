/*
 * Rasters of any size: a TIFF (classic or BigTIFF, tiled or in strips,
 * GeoTIFF or plain) read crop by crop from its own blocks, never decoded
 * whole, and a tiled, compressed TIFF written a band of rows at a time with
 * the georeference of the raster it was predicted from.
 *
 * Reading.  A crop decodes the blocks (tiles or strips) under it and keeps
 * them by rows of blocks: a reader that goes down the raster, as the
 * sliding window does, decodes each block once and holds only the rows of
 * blocks its latest crops covered (a few hundred rows of the raster's
 * width), whatever the raster's height.  Samples: 8-bit and 16-bit
 * unsigned or 32-bit float, any number of bands, interleaved
 * (PLANARCONFIG_CONTIG); JPEG in YCbCr is read as RGB.  As RGB (prediction)
 * 8-bit ones only: 1 band (grey, given as R = G = B), 2 (grey and alpha:
 * the grey) or 3 and more (the first three as R G B).  Others (signed or
 * 32-bit integers, 64-bit float, complex, bands in separate planes,
 * palettes) are refused by name with what to do.
 *
 * Georeference.  The GeoTIFF tags (ModelPixelScale, ModelTiepoint,
 * ModelTransformation, GeoKeyDirectory, GeoDoubleParams, GeoAsciiParams)
 * and GDAL's nodata tag are copied as they are: a mask predicted on the
 * raster's own grid needs nothing else to line up with it.  No CRS is
 * interpreted, so libtiff alone does it, without libgeotiff or GDAL.
 *
 * Writing.  Rows go in top to bottom; the writer keeps one row of 256-pixel
 * tiles and writes each row of tiles as it fills.  DEFLATE with a
 * horizontal (or, for float samples, floating-point) predictor; BigTIFF
 * when the raster's bytes exceed 2 GiB before compression.  The file is
 * written as PATH.part and renamed to PATH by tt_raster_writer_close, so a
 * failed or interrupted run leaves no partial raster under PATH.
 */
#ifndef TT_DATA_RASTER_H
#define TT_DATA_RASTER_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* The GeoTIFF tags of a raster, as stored (all counts 0: none). */
typedef struct tt_georef {
    double *pixel_scale;    size_t pixel_scale_count;   /* 33550 */
    double *tiepoints;      size_t tiepoint_count;      /* 33922 */
    double *transformation; size_t transformation_count; /* 34264 */
    uint16_t *keys;         size_t key_count;           /* 34735 */
    double *doubles;        size_t double_count;        /* 34736 */
    char *ascii;                                        /* 34737, or NULL */
    char *nodata;                                       /* 42113 (GDAL), or NULL */
} tt_georef;

/* Whether the raster has any GeoTIFF tag. */
int tt_georef_present(const tt_georef *g);
void tt_georef_free(tt_georef *g);

typedef struct tt_raster tt_raster;

typedef enum tt_raster_sample { TT_SAMPLE_U8, TT_SAMPLE_F32, TT_SAMPLE_U16 } tt_raster_sample;

/* "uint8", "float32", "uint16". */
const char *tt_raster_sample_name(tt_raster_sample sample);
/* Bytes of one sample: 1, 4, 2. */
int tt_raster_sample_bytes(tt_raster_sample sample);

typedef struct tt_raster_info {
    int width, height;
    int bands;              /* samples per pixel */
    tt_raster_sample sample;
    int block_w, block_h;   /* a tile, or the width and rows of a strip */
    int tiled, bigtiff;
} tt_raster_info;

/* Opens the first image of a TIFF for crops.  Errors name the file:
 * TT_ERR_IO (missing, unreadable), TT_ERR_FORMAT (not a TIFF, damaged),
 * TT_ERR_UNSUPPORTED (a sample format or layout above's list refuses,
 * saying how to convert it). */
tt_status tt_raster_open(const char *path, tt_raster **out);
void tt_raster_close(tt_raster *r);
tt_raster_info tt_raster_get_info(const tt_raster *r);
/* The bands read as R, G and B (1-based, as GDAL counts them: 4,3,2 for
 * a false-colour composite of RGBN), their samples as stored, in place of
 * the default (the first three, or grey).  TT_ERR_INVALID_ARGUMENT naming the file and its band
 * count for an index out of range. */
tt_status tt_raster_select_bands(tt_raster *r, const int bands[3]);
/* The raster's GeoTIFF tags, copied into *g (tt_georef_free). */
tt_status tt_raster_georef(const tt_raster *r, tt_georef *g);

/* GDAL's nodata value of the raster (its GDAL_NODATA tag, which may be
 * "nan"): 1 and *value when it has one that reads as a number, else 0. */
int tt_raster_nodata(const tt_raster *r, double *value);

/* The w x h crop at (x0, y0), inside the raster, as interleaved RGB
 * (h * w * 3 bytes): a tt_read_crop_fn (infer/predict.h).  Errors name the
 * file and the block that failed to decode; TT_ERR_UNSUPPORTED for samples
 * other than 8-bit. */
tt_status tt_raster_read_crop(void *raster, int x0, int y0, int w, int h, uint8_t *rgb);
/* The same crop as stored: h * w * bands samples, bands interleaved, no
 * conversion (a mask read back); h * w * bands * sample bytes. */
tt_status tt_raster_read_samples(tt_raster *r, int x0, int y0, int w, int h, uint8_t *samples);
/* The same crop's bands[0..count) (counted from 1) as float planes
 * (count, h, w), each value as stored (a 16-bit 1200 is 1200.0f). */
tt_status tt_raster_read_bands(tt_raster *r, int x0, int y0, int w, int h, const int *bands,
                               int count, float *planes);
/* Bytes of decoded blocks the reader holds now (for tests of its bound). */
size_t tt_raster_held_bytes(const tt_raster *r);
/* Frees every decoded block: a reader that jumps about (random training
 * crops) then holds only the blocks of its latest crop, instead of rows of
 * blocks of the raster's whole width that random crops touch piece by
 * piece until they are resident whole. */
void tt_raster_release(tt_raster *r);

typedef struct tt_raster_writer tt_raster_writer;

/* Starts PATH.part: width x height pixels of `bands` samples each;
 * georef (may be NULL) is copied into it.  Errors name PATH. */
tt_status tt_raster_writer_open(const char *path, int width, int height, int bands,
                                tt_raster_sample sample, const tt_georef *georef,
                                tt_raster_writer **out);
/* The same as a Cloud-Optimized GeoTIFF: the raster and its overviews
 * (factors 2, 4, 8, ... until the smallest fits one 256-pixel tile; none
 * when the raster does) in one file, the main image's directory first, then
 * the overviews' (SUBFILETYPE reduced-image), then the tiles, smallest
 * overview first and the full resolution last.  An overview pixel reduces
 * the 2 x 2 pixels under it in the level above: 8-bit samples take their
 * most frequent value (a class mask's mode; ties: the lower value),
 * leaving out `ignore` (255 for nodata, or -1: none) unless all hold it;
 * 16-bit and float samples their mean (probabilities).  Memory: each level
 * keeps a row of tiles of its width, as a plain writer does (about twice
 * the full resolution's in all); the levels are written to PATH.partN
 * first and copied tile by tile, still compressed, into PATH.part at
 * close, which renames it to PATH and removes them. */
tt_status tt_raster_writer_open_cog(const char *path, int width, int height, int bands,
                                    tt_raster_sample sample, const tt_georef *georef, int ignore,
                                    tt_raster_writer **out);
/* Another writer behind this interface (the COG writer, raster_cog.c):
 * rows, close (which frees ctx, as abort does) and abort. */
typedef struct tt_raster_writer_ops {
    tt_status (*rows)(void *ctx, int rows, const void *samples);
    tt_status (*close)(void *ctx);
    void (*abort)(void *ctx);
} tt_raster_writer_ops;
/* A writer whose calls go to ops with ctx; ctx is aborted on failure. */
tt_status tt_raster_writer_wrap(const char *path, const tt_raster_writer_ops *ops, void *ctx,
                                tt_raster_writer **out);
/* The next `rows` rows: rows x width x bands samples, interleaved (uint8_t,
 * uint16_t or float as the writer's sample). */
tt_status tt_raster_writer_rows(tt_raster_writer *w, int rows, const void *samples);
/* After the last row: writes what is left, closes and renames PATH.part to
 * PATH.  On error (or rows missing) PATH.part is removed and PATH is left
 * as it was.  The writer is freed either way. */
tt_status tt_raster_writer_close(tt_raster_writer *w);
/* Drops the writer and its PATH.part (after another error).  NULL allowed. */
void tt_raster_writer_abort(tt_raster_writer *w);

#endif
