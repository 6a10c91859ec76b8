/* A raster's bands, normalised as training normalised them; see
 * band_reader.h. */
#include "infer/band_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

/* Whether pixel i of planes ((channels, plane)) is nodata in any band. */
static int is_nodata(const tt_band_reader *b, const float *planes, size_t plane, size_t i)
{
    for (int c = 0; b->has_nodata && c < b->norm.count; c++) {
        float v = planes[(size_t)c * plane + i];
        if (isnan(b->nodata) ? isnan(v) : v == (float)b->nodata) return 1;
    }
    return 0;
}

tt_status tt_band_reader_nodata_rows(void *ctx, int y0, int rows, uint8_t *flags)
{
    const tt_band_reader *b = ctx;
    int w = tt_raster_get_info(b->raster).width, chunk = 16;
    float *planes = tt_malloc((size_t)chunk * w * (size_t)b->norm.count * sizeof *planes);
    if (!planes) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", b->path);
    tt_status status = NULL;
    for (int r = 0; !status && r < rows; r += chunk) {
        int n = rows - r < chunk ? rows - r : chunk;
        size_t plane = (size_t)n * w;
        status = tt_raster_read_bands(b->raster, 0, y0 + r, w, n, b->norm.bands, b->norm.count,
                                      planes);
        for (size_t i = 0; !status && i < plane; i++)
            flags[(size_t)r * w + i] = (uint8_t)is_nodata(b, planes, plane, i);
    }
    free(planes);
    return status;
}

static tt_status read_planes(void *ctx, int x0, int y0, int w, int h, float *planes)
{
    const tt_band_reader *b = ctx;
    int channels = b->norm.count;
    TT_TRY(tt_raster_read_bands(b->raster, x0, y0, w, h, b->norm.bands, channels, planes));
    size_t plane = (size_t)w * h;
    for (size_t i = 0; i < plane; i++) {
        int off = is_nodata(b, planes, plane, i);
        for (int c = 0; c < channels; c++) {
            float *v = &planes[(size_t)c * plane + i];
            *v = off ? 0.0f : (*v - b->norm.mean[c]) / b->norm.std[c];
        }
    }
    return NULL;
}

tt_status tt_band_reader_init(tt_band_reader *b, tt_raster *raster, const char *path,
                              const tt_band_norm *norm, tt_crop_reader *reader)
{
    tt_raster_info info = tt_raster_get_info(raster);
    for (int c = 0; c < norm->count; c++)
        if (norm->bands[c] > info.bands) {
            char list[TT_RASTER_MAX_BANDS * 6] = "";
            for (int k = 0; k < norm->count; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "",
                         norm->bands[k]);
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: band %d asked for, and it has %d "
                                "band%s; the model takes bands %s (give --bands to pick others "
                                "of this raster, as many)", path, norm->bands[c], info.bands,
                                info.bands == 1 ? "" : "s", list);
        }
    *b = (tt_band_reader){raster, path, *norm, 0, 0};
    b->has_nodata = tt_raster_nodata(raster, &b->nodata);
    *reader = (tt_crop_reader){b, info.width, info.height, NULL, read_planes, norm->count};
    return NULL;
}
