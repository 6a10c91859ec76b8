/*
 * Crop augmentation on the host; see augment.h.  Flips and turns are one
 * index map applied alike to image and masks, so the two cannot drift; the
 * warp is one source map, sampled for the image and the masks alike.
 */
#include "data/augment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

#define PI 3.14159265358979323846

tt_augment_config tt_augment_defaults(void)
{
    return (tt_augment_config){.flips = 1, .rot90 = 1, .brightness = 0.1f, .contrast = 0.1f,
                               .flip_p = 0.5f, .rot90_p = 1, .brightness_p = 1, .contrast_p = 1};
}

tt_augment_params tt_augment_identity(void)
{
    return (tt_augment_params){.contrast = 1.0f, .zoom = 1.0f, .gamma = 1.0f, .saturation = 1.0f};
}

/* ---- the spec's table ------------------------------------------------- */

#define F(field) offsetof(tt_augment_config, field)
#define NO_FLAG ((size_t)-1)

typedef struct aug_key {
    const char *key;
    size_t offset;      /* a float of the config */
    float dflt, lo, hi;
} aug_key;

/* A transform: its flag (flip, rot90) or keys, the first of which turns it
 * on when above 0 (p, or brightness's and contrast's range); a flag's
 * transform is on when the flag is. */
typedef struct aug_row {
    const char *name;
    size_t flag;        /* an int of the config, or NO_FLAG */
    aug_key keys[4];
} aug_row;

static const aug_row rows[] = {
    {"flip", F(flips), {{"p", F(flip_p), 0.5f, 0, 1}}},
    {"rot90", F(rot90), {{"p", F(rot90_p), 1, 0, 1}}},
    {"brightness", NO_FLAG, {{"range", F(brightness), 0.1f, 0, 1}, {"p", F(brightness_p), 1, 0, 1}}},
    {"contrast", NO_FLAG, {{"range", F(contrast), 0.1f, 0, 1}, {"p", F(contrast_p), 1, 0, 1}}},
    {"affine", NO_FLAG, {{"p", F(affine_p), 0.5f, 0, 1}, {"shift", F(shift), 0.0625f, 0, 0.5f},
                         {"scale", F(scale), 0.1f, 0, 0.9f}, {"rotate", F(rotate), 15, 0, 180}}},
    {"grid", NO_FLAG, {{"p", F(grid_p), 0.3f, 0, 1}, {"steps", F(grid_steps), 5, 1, 64},
                       {"limit", F(grid_limit), 0.3f, 0, 0.9f}}},
    {"elastic", NO_FLAG, {{"p", F(elastic_p), 0.3f, 0, 1}, {"alpha", F(elastic_alpha), 8, 0, 256},
                          {"spacing", F(elastic_spacing), 32, 4, 4096}}},
    {"gamma", NO_FLAG, {{"p", F(gamma_p), 0.3f, 0, 1}, {"range", F(gamma), 0.2f, 0, 0.9f}}},
    {"hsv", NO_FLAG, {{"p", F(hsv_p), 0.3f, 0, 1}, {"hue", F(hue), 10, 0, 180},
                      {"sat", F(saturation), 0.2f, 0, 1}}},
    {"noise", NO_FLAG, {{"p", F(noise_p), 0.2f, 0, 1}, {"std", F(noise), 0.03f, 0, 1}}},
    {"blur", NO_FLAG, {{"p", F(blur_p), 0.1f, 0, 1}, {"sigma", F(blur), 1.0f, 0.3f, 16}}},
};
#define ROWS (sizeof rows / sizeof rows[0])

static float *field_of(tt_augment_config *c, size_t offset) { return (float *)((char *)c + offset); }

static const char *known_names(void)
{
    return "none, default, flip, rot90, brightness, contrast, affine, grid, elastic, gamma, hsv, "
           "noise, blur";
}

