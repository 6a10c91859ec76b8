/* The per-class post-processing search; see pp_search.h. */
#include "infer/pp_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"
#include "infer/postprocess.h"

struct tt_pp_search {
    int classes, multi, images;
    float thresholds[TT_PP_THRESHOLDS + 1];
    int nthresholds, sizes[TT_PP_SIZES], nsizes;
    int default_t, default_s;  /* the defaults' indices */
    double *score;             /* (classes, nthresholds, nsizes) Dice summed over the images */
    /* one image's scratch */
    uint8_t *mask, *index;
    size_t cap;
    const uint8_t *truth;      /* the class's truth plane (1: in, 255: ignored) */
    uint8_t in;                /* the truth's value of "in" */
    size_t *size, *overlap, count, count_cap;
    double seconds;            /* spent in tt_pp_search_add */
};

tt_status tt_pp_search_create(int classes, int multi_label, float default_threshold,
                              int default_min_size, double mean_pixels, tt_pp_search **out)
{
    *out = NULL;
    tt_pp_search *s = tt_calloc(1, sizeof *s);
    if (!s) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "post-processing search: out of host memory");
    s->classes = classes, s->multi = multi_label;
    /* thresholds: 0.30 .. 0.70 and the default (class index: the default alone) */
    if (multi_label)
        for (int k = 0; k < TT_PP_THRESHOLDS; k++) s->thresholds[s->nthresholds++] = 0.30f + 0.05f * k;
    s->default_t = -1;
    for (int k = 0; k < s->nthresholds; k++)
        if (fabsf(s->thresholds[k] - default_threshold) < 1e-6f) s->default_t = k;
    if (s->default_t < 0) s->default_t = s->nthresholds, s->thresholds[s->nthresholds++] = default_threshold;
    /* sizes: 0, the default, and fractions of the mean area, ascending, once each */
    static const double fractions[] = {1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2};
    int candidates[TT_PP_SIZES] = {0, default_min_size > 0 ? default_min_size : 0};
    int n = 2;
    for (size_t k = 0; k < sizeof fractions / sizeof *fractions; k++)
        candidates[n++] = (int)lround(fractions[k] * mean_pixels);
    for (int k = 0; k < n; k++) {
        int v = candidates[k], seen = 0;
        for (int j = 0; j < s->nsizes; j++) seen |= s->sizes[j] == v;
        if (seen) continue;
        int at = s->nsizes++;
        while (at > 0 && s->sizes[at - 1] > v) s->sizes[at] = s->sizes[at - 1], at--;
        s->sizes[at] = v;
    }
    for (int j = 0; j < s->nsizes; j++)
        if (s->sizes[j] == (default_min_size > 0 ? default_min_size : 0)) s->default_s = j;
    s->score = tt_calloc((size_t)classes * s->nthresholds * s->nsizes, sizeof *s->score);
    if (!s->score) {
        tt_pp_search_destroy(s);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "post-processing search: out of host memory");
    }
    *out = s;
    return NULL;
}

void tt_pp_search_destroy(tt_pp_search *s)
{
    if (!s) return;
    free(s->score), free(s->mask), free(s->index), free(s->size), free(s->overlap);
    free(s);
}

/* A component of the prediction: its size and its overlap with the truth. */
static void note_component(void *ctx, uint8_t *mask, const uint32_t *pixels, size_t count)
{
    (void)mask;
    tt_pp_search *s = ctx;
    if (s->count == s->count_cap) {
        size_t cap = s->count_cap ? 2 * s->count_cap : 256;
        size_t *a = tt_realloc(s->size, cap * sizeof *a);
        if (a) s->size = a;
        size_t *b = a ? tt_realloc(s->overlap, cap * sizeof *b) : NULL;
        if (b) s->overlap = b;
        if (!a || !b) return; /* out of memory: the add reports it */
        s->count_cap = cap;
    }
    size_t overlap = 0;
    for (size_t i = 0; i < count; i++) overlap += s->truth[pixels[i]] == s->in;
    s->size[s->count] = count, s->overlap[s->count] = overlap;
    s->count++;
}

static double *score_at(const tt_pp_search *s, int c, int t, int z)
{
    return &s->score[((size_t)c * s->nthresholds + t) * s->nsizes + z];
}

