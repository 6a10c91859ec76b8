/* A raster's bands, normalised as training normalised them; see
 * band_reader.h. */
#include "infer/band_reader.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"

static tt_status read_planes(void *ctx, int x0, int y0, int w, int h, float *planes)
{
    const tt_band_reader *b = ctx;
    int channels = b->norm.count;
    TT_TRY(tt_raster_read_bands(b->raster, x0, y0, w, h, b->norm.bands, channels, planes));
    size_t plane = (size_t)w * h;
    for (size_t i = 0; i < plane; i++) {
        int off = 0;
        for (int c = 0; b->has_nodata && !off && c < channels; c++) {
            float v = planes[(size_t)c * plane + i];
            off = isnan(b->nodata) ? isnan(v) : v == (float)b->nodata;
        }
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