static tt_status parse_item(char *item, tt_augment_config *c)
{
    char *colon = strchr(item, ':');
    if (colon) *colon = '\0';
    const aug_row *row = NULL;
    for (size_t i = 0; i < ROWS; i++)
        if (strcmp(rows[i].name, item) == 0) row = &rows[i];
    if (!row)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--augment: unknown transform '%s'; the "
                            "transforms are %s", item, known_names());
    if (row->flag != NO_FLAG) *(int *)((char *)c + row->flag) = 1;
    for (int k = 0; k < 4 && row->keys[k].key; k++)
        *field_of(c, row->keys[k].offset) = row->keys[k].dflt;
    for (int first = 1; colon; first = 0) {
        char *pair = colon + 1;
        colon = strchr(pair, ':');
        if (colon) *colon = '\0';
        char *eq = strchr(pair, '=');
        const char *key = eq ? pair : row->keys[0].key, *value = eq ? eq + 1 : pair;
        if (eq) *eq = '\0';
        const aug_key *k = NULL;
        for (int j = 0; j < 4 && row->keys[j].key; j++)
            if (key && strcmp(row->keys[j].key, key) == 0) k = &row->keys[j];
        if (!k || (!eq && !first)) {
            char keys[96] = "";
            for (int j = 0; j < 4 && row->keys[j].key; j++)
                snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", j ? ", " : "",
                         row->keys[j].key);
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--augment %s: '%s' is not one of its "
                                "keys (%s); write %s:key=value", row->name, eq ? key : value,
                                keys[0] ? keys : "it has none", row->name);
        }
        char *end;
        float v = strtof(value, &end);
        if (end == value || *end || !(v >= k->lo && v <= k->hi))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--augment %s: %s '%s' is not a number "
                                "from %g to %g", row->name, k->key, value, k->lo, k->hi);
        *field_of(c, k->offset) = v;
    }
    return NULL;
}

tt_status tt_augment_parse(const char *spec, tt_augment_config *out)
{
    tt_augment_config c;
    memset(&c, 0, sizeof c);
    if (strcmp(spec, "default") == 0) {
        *out = tt_augment_defaults();
        return NULL;
    }
    char text[1024];
    if (strlen(spec) >= sizeof text)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--augment: the spec is too long");
    snprintf(text, sizeof text, "%s", spec);
    if (strcmp(text, "none") != 0) {
        char *save = NULL;
        for (char *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            while (*item == ' ') item++;
            if (strcmp(item, "default") == 0) {
                tt_augment_config d = tt_augment_defaults();
                c.flips = d.flips, c.rot90 = d.rot90;
                c.brightness = d.brightness, c.contrast = d.contrast;
                c.flip_p = d.flip_p, c.rot90_p = d.rot90_p;
                c.brightness_p = d.brightness_p, c.contrast_p = d.contrast_p;
                continue;
            }
            TT_TRY(parse_item(item, &c));
        }
    }
    *out = c;
    return NULL;
}

const char *tt_augment_format(const tt_augment_config *config, char *buf, size_t size)
{
    tt_augment_config c = *config;
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ROWS; i++) {
        const aug_row *row = &rows[i];
        int on = row->flag != NO_FLAG ? *(int *)((char *)&c + row->flag)
                                      : *field_of(&c, row->keys[0].offset) > 0;
        if (!on) continue;
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s",
                                 used ? "," : "", row->name);
        for (int k = 0; k < 4 && row->keys[k].key; k++)
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, ":%s=%g",
                                     row->keys[k].key, *field_of(&c, row->keys[k].offset));
    }
    if (!used) snprintf(buf, size, "none");
    return buf;
}

/* ---- drawing ---------------------------------------------------------- */

/* Uniform in [-1, 1). */
static float signed_unit(tt_rng *rng) { return (float)(2.0 * tt_rng_uniform(rng) - 1.0); }

