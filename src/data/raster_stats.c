/* Band statistics and nodata share of raster pairs, from a grid of crops;
 * see raster_stats.h. */
#include "data/raster_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/raster_set.h"

/* The start of crop k of n of side `side` spread over `length`. */
static int spread(int k, int n, int side, int length)
{
    if (n <= 1 || length <= side) return 0;
    return (int)((int64_t)k * (length - side) / (n - 1));
}

tt_status tt_raster_stats_add(tt_raster_pair *p, int grid, int side, tt_raster_stats *stats)
{
    const tt_raster_pair_info *in = tt_raster_pair_get_info(p);
    if (stats->channels && stats->channels != in->channels)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d bands chosen, and the data set's "
                            "other rasters give %d; choose the same bands of each (--bands)",
                            tt_raster_pair_image_path(p), in->channels, stats->channels);
    stats->channels = in->channels;
    int cw = side < in->width ? side : in->width, ch = side < in->height ? side : in->height;
    int nx = in->width <= cw ? 1 : grid, ny = in->height <= ch ? 1 : grid;
    size_t plane = (size_t)cw * ch;
    float *image = tt_malloc(plane * (size_t)in->channels * sizeof *image);
    uint8_t *mask = tt_malloc(plane);
    tt_status status = NULL;
    if (!image || !mask) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory",
                              tt_raster_pair_image_path(p));
        goto cleanup;
    }
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            int64_t ignored = 0, nodata = 0;
            TT_CHECK(tt_raster_pair_read(p, spread(i, nx, cw, in->width),
                                         spread(j, ny, ch, in->height), cw, ch, NULL, NULL,
                                         image, mask, &ignored, &nodata));
            stats->pixels += plane;
            stats->ignored += (uint64_t)ignored;
            stats->nodata += (uint64_t)nodata;
            for (size_t k = 0; k < plane; k++) {
                if (mask[k] == 255) continue;
                stats->class_pixels[mask[k]]++;
                for (int c = 0; c < in->channels; c++) {
                    double v = image[(size_t)c * plane + k];
                    stats->sum[c] += v;
                    stats->sum_sq[c] += v * v;
                }
            }
        }
cleanup:
    free(image);
    free(mask);
    return status;
}

tt_status tt_raster_stats_of_set(struct tt_raster_set *set, tt_raster_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    for (int i = 0; i < tt_raster_set_count(set); i++)
        TT_TRY(tt_raster_stats_add(tt_raster_set_pair(set, i), 8, 256, stats));
    tt_raster_stats_finish(stats);
    if (stats->pixels == stats->ignored)
        return tt_error_new(TT_ERR_FORMAT, "%s and the others: every pixel read is nodata or "
                            "ignored (255); check the masks and the images' GDAL_NODATA",
                            tt_raster_pair_image_path(tt_raster_set_pair(set, 0)));
    return NULL;
}

void tt_raster_stats_finish(tt_raster_stats *stats)
{
    uint64_t valid = stats->pixels - stats->ignored;
    for (int c = 0; c < stats->channels; c++) {
        double mean = valid ? stats->sum[c] / (double)valid : 0;
        double var = valid ? stats->sum_sq[c] / (double)valid - mean * mean : 0;
        stats->mean[c] = mean;
        stats->std[c] = var > 1e-12 * (1 + mean * mean) ? sqrt(var) : 1;
    }
}