static tt_status add_image(tt_pp_search *s, const float *probs, const uint8_t *truth, int w, int h)
{
    size_t n = (size_t)w * h;
    if (n > s->cap) {
        uint8_t *m = tt_realloc(s->mask, n), *x = m ? tt_realloc(s->index, n) : NULL;
        if (m) s->mask = m;
        if (x) s->index = x;
        if (!m || !x) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "post-processing search: out of "
                                          "host memory for a %dx%d image", w, h);
        s->cap = n;
    }
    if (!s->multi) /* the argmax, lowest class on ties */
        for (size_t i = 0; i < n; i++) {
            int best = 0;
            for (int c = 1; c < s->classes; c++)
                if (probs[(size_t)c * n + i] > probs[(size_t)best * n + i]) best = c;
            s->index[i] = (uint8_t)best;
        }
    for (int c = s->multi ? 0 : 1; c < s->classes; c++) {
        s->truth = s->multi ? truth + (size_t)c * n : truth;
        s->in = s->multi ? 1 : (uint8_t)c;
        size_t truth_size = 0;
        for (size_t i = 0; i < n; i++) truth_size += s->truth[i] == s->in;
        for (int t = 0; t < s->nthresholds; t++) {
            const float *p = probs + (size_t)c * n;
            for (size_t i = 0; i < n; i++)
                s->mask[i] = s->truth[i] != 255 &&
                             (s->multi ? p[i] > s->thresholds[t] : s->index[i] == c);
            s->count = 0;
            TT_TRY(tt_pp_components(s->mask, w, h, 8, note_component, s));
            size_t found = 0;
            for (size_t i = 0; i < n; i++) found += s->mask[i];
            size_t listed = 0;
            for (size_t k = 0; k < s->count; k++) listed += s->size[k];
            if (listed != found)
                return tt_error_new(TT_ERR_OUT_OF_MEMORY, "post-processing search: out of host "
                                    "memory for the components of a %dx%d image", w, h);
            for (int z = 0; z < s->nsizes; z++) {
                size_t kept = 0, overlap = 0;
                for (size_t k = 0; k < s->count; k++)
                    if (s->size[k] >= (size_t)s->sizes[z]) kept += s->size[k], overlap += s->overlap[k];
                double dice = kept + truth_size ? 2.0 * overlap / (double)(kept + truth_size) : 1.0;
                *score_at(s, c, t, z) += dice;
            }
        }
    }
    s->images++;
    return NULL;
}

tt_status tt_pp_search_add(tt_pp_search *s, const float *probs, const uint8_t *truth, int w, int h)
{
    double start = tt_seconds();
    tt_status status = add_image(s, probs, truth, w, h);
    s->seconds += tt_seconds() - start;
    return status;
}

double tt_pp_search_seconds(const tt_pp_search *s) { return s->seconds; }

void tt_pp_search_result(const tt_pp_search *s, tt_pp_choice *choices, double *mean,
                         double *default_mean)
{
    double sum = 0, default_sum = 0;
    int searched = 0;
    for (int c = 0; c < s->classes; c++) {
        tt_pp_choice *ch = &choices[c];
        int bt = s->default_t, bz = s->default_s;
        double best = *score_at(s, c, bt, bz);
        for (int t = 0; t < s->nthresholds; t++)
            for (int z = 0; z < s->nsizes; z++) /* strictly better: ties keep the defaults */
                if (*score_at(s, c, t, z) > best + 1e-9) best = *score_at(s, c, t, z), bt = t, bz = z;
        double images = s->images ? s->images : 1;
        ch->threshold = s->thresholds[bt];
        ch->min_size = s->sizes[bz];
        ch->dice = best / images;
        ch->default_dice = *score_at(s, c, s->default_t, s->default_s) / images;
        if (!s->multi && c == 0) continue; /* background: not searched */
        sum += ch->dice, default_sum += ch->default_dice, searched++;
    }
    *mean = searched ? sum / searched : 0;
    *default_mean = searched ? default_sum / searched : 0;
}

char *tt_pp_choices_json(const tt_pp_choice *choices, int classes)
{
    cJSON *pp = cJSON_CreateObject();
    cJSON *t = cJSON_AddArrayToObject(pp, "threshold"), *m = cJSON_AddArrayToObject(pp, "min_size");
    for (int c = 0; c < classes; c++) {
        cJSON_AddItemToArray(t, cJSON_CreateNumber(round(choices[c].threshold * 1000.0) / 1000.0));
        cJSON_AddItemToArray(m, cJSON_CreateNumber(choices[c].min_size));
    }
    char *json = cJSON_PrintUnformatted(pp);
    cJSON_Delete(pp);
    if (!json) return NULL;
    char *copy = tt_strdup(json); /* free()-able, whatever cJSON's allocator */
    cJSON_free(json);
    return copy;
}
