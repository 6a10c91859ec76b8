/*
 * Crop augmentation on the host; see augment.h.  The geometry is one
 * index map applied alike to image and masks, so the two cannot drift.
 */
#include "data/augment.h"

#include <math.h>
#include <string.h>

#include "core/status.h"

tt_augment_config tt_augment_defaults(void)
{
    tt_augment_config c = {1, 1, 0.1f, 0.1f};
    return c;
}

tt_augment_params tt_augment_identity(void)
{
    tt_augment_params p = {0, 0, 0, 0.0f, 1.0f};
    return p;
}

void tt_augment_draw(const tt_augment_config *config, int square, tt_rng *rng, tt_augment_params *out)
{
    /* five draws, always */
    double fh = tt_rng_uniform(rng), fv = tt_rng_uniform(rng), turn = tt_rng_uniform(rng);
    double b = tt_rng_uniform(rng), k = tt_rng_uniform(rng);
    *out = tt_augment_identity();
    if (config->flips) {
        out->flip_h = fh < 0.5;
        out->flip_v = fv < 0.5;
    }
    if (config->rot90 && square) out->quarter_turns = (int)(turn * 4.0) & 3;
    out->brightness = (float)((2.0 * b - 1.0) * config->brightness);
    out->contrast = (float)(1.0 + (2.0 * k - 1.0) * config->contrast);
}

/* The source pixel (sx, sy) that lands on destination (x, y).  The forward
 * map is: flip_h, flip_v, then quarter turns counter-clockwise. */
static void source_of(const tt_augment_params *p, int w, int h, int x, int y, int *sx, int *sy)
{
    /* undo the turns: one counter-clockwise turn of a square n x n maps
     * (x, y) -> (y, n - 1 - x), so its inverse maps (x, y) -> (n - 1 - y, x) */
    for (int t = 0; t < p->quarter_turns; t++) {
        int nx = w - 1 - y, ny = x;
        x = nx;
        y = ny;
    }
    if (p->flip_v) y = h - 1 - y;
    if (p->flip_h) x = w - 1 - x;
    *sx = x;
    *sy = y;
}

static void remap(const tt_augment_params *p, int w, int h, uint8_t *data, int bpp, uint8_t *scratch)
{
    memcpy(scratch, data, (size_t)w * h * bpp);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sx, sy;
            source_of(p, w, h, x, y, &sx, &sy);
            memcpy(data + ((size_t)y * w + x) * bpp, scratch + ((size_t)sy * w + sx) * bpp, (size_t)bpp);
        }
}

void tt_augment_apply(const tt_augment_params *params, int w, int h, uint8_t *rgb, uint8_t *masks,
                      int planes, uint8_t *scratch)
{
    TT_ASSERT(params->quarter_turns == 0 || w == h);
    if (params->flip_h || params->flip_v || params->quarter_turns) {
        remap(params, w, h, rgb, 3, scratch);
        for (int p = 0; p < planes && masks; p++) remap(params, w, h, masks + (size_t)p * w * h, 1, scratch);
    }
    if (params->brightness != 0.0f || params->contrast != 1.0f) {
        uint8_t table[256];
        for (int v = 0; v < 256; v++) {
            double x = ((v / 255.0 - 0.5) * params->contrast + 0.5 + params->brightness) * 255.0;
            x = x < 0 ? 0 : x > 255 ? 255 : x;
            table[v] = (uint8_t)lround(x);
        }
        for (size_t i = 0; i < (size_t)w * h * 3; i++) rgb[i] = table[rgb[i]];
    }
}
