/* Masks over images; see overlay.h. */
#include "infer/overlay.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/image.h"

static const uint8_t colours[12][3] = {
    {230, 25, 75},  {60, 180, 75},  {255, 225, 25}, {0, 130, 200},  {245, 130, 48}, {145, 30, 180},
    {70, 240, 240}, {240, 50, 230}, {210, 245, 60}, {250, 190, 190}, {0, 128, 128},  {170, 110, 40},
};

const uint8_t *tt_overlay_colour(int k) { return colours[(k < 0 ? -k : k) % 12]; }

void tt_overlay(const uint8_t *rgb, size_t pixels, int classes, const uint8_t *planes,
                const uint8_t *index, uint8_t *out)
{
    for (size_t p = 0; p < pixels; p++) {
        int sum[3] = {0, 0, 0}, hits = 0;
        if (planes) {
            for (int c = 0; c < classes; c++)
                if (planes[(size_t)c * pixels + p]) {
                    for (int j = 0; j < 3; j++) sum[j] += colours[c % 12][j];
                    hits++;
                }
        } else if (index[p] == 255) {
            sum[0] = sum[1] = sum[2] = 64; /* ignore: darkened */
            hits = 1;
        } else if (index[p] > 0) {
            for (int j = 0; j < 3; j++) sum[j] = colours[index[p] % 12][j];
            hits = 1;
        }
        for (int j = 0; j < 3; j++)
            out[3 * p + j] = hits ? (uint8_t)((rgb[3 * p + j] + sum[j] / hits + 1) / 2) : rgb[3 * p + j];
    }
}

void tt_overlay_shrink(const uint8_t *src, int w, int h, int factor, uint8_t *dst)
{
    int dw = (w + factor - 1) / factor, dh = (h + factor - 1) / factor;
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++) {
            unsigned sum[3] = {0, 0, 0}, n = 0;
            for (int sy = y * factor; sy < (y + 1) * factor && sy < h; sy++)
                for (int sx = x * factor; sx < (x + 1) * factor && sx < w; sx++, n++)
                    for (int j = 0; j < 3; j++) sum[j] += src[3 * ((size_t)sy * w + sx) + j];
            for (int j = 0; j < 3; j++) dst[3 * ((size_t)y * dw + x) + j] = (uint8_t)((sum[j] + n / 2) / n);
        }
}

tt_status tt_overlay_write_pair(const char *path, const uint8_t *left, const uint8_t *right, int w,
                                int h, int max_width)
{
    enum { GAP = 8 };
    int factor = max_width > 0 ? (w + max_width - 1) / max_width : 1;
    if (factor < 1) factor = 1;
    int pw = (w + factor - 1) / factor, ph = (h + factor - 1) / factor, ow = 2 * pw + GAP;
    uint8_t *panel = tt_malloc((size_t)pw * ph * 3), *pair = tt_malloc((size_t)ow * ph * 3);
    if (!panel || !pair) {
        free(panel), free(pair);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "no host memory for the picture %s", path);
    }
    memset(pair, 255, (size_t)ow * ph * 3);
    for (int side = 0; side < 2; side++) {
        tt_overlay_shrink(side ? right : left, w, h, factor, panel);
        for (int y = 0; y < ph; y++)
            memcpy(pair + 3 * ((size_t)y * ow + (size_t)side * (pw + GAP)), panel + 3 * (size_t)y * pw,
                   (size_t)pw * 3);
    }
    tt_status status = tt_image_write_png(path, ow, ph, 3, pair);
    free(panel), free(pair);
    return status;
}