void tt_augment_draw(const tt_augment_config *config, int square, tt_rng *rng, tt_augment_params *out)
{
    const tt_augment_config *c = config;
    *out = tt_augment_identity();
    /* 25 draws, always: the first five as flips, turns and jitter always
     * were, the probabilities of turns and jitter last */
    double fh = tt_rng_uniform(rng), fv = tt_rng_uniform(rng), turn = tt_rng_uniform(rng);
    double b = tt_rng_uniform(rng), k = tt_rng_uniform(rng);
    double affine = tt_rng_uniform(rng);
    float dx = signed_unit(rng), dy = signed_unit(rng), zoom = signed_unit(rng), angle = signed_unit(rng);
    double grid = tt_rng_uniform(rng), elastic = tt_rng_uniform(rng);
    uint64_t warp_seed = tt_rng_u64(rng);
    double gamma = tt_rng_uniform(rng);
    float gamma_v = signed_unit(rng);
    double hsv = tt_rng_uniform(rng);
    float hue = signed_unit(rng), sat = signed_unit(rng);
    double noise = tt_rng_uniform(rng);
    uint64_t noise_seed = tt_rng_u64(rng);
    double blur = tt_rng_uniform(rng), blur_v = tt_rng_uniform(rng);
    double turn_p = tt_rng_uniform(rng), b_p = tt_rng_uniform(rng), k_p = tt_rng_uniform(rng);
    if (c->flips) {
        out->flip_h = fh < c->flip_p;
        out->flip_v = fv < c->flip_p;
    }
    if (c->rot90 && square && turn_p < c->rot90_p) out->quarter_turns = (int)(turn * 4.0) & 3;
    if (b_p < c->brightness_p) out->brightness = (float)((2.0 * b - 1.0) * c->brightness);
    if (k_p < c->contrast_p) out->contrast = (float)(1.0 + (2.0 * k - 1.0) * c->contrast);
    out->warp_seed = warp_seed;
    if (affine < c->affine_p) {
        out->affine = 1;
        out->dx = dx * c->shift, out->dy = dy * c->shift; /* of the side; in px at the map */
        out->zoom = 1.0f + zoom * c->scale;
        out->angle = (float)(angle * c->rotate * PI / 180.0);
    }
    if (grid < c->grid_p) {
        out->grid = 1;
        out->grid_steps = c->grid_steps, out->grid_limit = c->grid_limit;
    }
    if (elastic < c->elastic_p) {
        out->elastic = 1;
        out->elastic_alpha = c->elastic_alpha, out->elastic_spacing = c->elastic_spacing;
    }
    if (gamma < c->gamma_p) out->gamma = 1.0f + gamma_v * c->gamma;
    if (hsv < c->hsv_p) out->hue = hue * c->hue, out->saturation = 1.0f + sat * c->saturation;
    if (noise < c->noise_p) out->noise = c->noise, out->noise_seed = noise_seed;
    if (blur < c->blur_p) out->blur = (float)(0.3 + blur_v * (c->blur - 0.3));
}

/* ---- the warp --------------------------------------------------------- */

int tt_augment_warps(const tt_augment_params *p) { return p->affine || p->grid || p->elastic; }

/* Grid distortion along one axis of n + 1 pixels (0..n): `steps` cells
 * whose widths are stretched by factors 1 + u * limit, the ends fixed;
 * map[i] is where output coordinate i comes from. */
static void grid_axis(tt_rng *rng, int steps, float limit, int n, float *map)
{
    double f[65], total = 0, start[66];
    for (int k = 0; k < 64; k++) { /* 64 draws, always */
        f[k] = 1.0 + signed_unit(rng) * limit;
        if (k < steps) total += f[k];
    }
    start[0] = 0;
    for (int k = 0; k < steps; k++) start[k + 1] = start[k] + f[k] / total * n;
    for (int i = 0; i <= n; i++) {
        double cell = n ? (double)i * steps / n : 0;
        int k = (int)cell < steps ? (int)cell : steps - 1;
        double t = cell - k;
        map[i] = (float)(start[k] + t * (start[k + 1] - start[k]));
    }
}

