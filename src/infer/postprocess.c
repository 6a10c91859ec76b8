/* Logits to masks, thresholds, small-component removal and mask resizing;
 * see postprocess.h. */
#include "infer/postprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "infer/predict.h"

void tt_pp_threshold(const float *probs, size_t count, float threshold, uint8_t *mask)
{
    for (size_t i = 0; i < count; i++) mask[i] = probs[i] > threshold;
}

/* During the search: 0 outside, 1 not yet visited, 2 visited. */
static tt_status check_connectivity(int connectivity)
{
    if (connectivity != 4 && connectivity != 8)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "component removal: connectivity %d; use 4 "
                            "or 8", connectivity);
    return NULL;
}

tt_status tt_pp_components(uint8_t *mask, int width, int height, int connectivity,
                           tt_pp_visit_fn visit, void *ctx)
{
    TT_TRY(check_connectivity(connectivity));
    size_t pixels = (size_t)width * height;
    for (size_t i = 0; i < pixels; i++) mask[i] = mask[i] != 0;
    uint32_t *queue = tt_malloc((pixels ? pixels : 1) * sizeof *queue);
    if (!queue)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "component removal: no memory for a %dx%d mask",
                            width, height);
    static const int dy[8] = {-1, 1, 0, 0, -1, -1, 1, 1}, dx[8] = {0, 0, -1, 1, -1, 1, -1, 1};
    for (size_t seed = 0; seed < pixels; seed++) {
        if (mask[seed] != 1) continue;
        /* Breadth-first: queue[0..end) is the whole component once done. */
        size_t head = 0, end = 0;
        queue[end++] = (uint32_t)seed;
        mask[seed] = 2;
        while (head < end) {
            uint32_t p = queue[head++];
            int y = (int)(p / (uint32_t)width), x = (int)(p % (uint32_t)width);
            for (int k = 0; k < connectivity; k++) {
                int ny = y + dy[k], nx = x + dx[k];
                if (ny < 0 || ny >= height || nx < 0 || nx >= width) continue;
                size_t q = (size_t)ny * width + nx;
                if (mask[q] == 1) {
                    mask[q] = 2;
                    queue[end++] = (uint32_t)q;
                }
            }
        }
        visit(ctx, mask, queue, end);
    }
    for (size_t i = 0; i < pixels; i++) mask[i] = mask[i] != 0;
    free(queue);
    return NULL;
}

typedef struct removal {
    size_t min_size, kept;
} removal;

static void remove_if_small(void *ctx, uint8_t *mask, const uint32_t *pixels, size_t count)
{
    removal *r = ctx;
    if (count < r->min_size)
        for (size_t i = 0; i < count; i++) mask[pixels[i]] = 0;
    else
        r->kept += count;
}

tt_status tt_pp_remove_small(uint8_t *mask, int width, int height, int min_size,
                             int connectivity, size_t *kept_pixels)
{
    TT_TRY(check_connectivity(connectivity));
    size_t pixels = (size_t)width * height;
    if (min_size <= 1) {
        size_t kept = 0;
        for (size_t i = 0; i < pixels; i++) kept += mask[i] = mask[i] != 0;
        if (kept_pixels) *kept_pixels = kept;
        return NULL;
    }
    removal r = {(size_t)min_size, 0};
    TT_TRY(tt_pp_components(mask, width, height, connectivity, remove_if_small, &r));
    if (kept_pixels) *kept_pixels = r.kept;
    return NULL;
}

void tt_pp_resize_nearest(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
    for (int y = 0; y < dh; y++) {
        int sy = (int)(((int64_t)2 * y + 1) * sh / (2 * (int64_t)dh));
        for (int x = 0; x < dw; x++) {
            int sx = (int)(((int64_t)2 * x + 1) * sw / (2 * (int64_t)dw));
            dst[(size_t)y * dw + x] = src[(size_t)sy * sw + sx];
        }
    }
}

/* For output index i along an axis of dst cells over src cells: the source
 * span [lo, hi) in source units, scaled by src/dst. */
static void span(int i, int src, int dst, double *lo, double *hi)
{
    *lo = (double)i * src / dst;
    *hi = (double)(i + 1) * src / dst;
}

tt_status tt_pp_resize_area(const float *src, int sw, int sh, float *dst, int dw, int dh)
{
    /* Separable: rows first into tmp (sh x dw), then columns. */
    double *tmp = tt_malloc((size_t)sh * dw * sizeof *tmp);
    if (!tmp)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "area resize %dx%d -> %dx%d: out of host memory",
                            sw, sh, dw, dh);
    for (int y = 0; y < sh; y++)
        for (int x = 0; x < dw; x++) {
            double lo, hi;
            span(x, sw, dw, &lo, &hi);
            int a = (int)floor(lo), b = (int)ceil(hi);
            if (b > sw) b = sw;
            double total = 0;
            for (int s = a; s < b; s++) {
                double part = fmin(hi, s + 1.0) - fmax(lo, (double)s);
                total += part * src[(size_t)y * sw + s];
            }
            tmp[(size_t)y * dw + x] = total / (hi - lo);
        }
    for (int y = 0; y < dh; y++) {
        double lo, hi;
        span(y, sh, dh, &lo, &hi);
        int a = (int)floor(lo), b = (int)ceil(hi);
        if (b > sh) b = sh;
        for (int x = 0; x < dw; x++) {
            double total = 0;
            for (int s = a; s < b; s++) {
                double part = fmin(hi, s + 1.0) - fmax(lo, (double)s);
                total += part * tmp[(size_t)s * dw + x];
            }
            dst[(size_t)y * dw + x] = (float)(total / (hi - lo));
        }
    }
    free(tmp);
    return NULL;
}

tt_status tt_predict_to_masks(float *logits, int classes, int width, int height, const tt_mask_rule *rule,
                              uint8_t *masks)
{
    size_t pixels = (size_t)width * height;
    if (rule->multi_label) {
        tt_predict_sigmoid(logits, classes, pixels);
        for (int c = 0; c < classes; c++) {
            size_t at = (size_t)c * pixels;
            float threshold = rule->class_threshold ? rule->class_threshold[c] : rule->threshold;
            int min_size = rule->class_min_size ? rule->class_min_size[c] : rule->min_size;
            tt_pp_threshold(logits + at, pixels, threshold, masks + at);
            if (min_size > 1) TT_TRY(tt_pp_remove_small(masks + at, width, height, min_size, 8, NULL));
        }
        return NULL;
    }
    tt_predict_argmax(logits, classes, pixels, masks);
    int any = rule->min_size > 1;
    for (int c = 1; c < classes && rule->class_min_size; c++) any |= rule->class_min_size[c] > 1;
    if (!any) return NULL;
    uint8_t *plane = tt_malloc(pixels ? pixels : 1);
    if (!plane)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "masks: no host memory for a %dx%d plane", width, height);
    tt_status status = NULL;
    for (int c = 1; c < classes; c++) {
        int min_size = rule->class_min_size ? rule->class_min_size[c] : rule->min_size;
        if (min_size <= 1) continue;
        for (size_t i = 0; i < pixels; i++) plane[i] = masks[i] == c;
        TT_CHECK(tt_pp_remove_small(plane, width, height, min_size, 8, NULL));
        for (size_t i = 0; i < pixels; i++)
            if (masks[i] == c && !plane[i]) masks[i] = 0;
    }
cleanup:
    free(plane);
    return status;
}
