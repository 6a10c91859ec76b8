/* An ONNX model under construction (see onnx_builder.h). */
#include "deploy/onnx_builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

/* The operator set version of each op's form the exporter writes: the
 * version that brought that form (Resize's optional roi and
 * coordinate_transformation_mode, Softmax over one axis: 13; Slice's
 * starts and ends as inputs: 10; broadcasting Add, Sub, Mul, Div: 7). */
typedef struct op_since {
    const char *op;
    int since;
} op_since;

static const op_since op_table[] = {
    {"Add", 7}, {"Sub", 7}, {"Mul", 7}, {"Div", 7}, {"Relu", 6}, {"Sigmoid", 6},
    {"Conv", 1}, {"ConvTranspose", 1}, {"BatchNormalization", 9},
    {"InstanceNormalization", 6}, {"Reshape", 5}, {"Shape", 1}, {"Slice", 10},
    {"Concat", 4}, {"Expand", 8}, {"MaxPool", 1}, {"GlobalAveragePool", 1},
    {"Resize", 13}, {"Softmax", 13}, {"Identity", 1},
};
#define OP_COUNT ((int)(sizeof op_table / sizeof op_table[0]))

/* A growing array of message pointers. */
typedef struct list {
    void **items;
    size_t count, capacity;
} list;

struct tt_onnx_builder {
    int opset;
    tt_status failure;    /* the first; NULL while all went well */
    list owned;           /* every allocation, freed at destroy */
    list nodes, inits, inputs, outputs, names, props;
};

static int list_push(list *l, void *item)
{
    if (l->count == l->capacity) {
        size_t cap = l->capacity ? 2 * l->capacity : 64;
        void **items = tt_realloc(l->items, cap * sizeof *items);
        if (!items) return 0;
        l->items = items, l->capacity = cap;
    }
    l->items[l->count++] = item;
    return 1;
}

static void fail(tt_onnx_builder *b, tt_status status)
{
    if (b->failure) tt_status_free(status);
    else b->failure = status;
}

static void out_of_memory(tt_onnx_builder *b)
{
    fail(b, tt_error_new(TT_ERR_OUT_OF_MEMORY, "ONNX export: out of host memory"));
}

void tt_onnx_out_of_memory(tt_onnx_builder *b) { out_of_memory(b); }

/* size zeroed bytes the builder frees at the end, or NULL (failure kept). */
static void *own(tt_onnx_builder *b, size_t size)
{
    void *p = tt_calloc(1, size ? size : 1);
    if (!p || !list_push(&b->owned, p)) {
        free(p);
        out_of_memory(b);
        return NULL;
    }
    return p;
}

static char *own_string(tt_onnx_builder *b, const char *s)
{
    char *p = own(b, strlen(s) + 1);
    if (p) memcpy(p, s, strlen(s) + 1);
    return p;
}

tt_status tt_onnx_builder_create(int opset, tt_onnx_builder **out)
{
    *out = tt_calloc(1, sizeof **out);
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "ONNX export: out of host memory");
    (*out)->opset = opset;
    return NULL;
}

void tt_onnx_builder_destroy(tt_onnx_builder *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->owned.count; i++) free(b->owned.items[i]);
    list *lists[] = {&b->owned, &b->nodes, &b->inits, &b->inputs, &b->outputs, &b->names,
                     &b->props};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) free(lists[i]->items);
    tt_status_free(b->failure);
    free(b);
}

int tt_onnx_builder_opset(const tt_onnx_builder *b) { return b->opset; }

static int name_taken(const tt_onnx_builder *b, const char *name)
{
    for (size_t i = 0; i < b->names.count; i++)
        if (strcmp(b->names.items[i], name) == 0) return 1;
    return 0;
}

const char *tt_onnx_name(tt_onnx_builder *b, const char *base)
{
    size_t size = strlen(base) + 16;
    char *name = own(b, size);
    if (!name) return NULL;
    snprintf(name, size, "%s", base);
    for (int k = 2; name_taken(b, name); k++) snprintf(name, size, "%s_%d", base, k);
    if (!list_push(&b->names, name)) {
        out_of_memory(b);
        return NULL;
    }
    return name;
}

static int op_since_version(const char *op)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_table[i].op, op) == 0) return op_table[i].since;
    return -1;
}

