/* A raster set's fingerprint for the plan; see raster_fingerprint.h. */
#include "data/raster_fingerprint.h"

#include <string.h>

#include "core/status.h"

/* The median of n ints (sorted in place). */
static int median(int *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return v[n / 2];
}

tt_status tt_raster_fingerprint(tt_raster_set *set, const tt_raster_stats *stats,
                                tt_fingerprint *out)
{
    memset(out, 0, sizeof *out);
    int count = tt_raster_set_count(set), ws[256], hs[256], n = count < 256 ? count : 256;
    int64_t tiles = 0;
    out->min_width = out->min_height = 1 << 30;
    for (int i = 0; i < count; i++) {
        const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, i));
        if (i < n) ws[i] = in->width, hs[i] = in->height;
        if (in->width < out->min_width) out->min_width = in->width;
        if (in->height < out->min_height) out->min_height = in->height;
        if (in->width > out->max_width) out->max_width = in->width;
        if (in->height > out->max_height) out->max_height = in->height;
        tiles += (int64_t)((in->width + TT_RASTER_FINGERPRINT_TILE - 1) / TT_RASTER_FINGERPRINT_TILE) *
                 ((in->height + TT_RASTER_FINGERPRINT_TILE - 1) / TT_RASTER_FINGERPRINT_TILE);
    }
    out->median_width = median(ws, n), out->median_height = median(hs, n);
    out->images = tiles > 1 << 30 ? 1 << 30 : (int)tiles;
    out->images_read = count;
    out->raster_bands = stats->channels;
    out->mask_kind = TT_MASK_CLASS_INDEX;
    int classes = 2;
    for (int v = 0; v < 255; v++)
        if (stats->class_pixels[v] && v + 1 > classes) classes = v + 1;
    if (classes > TT_FINGERPRINT_MAX_CLASSES)
        return tt_error_new(TT_ERR_UNSUPPORTED, "the raster masks hold class %d; at most %d "
                            "classes are planned", classes - 1, TT_FINGERPRINT_MAX_CLASSES);
    out->classes = classes;
    out->foreground_classes = classes - 1;
    uint64_t labelled = stats->pixels - stats->ignored, foreground = 0;
    for (int c = 0; c < classes; c++) {
        out->cls[c].pixel_share = labelled ? (double)stats->class_pixels[c] / labelled : 0;
        if (c) foreground += stats->class_pixels[c];
    }
    out->ignore_share = stats->pixels ? (double)stats->ignored / stats->pixels : 0;
    out->foreground_share = stats->pixels ? (double)foreground / stats->pixels : 0;
    for (int c = 0; c < 3; c++) out->std[c] = 1;
    out->stride = 1;
    return NULL;
}
