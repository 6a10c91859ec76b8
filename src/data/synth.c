/*
 * The synthetic dataset writer (see synth.h).  Rendering is per pixel from
 * Perlin noise (stb_perlin); images go out through stb_image_write.
 */
#include "data/synth.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb_image_write.h>
#include <stb_perlin.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "data/rle.h"
#include "data/rng.h"

#define SYNTH_MAX_BLOBS 64

typedef struct synth_blob {
    int cls;            /* 0-based blob class */
    float cx, cy, rx, ry, z;
} synth_blob;

static const uint8_t class_colours[8][3] = {
    {235, 190, 90},  {120, 220, 140}, {230, 110, 160}, {110, 170, 240},
    {250, 240, 200}, {170, 120, 230}, {240, 140, 80},  {90, 220, 220},
};

const char *tt_synth_label(int k, char *buf, size_t size)
{
    static const char *clouds[4] = {"Fish", "Flower", "Gravel", "Sugar"};
    if (k < 4) snprintf(buf, size, "%s", clouds[k]);
    else snprintf(buf, size, "Class%d", k + 1);
    return buf;
}

static int blob_classes(const tt_synth_config *c)
{
    return c->format == TT_SYNTH_FOLDER ? c->classes - 1 : c->classes;
}

tt_status tt_synth_validate(const tt_synth_config *c)
{
    if (!c->out_dir || !*c->out_dir)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "synth: no output directory; give --out DIR");
    if (c->count < 1 || c->count > 1000000)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "synth: --count %d; give 1 to 1000000 images", c->count);
    if (c->height < 1 || c->width < 1 || c->height > 65500 || c->width > 65500 ||
        (uint64_t)c->height * c->width > (1ULL << 28))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --size %dx%d; give HxW with sides of 1 to 65500 and at most 2^28 pixels",
                            c->height, c->width);
    if (c->format == TT_SYNTH_KAGGLE_RLE && (c->classes < 1 || c->classes > 32))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --classes %d for kaggle-rle; give 1 to 32 labels (Understanding Clouds has 4)",
                            c->classes);
    if (c->format == TT_SYNTH_FOLDER && (c->classes < 2 || c->classes > 255))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --classes %d for folder; give 2 to 255 classes, background included",
                            c->classes);
    if (c->region_scale < 0 || c->region_scale > 10)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --region-scale %g; give a factor of the blob radii from 0.01 to 10",
                            c->region_scale);
    if (c->region_scale > 0 && c->region_scale < 0.01)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --region-scale %g; give a factor of the blob radii from 0.01 to 10",
                            c->region_scale);
    if (c->ignore_regions < 0 || c->ignore_regions > SYNTH_MAX_BLOBS)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --ignore-regions %d; give 0 to %d per image", c->ignore_regions,
                            SYNTH_MAX_BLOBS);
    if (c->ignore_regions && c->format != TT_SYNTH_FOLDER)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --ignore-regions marks mask pixels 255, which only the folder "
                            "layout has; give --format folder");
    if (c->rare_class < 0 || c->rare_class > 1 || (c->rare_class > 0 && blob_classes(c) < 2))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "synth: --rare-class %g; give a probability from 0.001 to 1, with at "
                            "least two blob classes (kaggle-rle --classes 2, folder 3)",
                            c->rare_class);
    if (c->format != TT_SYNTH_KAGGLE_RLE && c->format != TT_SYNTH_FOLDER)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "synth: unknown format %d", (int)c->format);
    return NULL;
}