Onnx__NodeProto *tt_onnx_node(tt_onnx_builder *b, const char *op_type, const char *layer,
                              int n_in, const char *const *inputs, int n_out,
                              const char *const *outputs)
{
    int since = op_since_version(op_type);
    if (since < 0) {
        fail(b, tt_error_new(TT_ERR_INTERNAL, "ONNX export: op %s has no row in "
                             "onnx_builder.c's table", op_type));
        return NULL;
    }
    if (b->opset < since) {
        fail(b, tt_error_new(TT_ERR_INVALID_ARGUMENT,
                             "--opset %d is too old for %s (layer '%s' needs it, as the "
                             "exporter writes it from opset %d): give --opset %d or later",
                             b->opset, op_type, layer, since, since));
        return NULL;
    }
    Onnx__NodeProto *node = own(b, sizeof *node);
    char **in = own(b, (size_t)n_in * sizeof *in), **out = own(b, (size_t)n_out * sizeof *out);
    if (!node || !in || !out) return NULL;
    onnx__node_proto__init(node);
    for (int i = 0; i < n_in + n_out; i++) {
        const char *value = i < n_in ? inputs[i] : outputs[i - n_in];
        if (!value) { /* after an earlier failure, or a value never made (a bug) */
            fail(b, tt_error_new(TT_ERR_INTERNAL, "ONNX export: layer '%s': %s %d of %s "
                                 "has no value", layer, i < n_in ? "input" : "output",
                                 i < n_in ? i : i - n_in, op_type));
            return NULL;
        }
        char *copy = own_string(b, value);
        if (!copy) return NULL;
        if (i < n_in) in[i] = copy;
        else out[i - n_in] = copy;
    }
    node->n_input = (size_t)n_in, node->input = in;
    node->n_output = (size_t)n_out, node->output = out;
    node->op_type = own_string(b, op_type);
    char name[160];
    snprintf(name, sizeof name, "%s/%s", layer, op_type);
    node->name = (char *)tt_onnx_name(b, name);
    node->domain = own_string(b, "");
    if (!node->op_type || !node->name || !node->domain) return NULL;
    if (!list_push(&b->nodes, node)) {
        out_of_memory(b);
        return NULL;
    }
    return node;
}

/* A new attribute of the node, or NULL. */
static Onnx__AttributeProto *attr(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    if (!node) return NULL;
    Onnx__AttributeProto *a = own(b, sizeof *a);
    Onnx__AttributeProto **all = own(b, (node->n_attribute + 1) * sizeof *all);
    if (!a || !all) return NULL;
    onnx__attribute_proto__init(a);
    a->name = own_string(b, name);
    if (!a->name) return NULL;
    a->has_type = 1, a->type = type;
    if (node->n_attribute) memcpy(all, node->attribute, node->n_attribute * sizeof *all);
    all[node->n_attribute++] = a;
    node->attribute = all; /* the old array stays owned until the end */
    return a;
}

void tt_onnx_attr_int(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, int64_t value)
{
    Onnx__AttributeProto *a = attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = value;
}

void tt_onnx_attr_float(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, float value)
{
    Onnx__AttributeProto *a = attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = value;
}

void tt_onnx_attr_string(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name,
                         const char *value)
{
    Onnx__AttributeProto *a = attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *s = a ? own_string(b, value) : NULL;
    if (s) a->has_s = 1, a->s.data = (uint8_t *)s, a->s.len = strlen(s);
}

void tt_onnx_attr_ints(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, int count,
                       const int64_t *values)
{
    Onnx__AttributeProto *a = attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *v = a ? own(b, (size_t)count * sizeof *v) : NULL;
    if (!v) return;
    memcpy(v, values, (size_t)count * sizeof *v);
    a->n_ints = (size_t)count, a->ints = v;
}

/* An initializer of `bytes` bytes of `values` (host order: little-endian
 * on every machine tiletrain runs on, as safetensors assumes too), copied
 * or, with copy 0, pointed at. */
static const char *init(tt_onnx_builder *b, const char *name, int type, int ndim,
                        const int64_t *dims, const void *values, size_t bytes, int copy)
{
    Onnx__TensorProto *t = own(b, sizeof *t);
    int64_t *d = own(b, (size_t)ndim * sizeof *d);
    uint8_t *data = copy ? own(b, bytes) : (uint8_t *)values;
    const char *unique = tt_onnx_name(b, name);
    if (!t || !d || !data || !unique) return NULL;
    onnx__tensor_proto__init(t);
    memcpy(d, dims, (size_t)ndim * sizeof *d);
    if (copy) memcpy(data, values, bytes);
    t->n_dims = (size_t)ndim, t->dims = d;
    t->has_data_type = 1, t->data_type = type;
    t->name = (char *)unique;
    t->has_raw_data = 1, t->raw_data.data = data, t->raw_data.len = bytes;
    if (!list_push(&b->inits, t)) {
        out_of_memory(b);
        return NULL;
    }
    return unique;
}

static size_t element_count(int ndim, const int64_t *dims)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++) count *= (size_t)dims[i];
    return count;
}

const char *tt_onnx_init_f32(tt_onnx_builder *b, const char *name, int ndim, const int64_t *dims,
                             const float *values)
{
    return init(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims, values,
                element_count(ndim, dims) * sizeof *values, 1);
}

const char *tt_onnx_init_f32_in_place(tt_onnx_builder *b, const char *name, int ndim,
                                      const int64_t *dims, const float *values)
{
    return init(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims, values,
                element_count(ndim, dims) * sizeof *values, 0);
}

