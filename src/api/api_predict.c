/*
 * A checkpoint opened for prediction by a front end (include/tiletrain.h,
 * tt_predictor_*): the device and model as `tiletrain predict` makes them
 * (auto backend, the autotuner's convolutions, fp32), the sliding window
 * over an image in memory, probabilities and the command's masks out.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/precision.h"
#include "core/status.h"
#include "infer/model_load.h"
#include "infer/postprocess.h"
#include "infer/predict.h"
#include "ops/conv_algo.h"
#include "tiletrain.h"

struct tt_predictor {
    tt_backend *be;
    tt_infer_model model;
    tt_infer_kind kind; /* what the checkpoint says; class-index when it says nothing */
    int batch;
};

tt_status tt_predictor_open(const char *checkpoint, const char *device, int tile_h, int tile_w,
                            int batch, tt_predictor **out)
{
    *out = NULL;
    tt_predictor *p = tt_calloc(1, sizeof *p);
    if (!p) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status status = NULL;
    tt_backend_request request = {0};
    TT_CHECK(tt_backend_choose("auto", device, &request));
    TT_CHECK(tt_backend_create(&request, &p->be));
    tt_conv_algo algo;
    TT_CHECK(tt_conv_algo_setting("auto", &algo));
    tt_precision precision;
    TT_CHECK(tt_precision_parse("precision", "fp32", &precision));
    TT_CHECK(tt_infer_model_load(p->be, checkpoint, batch, tile_h, tile_w, algo, precision,
                                 &p->model));
    p->kind = p->model.kind == TT_INFER_KIND_MULTI_LABEL ? TT_INFER_KIND_MULTI_LABEL
                                                         : TT_INFER_KIND_CLASS_INDEX;
    p->batch = batch;
    *out = p;
    return NULL;
cleanup:
    tt_predictor_close(p);
    return status;
}

tt_status tt_predictor_info(const tt_predictor *p, char **json)
{
    *json = NULL;
    cJSON *root = cJSON_CreateObject(), *names = cJSON_CreateArray();
    if (!root || !names) {
        cJSON_Delete(root);
        cJSON_Delete(names);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    const tt_model_spec *spec = &p->model.spec;
    for (int c = 0; c < spec->classes; c++)
        cJSON_AddItemToArray(names, cJSON_CreateString(p->model.class_names[c]));
    cJSON_AddNumberToObject(root, "classes", spec->classes);
    cJSON_AddItemToObject(root, "names", names);
    cJSON_AddStringToObject(root, "kind",
                            p->kind == TT_INFER_KIND_MULTI_LABEL ? "multi-label" : "class-index");
    cJSON_AddStringToObject(root, "device", p->be->device.name);
    cJSON *tile = cJSON_AddArrayToObject(root, "tile");
    cJSON_AddItemToArray(tile, cJSON_CreateNumber(p->model.model->height));
    cJSON_AddItemToArray(tile, cJSON_CreateNumber(p->model.model->width));
    *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return *json ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
}

tt_status tt_predictor_run(tt_predictor *p, const uint8_t *rgb, int height, int width,
                           double overlap, float *probs, uint8_t *masks)
{
    if (height < 1 || width < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "predict: the image is %dx%d; give one of "
                            "at least 1x1 pixels", width, height);
    tt_predict_options options = tt_predict_options_default();
    options.overlap = overlap;
    options.batch = p->batch;
    memcpy(options.mean, p->model.mean, sizeof options.mean);
    memcpy(options.std, p->model.std, sizeof options.std);
    tt_memory_image image = {rgb, width, height};
    tt_crop_reader reader = tt_crop_reader_memory(&image);
    int classes = p->model.spec.classes, multi_label = p->kind == TT_INFER_KIND_MULTI_LABEL;
    size_t pixels = (size_t)width * height;
    TT_TRY(tt_error_prefix(tt_predict_image(p->model.model, &reader, &options, probs), "predict"));
    if (masks) { /* `tiletrain predict`'s rule with its default threshold and no minimum size */
        tt_mask_rule rule = {.multi_label = multi_label, .threshold = 0.5f,
                             .class_threshold = multi_label ? p->model.class_threshold : NULL,
                             .class_min_size = p->model.class_min_size};
        TT_TRY(tt_predict_to_masks(probs, classes, width, height, &rule, masks));
        if (multi_label) return NULL; /* the logits are the probabilities now */
    } else if (multi_label) {
        tt_predict_sigmoid(probs, classes, pixels);
        return NULL;
    }
    tt_predict_softmax(probs, classes, pixels);
    return NULL;
}

void tt_predictor_close(tt_predictor *p)
{
    if (!p) return;
    tt_infer_model_free(&p->model);
    tt_backend_destroy(p->be);
    free(p);
}
