/* A prediction model from a safetensors checkpoint; see model_load.h. */
#include "infer/model_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/weights.h"

/* Class names from the "classes" metadata, or "0", "1", ... */
static tt_status class_names(const tt_safetensors *f, int classes, char ***out)
{
    tt_status status = NULL;
    char **names = tt_calloc((size_t)classes, sizeof *names);
    const char *text = tt_safetensors_metadata(f, "classes");
    cJSON *list = text ? cJSON_Parse(text) : NULL;
    if (!names) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "class names: out of host memory");
        goto cleanup;
    }
    if (text && (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != classes)) {
        status = tt_error_new(TT_ERR_FORMAT, "metadata \"classes\" must be a JSON array of %d "
                              "names; it is '%.80s'", classes, text);
        goto cleanup;
    }
    for (int c = 0; c < classes; c++) {
        char fallback[16];
        snprintf(fallback, sizeof fallback, "%d", c);
        const cJSON *item = list ? cJSON_GetArrayItem(list, c) : NULL;
        if (item && !cJSON_IsString(item)) {
            status = tt_error_new(TT_ERR_FORMAT, "metadata \"classes\": entry %d is not a string",
                                  c);
            goto cleanup;
        }
        names[c] = tt_strdup(item ? item->valuestring : fallback);
        if (!names[c]) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "class names: out of host memory");
            goto cleanup;
        }
    }
    *out = names;
    names = NULL;
cleanup:
    if (names)
        for (int c = 0; c < classes; c++) free(names[c]);
    free(names);
    cJSON_Delete(list);
    return status;
}

/* Three numbers of metadata `key` into v, when present. */
/* Metadata `key` as an array of `want` numbers (want 0: 1 to `most`, their
 * count into *count); absent: nothing set, *count 0. */
static tt_status numbers(const tt_safetensors *f, const char *key, int want, int most, float *v,
                         int *count)
{
    *count = 0;
    const char *text = tt_safetensors_metadata(f, key);
    if (!text) return NULL;
    cJSON *list = cJSON_Parse(text);
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    tt_status status = NULL;
    if (want ? n != want : n < 1 || n > most)
        status = tt_error_new(TT_ERR_FORMAT, "metadata \"%s\" must be an array of %d numbers", key,
                              want ? want : most);
    for (int i = 0; !status && i < n; i++) {
        const cJSON *item = cJSON_GetArrayItem(list, i);
        if (!cJSON_IsNumber(item))
            status = tt_error_new(TT_ERR_FORMAT, "metadata \"%s\" must be an array of numbers",
                                  key);
        else
            v[i] = (float)item->valuedouble;
    }
    cJSON_Delete(list);
    if (!status) *count = n;
    return status;
}

static tt_status triple(const tt_safetensors *f, const char *key, float *v)
{
    int count;
    return numbers(f, key, 3, 3, v, &count);
}

/* A raster run's "bands", "band_mean" and "band_std" (train/checkpoint.c),
 * one per input channel. */
static tt_status bands(const tt_safetensors *f, tt_infer_model *m)
{
    float b[TT_RASTER_MAX_BANDS];
    int n = 0, means = 0, stds = 0;
    TT_TRY(numbers(f, "bands", 0, TT_RASTER_MAX_BANDS, b, &n));
    if (!n) return NULL;
    TT_TRY(numbers(f, "band_mean", n, n, m->bands.mean, &means));
    TT_TRY(numbers(f, "band_std", n, n, m->bands.std, &stds));
    if (n != m->spec.in_channels)
        return tt_error_new(TT_ERR_FORMAT, "metadata \"bands\" names %d bands and the model takes "
                            "%d input channels", n, m->spec.in_channels);
    for (int i = 0; i < n; i++) {
        m->bands.bands[i] = (int)b[i];
        if (m->bands.bands[i] < 1 || !(m->bands.std[i] > 0))
            return tt_error_new(TT_ERR_FORMAT, "metadata \"bands\" entry %d: band %g, std %g; "
                                "bands count from 1 and std > 0", i, (double)b[i],
                                (double)m->bands.std[i]);
    }
    m->bands.count = n;
    return NULL;
}

