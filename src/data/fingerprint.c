/* A data set's fingerprint; see fingerprint.h. */
#include "data/fingerprint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/image.h"

/* A growing list of doubles (region areas and extents of one class). */
typedef struct values {
    double *v;
    size_t n, cap;
} values;

static int values_add(values *a, double x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        double *grown = tt_realloc(a->v, cap * sizeof *grown);
        if (!grown) return 0;
        a->v = grown, a->cap = cap;
    }
    a->v[a->n++] = x;
    return 1;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value below which `share` of the total weight lies, x[i] weighing
 * weight[i] (the regions' areas). */
typedef struct weighted {
    double x, w;
} weighted;

static int by_x(const void *a, const void *b)
{
    double x = ((const weighted *)a)->x, y = ((const weighted *)b)->x;
    return (x > y) - (x < y);
}

static double weighted_quantile(const values *x, const values *weight, double share)
{
    size_t n = x->n;
    weighted *pairs = n ? tt_malloc(n * sizeof *pairs) : NULL;
    if (!pairs) return 0;
    double total = 0, run = 0, result = 0;
    for (size_t i = 0; i < n; i++) pairs[i] = (weighted){x->v[i], weight->v[i]}, total += weight->v[i];
    qsort(pairs, n, sizeof *pairs, by_x);
    for (size_t i = 0; i < n; i++) {
        run += pairs[i].w, result = pairs[i].x;
        if (run >= share * total) break;
    }
    free(pairs);
    return result;
}

static double median_of(values *a)
{
    if (!a->n) return 0;
    qsort(a->v, a->n, sizeof *a->v, by_value);
    return a->n % 2 ? a->v[a->n / 2] : 0.5 * (a->v[a->n / 2 - 1] + a->v[a->n / 2]);
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The 4-connected regions of the 1s of grid (gw x gh, cleared as visited):
 * each one's area (count x stride^2) and bounding-box longer side (x
 * stride) added to areas and extents.  queue: gw gh ints. */
static int regions_of(uint8_t *grid, int gw, int gh, int stride, int *queue, values *areas,
                      values *extents, int *count)
{
    for (int start = 0; start < gw * gh; start++) {
        if (!grid[start]) continue;
        int head = 0, tail = 0, x0 = gw, x1 = -1, y0 = gh, y1 = -1;
        queue[tail++] = start;
        grid[start] = 0;
        while (head < tail) {
            int p = queue[head++], x = p % gw, y = p / gw;
            x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
            const int next[4] = {x > 0 ? p - 1 : -1, x + 1 < gw ? p + 1 : -1, y > 0 ? p - gw : -1,
                                 y + 1 < gh ? p + gw : -1};
            for (int k = 0; k < 4; k++)
                if (next[k] >= 0 && grid[next[k]]) grid[next[k]] = 0, queue[tail++] = next[k];
        }
        int side = (x1 - x0 > y1 - y0 ? x1 - x0 : y1 - y0) + 1;
        if (!values_add(areas, (double)tail * stride * stride) ||
            !values_add(extents, (double)side * stride))
            return 0;
        (*count)++;
    }
    return 1;
}

tt_status tt_fingerprint_compute(tt_dataset *ds, int max_images, tt_fingerprint *out)
{
    memset(out, 0, sizeof *out);
    int n = tt_dataset_count(ds), classes = tt_dataset_classes(ds);
    tt_mask_kind kind = tt_dataset_mask_kind(ds);
    if (n < 1) return tt_error_new(TT_ERR_FORMAT, "the data set has no usable image");
    if (classes > TT_FINGERPRINT_MAX_CLASSES)
        return tt_error_new(TT_ERR_UNSUPPORTED, "the data set has %d classes; a fingerprint takes "
                            "at most %d", classes, TT_FINGERPRINT_MAX_CLASSES);
    int reads = max_images > 0 && max_images < n ? max_images : n;
    out->images = n, out->images_read = reads, out->mask_kind = kind, out->classes = classes;
    int first_fg = kind == TT_MASK_MULTI_LABEL ? 0 : 1;
    out->foreground_classes = classes - first_fg;
    int planes = kind == TT_MASK_MULTI_LABEL ? classes : 1;
    tt_status status = NULL;
    int *widths = tt_calloc((size_t)n, sizeof *widths), *heights = tt_calloc((size_t)n, sizeof *heights);
    values areas[TT_FINGERPRINT_MAX_CLASSES] = {{0}}, extents[TT_FINGERPRINT_MAX_CLASSES] = {{0}};
    uint8_t *mask = NULL, *grid = NULL;
    int *queue = NULL;
    tt_image image = {0};
    double sum[3] = {0}, sum_sq[3] = {0}, samples = 0, labelled = 0, ignored = 0, fg_pixels = 0;
    double class_pixels[TT_FINGERPRINT_MAX_CLASSES] = {0};
    int empty = 0, grey = 1;
    if (!widths || !heights) goto oom;
    for (int i = 0; i < n; i++) tt_dataset_image_size(ds, i, &widths[i], &heights[i]);
    for (int r = 0; r < reads; r++) {
        int index = (int)((long long)r * n / reads), w = widths[index], h = heights[index];
        int stride = ((w > h ? w : h) + 511) / 512;
        int gw = (w + stride - 1) / stride, gh = (h + stride - 1) / stride;
        if (stride > out->stride) out->stride = stride;
        uint8_t *m = tt_realloc(mask, (size_t)w * h * planes);
        if (!m) goto oom;
        mask = m;
        uint8_t *g = tt_realloc(grid, (size_t)gw * gh);
        int *q = tt_realloc(queue, (size_t)gw * gh * sizeof *q);
        if (g) grid = g;
        if (q) queue = q;
        if (!g || !q) goto oom;
        TT_CHECK(tt_dataset_mask(ds, index, mask));
        TT_CHECK(tt_image_load(tt_dataset_image_path(ds, index), 0, &image));
        /* pixels and labels on the grid */
        int any_fg = 0;
        for (int y = 0; y < h; y += stride)
            for (int x = 0; x < w; x += stride) {
                const uint8_t *px = image.pixels + 3 * ((size_t)y * w + x);
                for (int c = 0; c < 3; c++)
                    sum[c] += px[c] / 255.0, sum_sq[c] += (px[c] / 255.0) * (px[c] / 255.0);
                grey &= px[0] == px[1] && px[1] == px[2];
                samples++;
                size_t at = (size_t)y * w + x;
                if (kind == TT_MASK_CLASS_INDEX) {
                    int v = mask[at];
                    if (v == 255) {
                        ignored++;
                        continue;
                    }
                    labelled++;
                    if (v < classes) class_pixels[v]++;
                    if (v >= 1) fg_pixels++, any_fg = 1;
                } else {
                    labelled++;
                    int fg = 0;
                    for (int c = 0; c < classes; c++)
                        if (mask[(size_t)c * w * h + at]) class_pixels[c]++, fg = 1;
                    fg_pixels += fg, any_fg |= fg;
                }
            }
        tt_image_free(&image);
        empty += !any_fg;
        /* each foreground class's regions */
        for (int c = first_fg; c < classes; c++) {
            int present = 0;
            for (int gy = 0; gy < gh; gy++)
                for (int gx = 0; gx < gw; gx++) {
                    size_t at = (size_t)gy * stride * w + (size_t)gx * stride;
                    int on = kind == TT_MASK_CLASS_INDEX ? mask[at] == c : mask[(size_t)c * w * h + at] != 0;
                    grid[gy * gw + gx] = (uint8_t)on;
                    present |= on;
                }
            out->cls[c].images += present;
            if (present && !regions_of(grid, gw, gh, stride, queue, &areas[c], &extents[c],
                                       &out->cls[c].regions))
                goto oom;
        }
    }
    /* every item's size (not only those read): sorted, they give the
     * smallest, the median and the largest */
    qsort(widths, (size_t)n, sizeof *widths, by_int);
    qsort(heights, (size_t)n, sizeof *heights, by_int);
    out->min_width = widths[0], out->median_width = widths[n / 2], out->max_width = widths[n - 1];
    out->min_height = heights[0], out->median_height = heights[n / 2];
    out->max_height = heights[n - 1];
    out->grey = grey;
    for (int c = 0; c < 3; c++) {
        out->mean[c] = sum[c] / samples;
        out->std[c] = sqrt(fmax(0, sum_sq[c] / samples - out->mean[c] * out->mean[c]));
    }
    out->empty_share = (double)empty / reads;
    out->ignore_share = ignored / samples;
    out->foreground_share = labelled > 0 ? fg_pixels / labelled : 0;
    for (int c = 0; c < classes; c++) {
        tt_class_fingerprint *k = &out->cls[c];
        k->pixel_share = labelled > 0 ? class_pixels[c] / labelled : 0;
        if (areas[c].n) {
            k->typical_area = weighted_quantile(&areas[c], &areas[c], 0.5);
            k->typical_extent = weighted_quantile(&extents[c], &areas[c], 0.5);
            k->small_area = weighted_quantile(&areas[c], &areas[c], 0.05);
            k->median_area = median_of(&areas[c]);
            k->min_area = areas[c].v[0], k->max_area = areas[c].v[areas[c].n - 1];
            k->median_extent = median_of(&extents[c]);
        }
    }
    goto cleanup;
oom:
    status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "data set fingerprint: out of host memory");
cleanup:
    if (status && image.pixels) tt_image_free(&image);
    for (int c = 0; c < TT_FINGERPRINT_MAX_CLASSES; c++) free(areas[c].v), free(extents[c].v);
    free(widths), free(heights), free(mask), free(grid), free(queue);
    return status;
}