/* Class texture in [0, 1]: four families, finer for higher classes. */
static float class_texture(int cls, float x, float y, float z)
{
    float f = (1.0f / 10.0f) * (1.0f + 0.35f * (float)(cls / 4));
    float v;
    switch (cls % 4) {
    case 0: v = 0.5f + 0.5f * stb_perlin_fbm_noise3(x * f, y * f, z, 2.0f, 0.5f, 3); break;
    case 1: v = stb_perlin_ridge_noise3(x * f * 0.5f, y * f * 0.5f, z, 2.0f, 0.5f, 1.0f, 3); break;
    case 2: v = stb_perlin_turbulence_noise3(x * f * 0.7f, y * f * 0.7f, z, 2.0f, 0.5f, 3); break;
    default: v = 0.5f + 0.5f * sinf(x * f * 2.5f + 3.0f * stb_perlin_noise3(x * f * 0.3f, y * f * 0.3f, z, 0, 0, 0));
    }
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

void tt_synth_render(const tt_synth_config *config, int index, uint8_t *rgb, uint8_t *labels, uint8_t *top)
{
    int w = config->width, h = config->height, fg = blob_classes(config);
    tt_rng rng = tt_rng_from(config->seed, (uint64_t)index, 0x73796e7468ULL /* "synth" */);
    float z0 = (float)(tt_rng_uniform(&rng) * 200.0);
    synth_blob blobs[SYNTH_MAX_BLOBS];
    int nblobs = 0;
    float side = (float)(w < h ? w : h);
    float scale = config->region_scale > 0 ? (float)config->region_scale : 1.0f;
    /* every image shows at least one class; a rare last class is never that one */
    int rare = config->rare_class > 0 && fg > 1;
    int forced = (int)tt_rng_below(&rng, (uint64_t)(rare ? fg - 1 : fg));
    for (int k = 0; k < fg && nblobs < SYNTH_MAX_BLOBS; k++) {
        double present = rare && k == fg - 1 ? config->rare_class : 0.6;
        if (k != forced && tt_rng_uniform(&rng) > present) continue;
        int n = 1 + (int)tt_rng_below(&rng, 2);
        for (int b = 0; b < n && nblobs < SYNTH_MAX_BLOBS; b++) {
            synth_blob *bl = &blobs[nblobs++];
            bl->cls = k;
            bl->cx = (float)(tt_rng_uniform(&rng) * w);
            bl->cy = (float)(tt_rng_uniform(&rng) * h);
            bl->rx = scale * side * (float)(0.12 + 0.2 * tt_rng_uniform(&rng)) + 2.0f;
            bl->ry = scale * side * (float)(0.12 + 0.2 * tt_rng_uniform(&rng)) + 2.0f;
            bl->z = (float)(tt_rng_uniform(&rng) * 200.0);
        }
    }
    /* ignore regions: plain ellipses, drawn after the blobs from the same
     * stream, so the blobs are the same with or without them */
    float ignore[SYNTH_MAX_BLOBS][4]; /* cx, cy, rx, ry */
    for (int k = 0; k < config->ignore_regions && k < SYNTH_MAX_BLOBS; k++) {
        ignore[k][0] = (float)(tt_rng_uniform(&rng) * w);
        ignore[k][1] = (float)(tt_rng_uniform(&rng) * h);
        ignore[k][2] = scale * side * (float)(0.04 + 0.08 * tt_rng_uniform(&rng)) + 1.0f;
        ignore[k][3] = scale * side * (float)(0.04 + 0.08 * tt_rng_uniform(&rng)) + 1.0f;
    }
    memset(labels, 0, (size_t)fg * w * h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            float fx = (float)x, fy = (float)y;
            /* background: a cloud field over a dark ocean */
            float cloud = 0.5f + 0.5f * stb_perlin_fbm_noise3(fx / 200.0f, fy / 200.0f, z0, 2.0f, 0.5f, 4);
            cloud = cloud < 0 ? 0 : cloud > 1 ? 1 : cloud;
            float r = 25 + 150 * cloud * cloud, g = 45 + 145 * cloud * cloud, b = 80 + 130 * cloud * cloud;
            /* multi-label (kaggle-rle): every covering blob shows, overlaps
             * mix the classes' colours and textures, so each label of a pixel
             * is visible.  Class-index (folder): the last blob, the "top"
             * class the mask holds, hides those under it. */
            int last = -1, covering = 0;
            float cr = 0, cg = 0, cb = 0;
            for (int k = 0; k < nblobs; k++) {
                const synth_blob *bl = &blobs[k];
                float dx = (fx - bl->cx) / bl->rx, dy = (fy - bl->cy) / bl->ry;
                float d = dx * dx + dy * dy;
                if (d > 1.6f) continue;
                d += 0.45f * stb_perlin_noise3(fx / 24.0f, fy / 24.0f, bl->z, 0, 0, 0);
                if (d >= 1.0f) continue;
                uint8_t *label = &labels[(size_t)bl->cls * w * h + i];
                last = k;
                if (config->format == TT_SYNTH_FOLDER) cr = cg = cb = 0, covering = 0;
                else if (*label) continue; /* two blobs of one class: shown once */
                *label = 1;
                float t = class_texture(bl->cls, fx, fy, bl->z);
                const uint8_t *col = class_colours[bl->cls % 8];
                float shade = 0.45f + 0.55f * t;
                cr += col[0] * shade, cg += col[1] * shade, cb += col[2] * shade;
                covering++;
            }
            if (covering) {
                const float mix = 0.8f;
                r = (1 - mix) * r + mix * cr / (float)covering;
                g = (1 - mix) * g + mix * cg / (float)covering;
                b = (1 - mix) * b + mix * cb / (float)covering;
            }
            if (top) top[i] = (uint8_t)(last >= 0 ? blobs[last].cls + 1 : 0);
            for (int k = 0; top && k < config->ignore_regions; k++) {
                float dx = (fx - ignore[k][0]) / ignore[k][2], dy = (fy - ignore[k][1]) / ignore[k][3];
                if (dx * dx + dy * dy < 1.0f) top[i] = 255;
            }
            if (config->grey) r = g = b = 0.299f * r + 0.587f * g + 0.114f * b;
            rgb[3 * i + 0] = (uint8_t)(r > 255 ? 255 : r);
            rgb[3 * i + 1] = (uint8_t)(g > 255 ? 255 : g);
            rgb[3 * i + 2] = (uint8_t)(b > 255 ? 255 : b);
        }
}

/* ---- writing ----------------------------------------------------------------- */

tt_status tt_synth_write(const tt_synth_config *config)
{
    TT_TRY(tt_synth_validate(config));
    const tt_synth_config *c = config;
    int kaggle = c->format == TT_SYNTH_KAGGLE_RLE, fg = blob_classes(c);
    char path[PATH_MAX], label[32];
    tt_status status = NULL;
    FILE *csv = NULL;
    size_t px = (size_t)c->width * c->height;
    uint8_t *rgb = tt_malloc(px * 3), *labels = tt_malloc(px * fg), *top = tt_malloc(px);
    if (!rgb || !labels || !top) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "synth: no host memory for %d x %d images", c->height, c->width);
        goto cleanup;
    }
    snprintf(path, sizeof path, "%s/%s", c->out_dir, kaggle ? "train_images" : "images");
    TT_CHECK(tt_make_dirs(path));
    if (!kaggle) {
        snprintf(path, sizeof path, "%s/masks", c->out_dir);
        TT_CHECK(tt_make_dirs(path));
    } else {
        snprintf(path, sizeof path, "%s/train.csv", c->out_dir);
        csv = fopen(path, "w");
        if (!csv || fprintf(csv, "Image_Label,EncodedPixels\n") < 0) {
            status = tt_error_new(TT_ERR_IO, "synth: cannot write %s: %s", path, strerror(errno));
            goto cleanup;
        }
    }
    int channels = c->grey ? 1 : 3;
    for (int n = 0; n < c->count; n++) {
        tt_synth_render(c, n, rgb, labels, top);
        for (size_t i = 0; channels == 1 && i < px; i++) rgb[i] = rgb[3 * i]; /* in place: i <= 3i */
        char name[32];
        snprintf(name, sizeof name, "synth_%05d", n);
        snprintf(path, sizeof path, "%s/%s/%s.%s", c->out_dir, kaggle ? "train_images" : "images", name,
                 kaggle ? "jpg" : "png");
        int ok = kaggle ? stbi_write_jpg(path, c->width, c->height, channels, rgb, 92)
                        : stbi_write_png(path, c->width, c->height, channels, rgb, c->width * channels);
        if (!ok) {
            status = tt_error_new(TT_ERR_IO, "synth: cannot write %s; check the space in %s", path, c->out_dir);
            goto cleanup;
        }
        if (kaggle) {
            for (int k = 0; k < fg; k++) {
                char *rle = NULL;
                TT_CHECK(tt_rle_encode(labels + (size_t)k * px, c->width, c->height, &rle));
                int written = fprintf(csv, "%s.jpg_%s,%s\n", name, tt_synth_label(k, label, sizeof label), rle);
                free(rle);
                if (written < 0) {
                    status = tt_error_new(TT_ERR_IO, "synth: writing %s/train.csv failed", c->out_dir);
                    goto cleanup;
                }
            }
        } else {
            snprintf(path, sizeof path, "%s/masks/%s.png", c->out_dir, name);
            if (!stbi_write_png(path, c->width, c->height, 1, top, c->width)) {
                status = tt_error_new(TT_ERR_IO, "synth: cannot write %s", path);
                goto cleanup;
            }
        }
    }
    if (csv) {
        int failed = fclose(csv) != 0;
        csv = NULL;
        if (failed) status = tt_error_new(TT_ERR_IO, "synth: closing %s/train.csv failed", c->out_dir);
    }
cleanup:
    if (csv) fclose(csv);
    free(rgb);
    free(labels);
    free(top);
    return status;
}
