/*
 * The ONNX file tt_onnx_export writes, read back through protobuf-c (the
 * same generated messages) and checked without onnxruntime, so that this
 * half runs where PyPI does not (tests/export/check.sh runs the files):
 *   - the model header: opset, IR version, producer;
 *   - the input and output: fixed 1 x 3 x 64 x 64, or N, H, W symbolic;
 *   - the parameters as initializers under their PyTorch names and shapes,
 *     the running statistics kept bit for bit (--batch-norm keep);
 *   - batch norm folded: no BatchNormalization node, the convolution's
 *     weight w * gamma / sqrt(var + eps) and bias (b - mean) * s + beta,
 *     and the model's own parameters as they were;
 *   - refusals (an opset too old for Resize, out of range, an unwritable
 *     path) leave no file, not even PATH.tmp.
 */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "deploy/onnx_export.h"
#include "harness.h"
#include "model/graph_model.h"
#include "onnx_ir.pb-c.h"

static char dir[64];

/* A model of `kind` (unet: batch norm) at 64x64, its norms' parameters and
 * running statistics drawn away from 1 and 0. */
static tt_model *model_of(const char *kind)
{
    tt_model_spec spec = tt_model_spec_default();
    snprintf(spec.kind, sizeof spec.kind, "%s", kind);
    spec.classes = 2, spec.base_channels = 8, spec.depth = 2, spec.norm = TT_NORM_BATCH;
    tt_model *m = NULL;
    TH_OK(tt_model_create(th_backend(), &spec, 1, 64, 64, 3, &m));
    const tt_param_table *t = m->params;
    float *trainable = malloc(t->trainable_floats * sizeof *trainable);
    float *state = malloc((t->state_floats + 1) * sizeof *state);
    TH_OK(tt_model_get_params(m, trainable, state));
    uint64_t seed = 11;
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        float *v = (p->trainable ? trainable : state) + p->offset;
        if (p->role == TT_PARAM_RUNNING_MEAN) th_fill_uniform(v, p->count, -0.3f, 0.3f, &seed);
        if (p->role == TT_PARAM_RUNNING_VAR) th_fill_uniform(v, p->count, 0.4f, 2.0f, &seed);
        if (p->role == TT_PARAM_NORM_WEIGHT) th_fill_uniform(v, p->count, 0.5f, 1.5f, &seed);
    }
    TH_OK(tt_model_set_params(m, trainable, state));
    free(trainable);
    free(state);
    return m;
}

