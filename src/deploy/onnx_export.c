/* A trained model as an ONNX file (see onnx_export.h): the normalisation,
 * the layer list walked in order (onnx_layers.c), the head, the file. */
#include "deploy/onnx_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "deploy/onnx_layers.h"
#include "model/graph_model.h"

tt_status tt_onnx_built(void) { return NULL; }

/* image (pixel values) -> (image / 255 - mean) / std, per channel. */
static const char *normalise(tt_onnx_builder *b, const tt_onnx_options *o, const char *image)
{
    int64_t one[1] = {1}, channel[4] = {1, 3, 1, 1};
    float full[1] = {255.0f};
    const char *scaled = tt_onnx_name(b, "input/scaled"), *centred = tt_onnx_name(b, "input/centred");
    const char *out = tt_onnx_name(b, "input/normalised");
    const char *div[2] = {image, tt_onnx_init_f32(b, "input.full_scale", 1, one, full)};
    const char *sub[2] = {scaled, tt_onnx_init_f32(b, "input.mean", 4, channel, o->mean)};
    const char *std[2] = {centred, tt_onnx_init_f32(b, "input.std", 4, channel, o->std)};
    tt_onnx_node(b, "Div", "input", 2, div, 1, &scaled);
    tt_onnx_node(b, "Sub", "input", 2, sub, 1, &centred);
    tt_onnx_node(b, "Div", "input", 2, std, 1, &out);
    return out;
}

static tt_status check(const tt_model *model, const tt_graph *g, const tt_onnx_options *o)
{
    if (o->opset < TT_ONNX_OPSET_MIN || o->opset > TT_ONNX_OPSET_MAX)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--opset %d is out of range: give %d to %d "
                            "(default %d)", o->opset, TT_ONNX_OPSET_MIN, TT_ONNX_OPSET_MAX,
                            TT_ONNX_OPSET_DEFAULT);
    if (!g)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "model %s is not built as a layer list, "
                            "which export walks", model->spec.kind);
    if (model->spec.in_channels != 3)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "model %s takes %d input channels; export "
                            "normalises RGB images (3)", model->spec.kind, model->spec.in_channels);
    return NULL;
}

/* The graph's input and output dims: fixed (N 1 and the tile), or N, H, W
 * symbolic. */
static void io_dims(const tt_graph *g, const tt_onnx_options *o, int channels, int t, int64_t dims[4])
{
    const tt_tensor_def *d = &g->tensors[t];
    dims[0] = o->dynamic_size ? 0 : 1;
    dims[1] = channels;
    dims[2] = o->dynamic_size ? 0 : d->height;
    dims[3] = o->dynamic_size ? 0 : d->width;
}

static void describe(tt_onnx_builder *b, const tt_model *model, const tt_onnx_options *o)
{
    char text[160];
    tt_onnx_metadata(b, "tiletrain.model", o->description ? o->description : model->spec.kind);
    snprintf(text, sizeof text, "[%.9g, %.9g, %.9g]", o->mean[0], o->mean[1], o->mean[2]);
    tt_onnx_metadata(b, "tiletrain.mean", text);
    snprintf(text, sizeof text, "[%.9g, %.9g, %.9g]", o->std[0], o->std[1], o->std[2]);
    tt_onnx_metadata(b, "tiletrain.std", text);
    tt_onnx_metadata(b, "tiletrain.input", "image: float (N, 3, H, W), pixel values 0..255; "
                     "normalised inside the graph");
    tt_onnx_metadata(b, "tiletrain.batch_norm",
                     o->batch_norm == TT_ONNX_BN_FOLD ? "folded into the convolutions" : "kept");
}

tt_status tt_onnx_export(tt_model *model, const tt_onnx_options *o, const char *path)
{
    tt_status status = NULL;
    const tt_graph *g = tt_graph_model_graph(model);
    tt_onnx_builder *b = NULL;
    const tt_param_table *params = model->params;
    float *trainable = NULL, *state = NULL;
    tt_onnx_walk w = {0};
    TT_CHECK(check(model, g, o));
    trainable = tt_malloc((params->trainable_floats + 1) * sizeof *trainable);
    state = tt_malloc((params->state_floats + 1) * sizeof *state);
    w.names = tt_calloc((size_t)g->tensor_count, sizeof *w.names);
    w.folded_into = tt_calloc((size_t)g->layer_count, sizeof *w.folded_into);
    if (!trainable || !state || !w.names || !w.folded_into) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "ONNX export of %s: out of host memory",
                              model->spec.kind);
        goto cleanup;
    }
    TT_CHECK(tt_model_get_params(model, trainable, params->state_floats ? state : NULL));
    TT_CHECK(tt_onnx_builder_create(o->opset, &b));
    w = (tt_onnx_walk){b, g, params, trainable, state, w.names, w.folded_into};
    if (o->batch_norm == TT_ONNX_BN_FOLD) tt_onnx_find_folds(&w);
    else
        for (int i = 0; i < g->layer_count; i++) w.folded_into[i] = -1;

    static const char *const symbols[4] = {"N", "", "H", "W"};
    int64_t in_dims[4], out_dims[4];
    int classes = g->tensors[g->output].channels;
    io_dims(g, o, 3, g->input, in_dims);
    io_dims(g, o, classes, g->output, out_dims);
    const char *image = tt_onnx_name(b, "image");
    tt_onnx_graph_input(b, image, in_dims, symbols);
    w.names[g->input] = normalise(b, o, image);
    w.names[g->output] = tt_onnx_name(b, "logits");
    for (int i = 0; i < g->layer_count; i++) tt_onnx_layer(&w, i);
    const char *result = w.names[g->output];
    if (o->head != TT_ONNX_HEAD_LOGITS) {
        const char *probabilities = tt_onnx_name(b, "probabilities");
        int softmax = o->head == TT_ONNX_HEAD_SOFTMAX;
        Onnx__NodeProto *n = tt_onnx_node(b, softmax ? "Softmax" : "Sigmoid", "head", 1, &result,
                                          1, &probabilities);
        if (softmax) tt_onnx_attr_int(b, n, "axis", 1);
        result = probabilities;
    }
    tt_onnx_graph_output(b, result, out_dims, symbols);
    describe(b, model, o);
    TT_CHECK(tt_onnx_builder_write(b, model->spec.kind, TT_VERSION, path));
cleanup:
    tt_onnx_builder_destroy(b);
    free(w.names);
    free(w.folded_into);
    free(trainable);
    free(state);
    return status;
}
