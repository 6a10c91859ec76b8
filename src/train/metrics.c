/* Per-class Dice and IoU over images, Kaggle-clouds style; see metrics.h. */
#include "train/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/status.h"

tt_status tt_metrics_create(int classes, tt_metrics **out)
{
    *out = NULL;
    if (classes < 1 || classes > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "metrics: %d classes; give 1 to 256", classes);
    tt_metrics *m = tt_calloc(1, sizeof *m);
    if (!m) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "metrics: out of host memory");
    m->classes = classes;
    m->dice_sum = tt_calloc((size_t)classes, sizeof *m->dice_sum);
    m->iou_sum = tt_calloc((size_t)classes, sizeof *m->iou_sum);
    m->tp = tt_calloc((size_t)classes, sizeof *m->tp);
    m->fp = tt_calloc((size_t)classes, sizeof *m->fp);
    m->fn = tt_calloc((size_t)classes, sizeof *m->fn);
    if (!m->dice_sum || !m->iou_sum || !m->tp || !m->fp || !m->fn) {
        tt_metrics_destroy(m);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "metrics: out of host memory");
    }
    *out = m;
    return NULL;
}

void tt_metrics_destroy(tt_metrics *m)
{
    if (!m) return;
    free(m->dice_sum);
    free(m->iou_sum);
    free(m->tp);
    free(m->fp);
    free(m->fn);
    free(m);
}

void tt_metrics_reset(tt_metrics *m)
{
    size_t n = (size_t)m->classes;
    m->images = 0;
    memset(m->dice_sum, 0, n * sizeof *m->dice_sum);
    memset(m->iou_sum, 0, n * sizeof *m->iou_sum);
    memset(m->tp, 0, n * sizeof *m->tp);
    memset(m->fp, 0, n * sizeof *m->fp);
    memset(m->fn, 0, n * sizeof *m->fn);
}

static double dice_of(uint64_t tp, uint64_t fp, uint64_t fn)
{
    uint64_t denominator = 2 * tp + fp + fn;
    return denominator ? 2.0 * (double)tp / (double)denominator : 1.0;
}

static double iou_of(uint64_t tp, uint64_t fp, uint64_t fn)
{
    uint64_t denominator = tp + fp + fn;
    return denominator ? (double)tp / (double)denominator : 1.0;
}

void tt_metrics_add_counts(tt_metrics *m, const uint64_t *tp, const uint64_t *fp,
                           const uint64_t *fn)
{
    for (int c = 0; c < m->classes; c++) {
        m->dice_sum[c] += dice_of(tp[c], fp[c], fn[c]);
        m->iou_sum[c] += iou_of(tp[c], fp[c], fn[c]);
        m->tp[c] += tp[c];
        m->fp[c] += fp[c];
        m->fn[c] += fn[c];
    }
    m->images++;
}

void tt_metrics_add_class_index(tt_metrics *m, const uint8_t *pred, const uint8_t *truth,
                                size_t pixels, int ignore)
{
    uint64_t tp[256] = {0}, fp[256] = {0}, fn[256] = {0};
    int classes = m->classes;
    for (size_t i = 0; i < pixels; i++) {
        int t = truth[i], p = pred[i];
        if (t == ignore) continue;
        if (p == t) {
            if (t < classes) tp[t]++;
            continue;
        }
        if (p < classes) fp[p]++;
        if (t < classes) fn[t]++;
    }
    tt_metrics_add_counts(m, tp, fp, fn);
}

void tt_metrics_add_multi_label(tt_metrics *m, const uint8_t *pred, const uint8_t *truth,
                                size_t pixels)
{
    uint64_t tp[256] = {0}, fp[256] = {0}, fn[256] = {0};
    for (int c = 0; c < m->classes; c++) {
        const uint8_t *p = pred + (size_t)c * pixels, *t = truth + (size_t)c * pixels;
        for (size_t i = 0; i < pixels; i++) {
            int a = p[i] != 0, b = t[i] != 0;
            tp[c] += a & b;
            fp[c] += a & !b;
            fn[c] += (!a) & b;
        }
    }
    tt_metrics_add_counts(m, tp, fp, fn);
}

double tt_metrics_dice(const tt_metrics *m, int c)
{
    return m->images ? m->dice_sum[c] / m->images : NAN;
}

double tt_metrics_iou(const tt_metrics *m, int c)
{
    return m->images ? m->iou_sum[c] / m->images : NAN;
}

double tt_metrics_mean_dice(const tt_metrics *m)
{
    double total = 0;
    for (int c = 0; c < m->classes; c++) total += m->dice_sum[c];
    return m->images ? total / ((double)m->images * m->classes) : NAN;
}

double tt_metrics_mean_iou(const tt_metrics *m)
{
    double total = 0;
    for (int c = 0; c < m->classes; c++) total += m->iou_sum[c];
    return m->images ? total / ((double)m->images * m->classes) : NAN;
}

double tt_metrics_global_dice(const tt_metrics *m, int c)
{
    return dice_of(m->tp[c], m->fp[c], m->fn[c]);
}

double tt_metrics_global_iou(const tt_metrics *m, int c)
{
    return iou_of(m->tp[c], m->fp[c], m->fn[c]);
}

/* JSON has no NaN: null before any image. */
static cJSON *number(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

char *tt_metrics_json(const tt_metrics *m, const char *const *names)
{
    cJSON *root = cJSON_CreateObject(), *list = cJSON_CreateArray();
    if (!root || !list) {
        cJSON_Delete(root);
        cJSON_Delete(list);
        return NULL;
    }
    cJSON_AddNumberToObject(root, "images", m->images);
    cJSON_AddItemToObject(root, "mean_dice", number(tt_metrics_mean_dice(m)));
    cJSON_AddItemToObject(root, "mean_iou", number(tt_metrics_mean_iou(m)));
    cJSON_AddItemToObject(root, "classes", list);
    for (int c = 0; c < m->classes; c++) {
        cJSON *item = cJSON_CreateObject();
        if (!item) break;
        char fallback[16];
        snprintf(fallback, sizeof fallback, "%d", c);
        cJSON_AddStringToObject(item, "name", names && names[c] ? names[c] : fallback);
        cJSON_AddItemToObject(item, "dice", number(tt_metrics_dice(m, c)));
        cJSON_AddItemToObject(item, "iou", number(tt_metrics_iou(m, c)));
        cJSON_AddItemToObject(item, "global_dice", number(tt_metrics_global_dice(m, c)));
        cJSON_AddItemToObject(item, "global_iou", number(tt_metrics_global_iou(m, c)));
        cJSON_AddNumberToObject(item, "tp", (double)m->tp[c]);
        cJSON_AddNumberToObject(item, "fp", (double)m->fp[c]);
        cJSON_AddNumberToObject(item, "fn", (double)m->fn[c]);
        cJSON_AddItemToArray(list, item);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}