/* "postprocess": {"threshold": [..], "min_size": [..]}, one per class. */
static tt_status postprocess(const tt_safetensors *f, tt_infer_model *m)
{
    const char *text = tt_safetensors_metadata(f, "postprocess");
    if (!text) return NULL;
    int classes = m->spec.classes;
    cJSON *root = cJSON_Parse(text);
    cJSON *t = cJSON_GetObjectItem(root, "threshold"), *s = cJSON_GetObjectItem(root, "min_size");
    tt_status status = NULL;
    if (cJSON_GetArraySize(t) != classes || cJSON_GetArraySize(s) != classes)
        status = tt_error_new(TT_ERR_FORMAT, "metadata \"postprocess\" must hold a threshold "
                              "and a min_size per class (%d)", classes);
    m->class_threshold = status ? NULL : tt_malloc(sizeof *m->class_threshold * (size_t)classes);
    m->class_min_size = status ? NULL : tt_malloc(sizeof *m->class_min_size * (size_t)classes);
    if (!status && (!m->class_threshold || !m->class_min_size))
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int c = 0; !status && c < classes; c++) {
        cJSON *tc = cJSON_GetArrayItem(t, c), *sc = cJSON_GetArrayItem(s, c);
        if (!cJSON_IsNumber(tc) || !cJSON_IsNumber(sc) || !(tc->valuedouble >= 0) ||
            !(tc->valuedouble <= 1) || !(sc->valuedouble >= 0))
            status = tt_error_new(TT_ERR_FORMAT, "metadata \"postprocess\": class %d's threshold "
                                  "or min_size is out of range", c);
        else
            m->class_threshold[c] = (float)tc->valuedouble, m->class_min_size[c] = sc->valueint;
    }
    cJSON_Delete(root);
    return status;
}

static tt_infer_kind kind_of(const tt_safetensors *f)
{
    const char *k = tt_safetensors_metadata(f, "mask_kind");
    const char *format = tt_safetensors_metadata(f, "format");
    if ((k && strcmp(k, "class-index") == 0) || (format && strcmp(format, "folder") == 0))
        return TT_INFER_KIND_CLASS_INDEX;
    if ((k && strcmp(k, "multi-label") == 0) || (format && strcmp(format, "kaggle-rle") == 0))
        return TT_INFER_KIND_MULTI_LABEL;
    return TT_INFER_KIND_UNKNOWN;
}

/* A checkpoint of a run with --ema predicts with the moving average of the
 * weights (ema.<name>), as that run validated. */
static tt_status use_ema(tt_model *model, const tt_safetensors *f)
{
    return tt_weights_upload_arena(model->be, model->param_buffer, f, model->params, 1, "ema.",
                                   "", 0);
}

tt_status tt_infer_model_load(tt_backend *be, const char *path, int capacity, int tile_h,
                              int tile_w, tt_conv_algo algo, tt_precision precision,
                              tt_infer_model *m)
{
    memset(m, 0, sizeof *m);
    for (int c = 0; c < 3; c++) m->std[c] = 1.0f;
    tt_status status = NULL;
    tt_safetensors *f = NULL;
    TT_CHECK(tt_safetensors_open(path, &f));
    const char *model_json = tt_safetensors_metadata(f, "model");
    if (!model_json) {
        status = tt_error_new(TT_ERR_FORMAT, "it has no \"model\" metadata (the model's "
                              "configuration); was it written by `tiletrain train`?");
        goto cleanup;
    }
    TT_CHECK(tt_model_spec_parse(model_json, &m->spec));
    m->spec.algo = algo;
    m->spec.precision = precision;
    m->spec.predict_only = 1; /* no gradients; the weights are read next */
    TT_CHECK(class_names(f, m->spec.classes, &m->class_names));
    TT_CHECK(triple(f, "mean", m->mean));
    TT_CHECK(triple(f, "std", m->std));
    TT_CHECK(bands(f, m));
    m->kind = kind_of(f);
    TT_CHECK(postprocess(f, m));
    TT_CHECK(tt_model_create(be, &m->spec, capacity, tile_h, tile_w, 0, &m->model));
    TT_CHECK(tt_weights_read(m->model, f, TT_WEIGHTS_NEED_STATS));
    if (tt_safetensors_metadata(f, "ema")) TT_CHECK(use_ema(m->model, f));
cleanup:
    if (status) {
        status = tt_error_prefix(status, "loading the model %s", path);
        tt_infer_model_free(m);
    }
    tt_safetensors_close(f);
    return status;
}

tt_status tt_infer_model_use_raw(tt_infer_model *m, const char *path)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_safetensors_open(path, &f));
    tt_status status = NULL;
    if (tt_safetensors_metadata(f, "ema")) status = tt_weights_read(m->model, f, TT_WEIGHTS_NEED_STATS);
    tt_safetensors_close(f);
    return status ? tt_error_prefix(status, "loading the raw weights of %s", path) : NULL;
}

void tt_infer_model_free(tt_infer_model *m)
{
    if (!m) return;
    if (m->class_names)
        for (int c = 0; c < m->spec.classes; c++) free(m->class_names[c]);
    tt_model_destroy(m->model);
    free(m->class_names);
    free(m->class_threshold);
    free(m->class_min_size);
    memset(m, 0, sizeof *m);
}