void tt_augment_source_map(const tt_augment_params *p, int w, int h, float *sx, float *sy)
{
    float *gx = NULL, *gy = NULL, *ex = NULL, *ey = NULL;
    int cols = 0, rows_ = 0;
    float spacing = p->elastic_spacing > 0 ? p->elastic_spacing : 1;
    if (p->grid) {
        gx = tt_malloc(sizeof *gx * (size_t)w);
        gy = tt_malloc(sizeof *gy * (size_t)h);
        tt_rng r = tt_rng_from(p->warp_seed, 1, 0);
        int steps = (int)p->grid_steps < 1 ? 1 : (int)p->grid_steps > 64 ? 64 : (int)p->grid_steps;
        if (gx) grid_axis(&r, steps, p->grid_limit, w - 1, gx);
        if (gy) grid_axis(&r, steps, p->grid_limit, h - 1, gy);
    }
    if (p->elastic) { /* displacements at control points, interpolated bilinearly */
        cols = (int)ceilf((w - 1) / spacing) + 1, rows_ = (int)ceilf((h - 1) / spacing) + 1;
        ex = tt_malloc(sizeof *ex * (size_t)cols * rows_);
        ey = tt_malloc(sizeof *ey * (size_t)cols * rows_);
        tt_rng r = tt_rng_from(p->warp_seed, 2, 0);
        for (int i = 0; ex && ey && i < cols * rows_; i++) {
            ex[i] = signed_unit(&r) * p->elastic_alpha;
            ey[i] = signed_unit(&r) * p->elastic_alpha;
        }
    }
    float cx = 0.5f * (w - 1), cy = 0.5f * (h - 1);
    float ca = cosf(p->angle), sa = sinf(p->angle), inv = 1.0f / p->zoom;
    float shx = p->dx * w, shy = p->dy * h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float px = gx ? gx[x] : (float)x, py = gy ? gy[y] : (float)y;
            if (ex && ey) {
                float u = x / spacing, v = y / spacing;
                int i = (int)u < cols - 1 ? (int)u : cols - 2, j = (int)v < rows_ - 1 ? (int)v : rows_ - 2;
                if (i < 0) i = 0;
                if (j < 0) j = 0;
                float a = cols > 1 ? u - i : 0, b = rows_ > 1 ? v - j : 0;
                int i1 = cols > 1 ? i + 1 : i, j1 = rows_ > 1 ? j + 1 : j;
                px += (1 - b) * ((1 - a) * ex[j * cols + i] + a * ex[j * cols + i1]) +
                      b * ((1 - a) * ex[j1 * cols + i] + a * ex[j1 * cols + i1]);
                py += (1 - b) * ((1 - a) * ey[j * cols + i] + a * ey[j * cols + i1]) +
                      b * ((1 - a) * ey[j1 * cols + i] + a * ey[j1 * cols + i1]);
            }
            if (p->affine) { /* forward: zoom and turn about the centre, then shift */
                float qx = px - cx - shx, qy = py - cy - shy;
                px = cx + inv * (ca * qx + sa * qy);
                py = cy + inv * (-sa * qx + ca * qy);
            }
            sx[(size_t)y * w + x] = px;
            sy[(size_t)y * w + x] = py;
        }
    free(gx), free(gy), free(ex), free(ey);
}

void tt_augment_sample(const float *sx, const float *sy, int w, int h, int wx0, int wy0, int ww,
                       int wh, const uint8_t *win_rgb, const uint8_t *win_masks, int planes,
                       uint8_t *rgb, uint8_t *masks)
{
    size_t plane = (size_t)ww * wh;
    for (size_t i = 0; i < (size_t)w * h; i++) {
        float fx = sx[i] - (float)wx0, fy = sy[i] - (float)wy0;
        float x0f = floorf(fx), y0f = floorf(fy);
        int x0 = (int)x0f, y0 = (int)y0f;
        float a = fx - x0f, b = fy - y0f;
        for (int ch = 0; ch < 3; ch++) {
            float v = 0;
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    int xx = x0 + dx, yy = y0 + dy;
                    float wgt = (dx ? a : 1 - a) * (dy ? b : 1 - b);
                    if (xx >= 0 && yy >= 0 && xx < ww && yy < wh && wgt > 0)
                        v += wgt * win_rgb[((size_t)yy * ww + xx) * 3 + ch];
                }
            rgb[i * 3 + ch] = (uint8_t)(v > 255 ? 255 : v + 0.5f);
        }
        int nx = (int)floorf(fx + 0.5f), ny = (int)floorf(fy + 0.5f);
        int inside = nx >= 0 && ny >= 0 && nx < ww && ny < wh;
        for (int p = 0; p < planes && masks; p++)
            masks[(size_t)p * w * h + i] =
                inside ? win_masks[(size_t)p * plane + (size_t)ny * ww + nx] : 255;
    }
}

/* ---- flips and turns -------------------------------------------------- */

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

/* ---- colour ----------------------------------------------------------- */

static uint8_t to_byte(double v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
}