const char *tt_onnx_init_i64(tt_onnx_builder *b, const char *name, int count,
                             const int64_t *values)
{
    int64_t dims[1] = {count};
    return init(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, dims, values,
                (size_t)count * sizeof *values, 1);
}

/* A float tensor's ValueInfoProto of 4 dims, or NULL. */
static Onnx__ValueInfoProto *value_info(tt_onnx_builder *b, const char *name,
                                        const int64_t dims[4], const char *const symbols[4])
{
    Onnx__ValueInfoProto *v = own(b, sizeof *v);
    Onnx__TypeProto *type = own(b, sizeof *type);
    Onnx__TypeProto__Tensor *tensor = own(b, sizeof *tensor);
    Onnx__TensorShapeProto *shape = own(b, sizeof *shape);
    Onnx__TensorShapeProto__Dimension **dim = own(b, 4 * sizeof *dim);
    if (!v || !type || !tensor || !shape || !dim) return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(type);
    onnx__type_proto__tensor__init(tensor);
    onnx__tensor_shape_proto__init(shape);
    for (int i = 0; i < 4; i++) {
        dim[i] = own(b, sizeof *dim[i]);
        if (!dim[i]) return NULL;
        onnx__tensor_shape_proto__dimension__init(dim[i]);
        if (dims[i] > 0) {
            dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim[i]->dim_value = dims[i];
        } else {
            dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            if (!(dim[i]->dim_param = own_string(b, symbols[i]))) return NULL;
        }
    }
    shape->n_dim = 4, shape->dim = dim;
    tensor->has_elem_type = 1, tensor->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tensor->shape = shape;
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, type->tensor_type = tensor;
    v->name = own_string(b, name);
    v->type = type;
    return v->name ? v : NULL;
}

void tt_onnx_graph_input(tt_onnx_builder *b, const char *name, const int64_t dims[4],
                         const char *const symbols[4])
{
    Onnx__ValueInfoProto *v = value_info(b, name, dims, symbols);
    if (v && !list_push(&b->inputs, v)) out_of_memory(b);
}

void tt_onnx_graph_output(tt_onnx_builder *b, const char *name, const int64_t dims[4],
                          const char *const symbols[4])
{
    Onnx__ValueInfoProto *v = value_info(b, name, dims, symbols);
    if (v && !list_push(&b->outputs, v)) out_of_memory(b);
}

void tt_onnx_metadata(tt_onnx_builder *b, const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = own(b, sizeof *e);
    if (!e) return;
    onnx__string_string_entry_proto__init(e);
    e->key = own_string(b, key);
    e->value = own_string(b, value);
    if (e->key && e->value && !list_push(&b->props, e)) out_of_memory(b);
}

/* The IR version that goes with an opset (onnx/docs/Versioning.md). */
static int64_t ir_version(int opset)
{
    return opset <= 8 ? 3 : opset == 9 ? 4 : opset == 10 ? 5 : opset == 11 ? 6
           : opset <= 14 ? 7 : opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

/* The packed model straight into the file: protobuf-c hands its bytes
 * over piece by piece (the weights as they are, no copy of the whole
 * model); a failed write is the stream's error, which
 * tt_file_write_atomic notices. */
typedef struct file_buffer {
    ProtobufCBuffer base;
    FILE *f;
} file_buffer;

static void file_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data)
{
    file_buffer *fb = (file_buffer *)buffer;
    if (len && !ferror(fb->f)) (void)fwrite(data, 1, len, fb->f);
}

static tt_status pack_into(FILE *f, void *model)
{
    file_buffer fb = {{file_append}, f};
    onnx__model_proto__pack_to_buffer(model, &fb.base);
    return NULL;
}

tt_status tt_onnx_builder_write(tt_onnx_builder *b, const char *graph_name, const char *version,
                                const char *path)
{
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    if (b->failure) {
        tt_status failure = b->failure;
        b->failure = NULL;
        return failure;
    }
    graph.name = (char *)graph_name;
    graph.n_node = b->nodes.count, graph.node = (Onnx__NodeProto **)b->nodes.items;
    graph.n_initializer = b->inits.count;
    graph.initializer = (Onnx__TensorProto **)b->inits.items;
    graph.n_input = b->inputs.count, graph.input = (Onnx__ValueInfoProto **)b->inputs.items;
    graph.n_output = b->outputs.count, graph.output = (Onnx__ValueInfoProto **)b->outputs.items;
    opset.domain = "", opset.has_version = 1, opset.version = b->opset;
    model.has_ir_version = 1, model.ir_version = ir_version(b->opset);
    model.n_opset_import = 1, model.opset_import = opsets;
    model.producer_name = "tiletrain", model.producer_version = (char *)version;
    model.graph = &graph;
    model.n_metadata_props = b->props.count;
    model.metadata_props = (Onnx__StringStringEntryProto **)b->props.items;
    tt_status status = tt_file_write_atomic(path, pack_into, &model);
    return status ? tt_error_prefix(status, "writing the ONNX model") : NULL;
}