/* The file at path, unpacked (onnx__model_proto__free_unpacked). */
static Onnx__ModelProto *read_model(const char *path)
{
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *bytes = malloc((size_t)size);
    CU_ASSERT_EQUAL_FATAL(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, (size_t)size, bytes);
    free(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(model);
    return model;
}

static const Onnx__TensorProto *init_named(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (strcmp(g->initializer[i]->name, name) == 0) return g->initializer[i];
    return NULL;
}

static int nodes_of(const Onnx__GraphProto *g, const char *op)
{
    int count = 0;
    for (size_t i = 0; i < g->n_node; i++) count += strcmp(g->node[i]->op_type, op) == 0;
    return count;
}

static float value_at(const Onnx__TensorProto *t, size_t k)
{
    float v;
    memcpy(&v, t->raw_data.data + k * sizeof v, sizeof v);
    return v;
}

static tt_status export_to(tt_model *m, tt_onnx_batch_norm bn, int opset, int dynamic,
                           const char *path)
{
    tt_onnx_options o = tt_onnx_options_default();
    o.batch_norm = bn, o.opset = opset, o.dynamic_size = dynamic;
    return tt_onnx_export(m, &o, path);
}

static void test_header_and_io(void)
{
    tt_model *m = model_of("unet");
    char path[128];
    snprintf(path, sizeof path, "%s/fixed.onnx", dir);
    TH_OK(export_to(m, TT_ONNX_BN_FOLD, 17, 0, path));
    Onnx__ModelProto *model = read_model(path);
    CU_ASSERT_EQUAL(model->ir_version, 8);
    CU_ASSERT_EQUAL(model->n_opset_import, 1);
    CU_ASSERT_EQUAL(model->opset_import[0]->version, 17);
    CU_ASSERT_STRING_EQUAL(model->producer_name, "tiletrain");
    const Onnx__GraphProto *g = model->graph;
    CU_ASSERT_EQUAL_FATAL(g->n_input, 1);
    CU_ASSERT_EQUAL_FATAL(g->n_output, 1);
    CU_ASSERT_STRING_EQUAL(g->input[0]->name, "image");
    CU_ASSERT_STRING_EQUAL(g->output[0]->name, "logits");
    const Onnx__TensorShapeProto *in = g->input[0]->type->tensor_type->shape;
    const Onnx__TensorShapeProto *out = g->output[0]->type->tensor_type->shape;
    int64_t want_in[4] = {1, 3, 64, 64}, want_out[4] = {1, 2, 64, 64};
    for (int d = 0; d < 4; d++) {
        CU_ASSERT_EQUAL(in->dim[d]->dim_value, want_in[d]);
        CU_ASSERT_EQUAL(out->dim[d]->dim_value, want_out[d]);
    }
    CU_ASSERT_STRING_EQUAL(g->node[0]->op_type, "Div"); /* the normalisation first */
    onnx__model_proto__free_unpacked(model, NULL);

    snprintf(path, sizeof path, "%s/dynamic.onnx", dir);
    TH_OK(export_to(m, TT_ONNX_BN_FOLD, 13, 1, path));
    model = read_model(path);
    in = model->graph->input[0]->type->tensor_type->shape;
    const char *symbols[4] = {"N", NULL, "H", "W"};
    for (int d = 0; d < 4; d++) {
        if (!symbols[d]) {
            CU_ASSERT_EQUAL(in->dim[d]->dim_value, 3);
            continue;
        }
        CU_ASSERT_EQUAL(in->dim[d]->value_case, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM);
        CU_ASSERT_STRING_EQUAL(in->dim[d]->dim_param, symbols[d]);
    }
    CU_ASSERT_EQUAL(model->ir_version, 7);
    onnx__model_proto__free_unpacked(model, NULL);
    tt_model_destroy(m);
}

/* Kept: every parameter under its name and shape, the statistics as they
 * are; folded: no BatchNormalization, the first convolution's values. */
static void test_batch_norm(void)
{
    tt_model *m = model_of("unet");
    const tt_param_table *t = m->params;
    float *trainable = malloc(t->trainable_floats * sizeof *trainable);
    float *state = malloc((t->state_floats + 1) * sizeof *state);
    TH_OK(tt_model_get_params(m, trainable, state));
    const tt_graph *graph = tt_graph_model_graph(m);
    int norms = 0;
    for (int i = 0; i < graph->layer_count; i++) norms += graph->layers[i].kind == TT_LAYER_NORM;
    CU_ASSERT(norms > 0);

    char path[128];
    snprintf(path, sizeof path, "%s/kept.onnx", dir);
    TH_OK(export_to(m, TT_ONNX_BN_KEEP, 17, 0, path));
    Onnx__ModelProto *model = read_model(path);
    CU_ASSERT_EQUAL(nodes_of(model->graph, "BatchNormalization"), norms);
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        const Onnx__TensorProto *init = init_named(model->graph, p->name);
        CU_ASSERT_PTR_NOT_NULL(init);
        if (!init) continue;
        CU_ASSERT_EQUAL(init->n_dims, (size_t)p->ndim);
        for (int d = 0; d < p->ndim && d < (int)init->n_dims; d++)
            CU_ASSERT_EQUAL(init->dims[d], p->shape[d]);
        const float *v = (p->trainable ? trainable : state) + p->offset;
        CU_ASSERT_EQUAL(init->raw_data.len, p->count * sizeof(float));
        if (init->raw_data.len == p->count * sizeof(float))
            CU_ASSERT_EQUAL(memcmp(init->raw_data.data, v, init->raw_data.len), 0);
    }
    onnx__model_proto__free_unpacked(model, NULL);

    snprintf(path, sizeof path, "%s/folded.onnx", dir);
    TH_OK(export_to(m, TT_ONNX_BN_FOLD, 17, 0, path));
    model = read_model(path);
    CU_ASSERT_EQUAL(nodes_of(model->graph, "BatchNormalization"), 0);
    const tt_layer *conv = NULL, *norm = NULL;
    for (int i = 0; i + 1 < graph->layer_count && !conv; i++)
        if (graph->layers[i].kind == TT_LAYER_CONV && graph->layers[i + 1].kind == TT_LAYER_NORM)
            conv = &graph->layers[i], norm = &graph->layers[i + 1];
    CU_ASSERT_PTR_NOT_NULL_FATAL(conv);
    const tt_param *w = &t->params[conv->weight];
    const float *weight = trainable + w->offset;
    const float *bias = conv->bias >= 0 ? trainable + t->params[conv->bias].offset : NULL;
    const float *gamma = trainable + t->params[norm->bn_w].offset;
    const float *beta = trainable + t->params[norm->bn_b].offset;
    const float *mean = state + t->params[norm->bn_rm].offset;
    const float *var = state + t->params[norm->bn_rv].offset;
    const Onnx__TensorProto *fw = init_named(model->graph, w->name);
    char bias_name[96];
    snprintf(bias_name, sizeof bias_name, "%s.bias", conv->name);
    const Onnx__TensorProto *fb = init_named(model->graph, bias_name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fw);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fb);
    size_t per_out = w->count / (size_t)w->shape[0];
    double worst = 0;
    for (int o = 0; o < w->shape[0]; o++) {
        double s = gamma[o] / sqrt(var[o] + 1e-5);
        for (size_t k = 0; k < per_out; k++)
            worst = fmax(worst, fabs(value_at(fw, o * per_out + k) - weight[o * per_out + k] * s));
        double b = ((bias ? bias[o] : 0) - mean[o]) * s + beta[o];
        worst = fmax(worst, fabs(value_at(fb, (size_t)o) - b));
    }
    CU_ASSERT(worst < 1e-6);
    onnx__model_proto__free_unpacked(model, NULL);
    /* the folds changed the export's copy of the parameters, not the model's */
    float *after = malloc(t->trainable_floats * sizeof *after);
    float *state_after = malloc((t->state_floats + 1) * sizeof *state_after);
    TH_OK(tt_model_get_params(m, after, state_after));
    CU_ASSERT_EQUAL(memcmp(after, trainable, t->trainable_floats * sizeof *after), 0);
    CU_ASSERT_EQUAL(memcmp(state_after, state, t->state_floats * sizeof *state), 0);
    free(after);
    free(state_after);
    free(trainable);
    free(state);
    tt_model_destroy(m);
}