/* Hue turned by `degrees` and saturation scaled, through HSV. */
static void hsv_shift(uint8_t *px, float degrees, float factor)
{
    double r = px[0] / 255.0, g = px[1] / 255.0, b = px[2] / 255.0;
    double mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b)), d = mx - mn, hue = 0;
    if (d > 0) {
        if (mx == r) hue = fmod((g - b) / d, 6.0);
        else if (mx == g) hue = (b - r) / d + 2.0;
        else hue = (r - g) / d + 4.0;
        hue *= 60.0;
    }
    double s = mx > 0 ? d / mx : 0, v = mx;
    hue = fmod(hue + degrees + 360.0, 360.0);
    s = fmin(1.0, s * factor);
    double c = v * s, x = c * (1 - fabs(fmod(hue / 60.0, 2.0) - 1)), m = v - c;
    double rgb[3];
    int sector = (int)(hue / 60.0) % 6;
    static const int order[6][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}};
    double parts[3] = {c, x, 0};
    for (int k = 0; k < 3; k++) rgb[k] = parts[order[sector][k]];
    for (int k = 0; k < 3; k++) px[k] = to_byte((rgb[k] + m) * 255.0);
}

/* One pass of a 1-D kernel k[0..2r] along the rows or the columns, edges
 * clamped, from src to dst. */
static void convolve(const uint8_t *src, uint8_t *dst, int w, int h, const double *k, int r,
                     int along_rows)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < 3; ch++) {
                double v = 0;
                for (int i = -r; i <= r; i++) {
                    int xx = x, yy = y;
                    if (along_rows) xx = x + i < 0 ? 0 : x + i >= w ? w - 1 : x + i;
                    else yy = y + i < 0 ? 0 : y + i >= h ? h - 1 : y + i;
                    v += k[i + r] * src[((size_t)yy * w + xx) * 3 + ch];
                }
                dst[((size_t)y * w + x) * 3 + ch] = to_byte(v);
            }
}

/* A separable Gaussian of sigma, edges clamped: rows into scratch, then
 * columns back. */
static void blur(uint8_t *rgb, int w, int h, float sigma, uint8_t *scratch)
{
    int r = (int)ceilf(3 * sigma);
    if (r > 48) r = 48;
    double k[97], sum = 0;
    for (int i = -r; i <= r; i++) sum += k[i + r] = exp(-0.5 * i * i / ((double)sigma * sigma));
    for (int i = 0; i <= 2 * r; i++) k[i] /= sum;
    convolve(rgb, scratch, w, h, k, r, 1);
    convolve(scratch, rgb, w, h, k, r, 0);
}

/* Gaussian noise of standard deviation sigma (image units), Box-Muller
 * from the crop's own generator. */
static void add_noise(uint8_t *rgb, size_t values, float sigma, uint64_t seed)
{
    tt_rng r = tt_rng_from(seed, 3, 0);
    for (size_t i = 0; i < values; i += 2) {
        double u = tt_rng_uniform(&r), v = tt_rng_uniform(&r);
        double radius = sqrt(-2.0 * log(1.0 - u)) * sigma * 255.0;
        rgb[i] = to_byte(rgb[i] + radius * cos(2 * PI * v));
        if (i + 1 < values) rgb[i + 1] = to_byte(rgb[i + 1] + radius * sin(2 * PI * v));
    }
}

void tt_augment_apply(const tt_augment_params *params, int w, int h, uint8_t *rgb, uint8_t *masks,
                      int planes, uint8_t *scratch)
{
    const tt_augment_params *p = params;
    TT_ASSERT(p->quarter_turns == 0 || w == h);
    size_t values = (size_t)w * h * 3;
    if (p->flip_h || p->flip_v || p->quarter_turns) {
        remap(p, w, h, rgb, 3, scratch);
        for (int k = 0; k < planes && masks; k++) remap(p, w, h, masks + (size_t)k * w * h, 1, scratch);
    }
    if (p->brightness != 0.0f || p->contrast != 1.0f || p->gamma != 1.0f) {
        uint8_t table[256];
        for (int v = 0; v < 256; v++) {
            double x = ((v / 255.0 - 0.5) * p->contrast + 0.5 + p->brightness) * 255.0;
            x = x < 0 ? 0 : x > 255 ? 255 : x;
            table[v] = (uint8_t)lround(x);
            if (p->gamma != 1.0f) table[v] = to_byte(255.0 * pow(table[v] / 255.0, p->gamma));
        }
        for (size_t i = 0; i < values; i++) rgb[i] = table[rgb[i]];
    }
    if (p->hue != 0.0f || p->saturation != 1.0f)
        for (size_t i = 0; i < values; i += 3) hsv_shift(rgb + i, p->hue, p->saturation);
    if (p->blur > 0) blur(rgb, w, h, p->blur, scratch);
    if (p->noise > 0) add_noise(rgb, values, p->noise, p->noise_seed);
}
