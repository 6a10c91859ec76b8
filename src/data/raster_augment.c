/* Flips and quarter turns of N-band raster crops; see raster_augment.h. */
#include "data/raster_augment.h"

#include <string.h>

void tt_raster_augment_geometry(const tt_augment_params *p, int w, int h, float *planes,
                                int channels, uint8_t *mask, float *scratch, int *map)
{
    int turns = w == h ? p->quarter_turns & 3 : 0;
    if (!p->flip_h && !p->flip_v && !turns) return;
    size_t plane = (size_t)w * h;
    /* map[dest] = the source pixel it takes */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sx = x, sy = y;
            for (int t = 0; t < turns; t++) { /* undo one counter-clockwise turn */
                int tx = h - 1 - sy;
                sy = sx, sx = tx;
            }
            if (p->flip_v) sy = h - 1 - sy;
            if (p->flip_h) sx = w - 1 - sx;
            map[(size_t)y * w + x] = sy * w + sx;
        }
    for (int c = 0; c < channels; c++) {
        float *src = planes + (size_t)c * plane;
        memcpy(scratch, src, plane * sizeof *scratch);
        for (size_t i = 0; i < plane; i++) src[i] = scratch[map[i]];
    }
    uint8_t *bytes = (uint8_t *)scratch;
    memcpy(bytes, mask, plane);
    for (size_t i = 0; i < plane; i++) mask[i] = bytes[map[i]];
}