/* Neither the file nor a temporary of it (PATH.tmp.PID.N) is there. */
static void assert_no_file(const char *path)
{
    char pattern[170];
    snprintf(pattern, sizeof pattern, "%s.tmp*", path);
    glob_t found;
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(glob(pattern, 0, NULL, &found), GLOB_NOMATCH);
    globfree(&found);
}

static void expect_refused(tt_status status, tt_code code, const char *pattern)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(status);
    CU_ASSERT_EQUAL(tt_status_code(status), code);
    if (!strstr(tt_status_message(status), pattern)) {
        printf("\n  '%s' not in: %s\n", pattern, tt_status_message(status));
        CU_FAIL("message");
    }
    tt_status_free(status);
}

static void test_refusals(void)
{
    tt_model *m = model_of("fpn-resnet18");
    char path[128];
    snprintf(path, sizeof path, "%s/refused.onnx", dir);
    expect_refused(export_to(m, TT_ONNX_BN_FOLD, 12, 0, path), TT_ERR_INVALID_ARGUMENT,
                   "--opset 12 is too old for Resize");
    assert_no_file(path);
    expect_refused(export_to(m, TT_ONNX_BN_FOLD, 22, 0, path), TT_ERR_INVALID_ARGUMENT,
                   "give 7 to 21");
    assert_no_file(path);
    snprintf(path, sizeof path, "%s/none/refused.onnx", dir);
    expect_refused(export_to(m, TT_ONNX_BN_FOLD, 17, 0, path), TT_ERR_IO, "cannot create");
    assert_no_file(path);
    tt_model_destroy(m);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_onnx_graph-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    CU_TestInfo tests[] = {
        {"header, input and output, fixed and dynamic", test_header_and_io},
        {"batch norm kept bit for bit, and folded", test_batch_norm},
        {"refusals leave no file", test_refusals},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("onnx_graph", tests, TH_OPENCL);
    th_backend_release();
    const char *names[] = {"fixed.onnx", "dynamic.onnx", "kept.onnx", "folded.onnx"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
    return rc;
}
