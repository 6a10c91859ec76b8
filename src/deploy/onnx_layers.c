/* One layer of a layer list as ONNX nodes (see onnx_layers.h). */
#include "deploy/onnx_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ops/norm.h"

static const tt_param *param(const tt_onnx_walk *w, int index)
{
    return &w->params->params[index];
}

static float *values(const tt_onnx_walk *w, int index)
{
    const tt_param *p = param(w, index);
    return (p->trainable ? w->trainable : w->state) + p->offset;
}

/* The value name of tensor t's output: kept where the export chose it
 * (the graph's output), else a new one from the tensor's name. */
static const char *made(tt_onnx_walk *w, int t)
{
    if (!w->names[t]) w->names[t] = tt_onnx_name(w->b, w->g->tensors[t].name);
    return w->names[t];
}

/* A value name for an intermediate result of layer l: "LAYER/what". */
static const char *temp(tt_onnx_walk *w, const tt_layer *l, const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "%s/%s", l->name, what);
    return tt_onnx_name(w->b, name);
}

static Onnx__NodeProto *node1(tt_onnx_walk *w, const char *op, const tt_layer *l, const char *a,
                              const char *out)
{
    const char *in[1] = {a}, *o[1] = {out};
    return tt_onnx_node(w->b, op, l->name, 1, in, 1, o);
}

static Onnx__NodeProto *node2(tt_onnx_walk *w, const char *op, const tt_layer *l, const char *a,
                              const char *b, const char *out)
{
    const char *in[2] = {a, b}, *o[1] = {out};
    return tt_onnx_node(w->b, op, l->name, 2, in, 1, o);
}

/* x, then a Relu into `out` when relu is set (else x is `out`'s value). */
static void maybe_relu(tt_onnx_walk *w, const tt_layer *l, int relu, const char *x, int out)
{
    if (relu) node1(w, "Relu", l, x, made(w, out));
}

/* Where an op with a ReLU after it writes: a temporary, or the output. */
static const char *before_relu(tt_onnx_walk *w, const tt_layer *l, int relu, int out)
{
    return relu ? temp(w, l, "pre_relu") : made(w, out);
}

static void square_attrs(tt_onnx_walk *w, Onnx__NodeProto *n, int kernel, int stride, int pad)
{
    int64_t k[2] = {kernel, kernel}, s[2] = {stride, stride}, p[4] = {pad, pad, pad, pad};
    tt_onnx_attr_ints(w->b, n, "kernel_shape", 2, k);
    tt_onnx_attr_ints(w->b, n, "strides", 2, s);
    tt_onnx_attr_ints(w->b, n, "pads", 4, p);
}

void tt_onnx_find_folds(tt_onnx_walk *w)
{
    const tt_graph *g = w->g;
    int *readers = tt_calloc((size_t)g->tensor_count, sizeof *readers);
    for (int i = 0; i < g->layer_count; i++) w->folded_into[i] = -1;
    if (!readers) return; /* nothing folded: kept as BatchNormalization */
    for (int i = 0; i < g->layer_count; i++)
        for (int k = 0; k < 2; k++)
            if (g->layers[i].in[k] >= 0) readers[g->layers[i].in[k]]++;
    for (int i = 0; i < g->layer_count; i++) {
        const tt_layer *l = &g->layers[i];
        if (l->kind != TT_LAYER_NORM || l->norm != TT_NORM_BATCH) continue;
        int x = l->in[0], producer = g->tensors[x].producer;
        if (producer >= 0 && g->layers[producer].kind == TT_LAYER_CONV && readers[x] == 1 &&
            x != g->output)
            w->folded_into[producer] = i;
    }
    free(readers);
}

/* The batch norm `norm` folded into a convolution's weight and bias, in
 * the export's own copy of the parameters:
 * weight * s, (bias - mean) * s + beta, s = gamma / sqrt(var + eps). */
static void fold(const tt_onnx_walk *w, const tt_layer *norm, float *weight, float *bias,
                 int cout, size_t per_out)
{
    const float *gamma = values(w, norm->bn_w), *beta = values(w, norm->bn_b);
    const float *mean = values(w, norm->bn_rm), *var = values(w, norm->bn_rv);
    for (int o = 0; o < cout; o++) {
        double s = gamma[o] / sqrt((double)var[o] + TT_NORM_DEFAULT_EPS);
        for (size_t k = 0; k < per_out; k++)
            weight[o * per_out + k] = (float)(weight[o * per_out + k] * s);
        bias[o] = (float)((bias[o] - mean[o]) * s + beta[o]);
    }
}

/* Conv (its inputs concatenated first when it has two), with the batch
 * norm after it folded in when there is one to fold.  Its initializers
 * point into the walk's parameters; only a bias the fold makes (a
 * convolution without one) is new. */
static void conv(tt_onnx_walk *w, int index)
{
    const tt_layer *l = &w->g->layers[index];
    const tt_param *wp = param(w, l->weight);
    int cout = wp->shape[0], norm_index = w->folded_into[index];
    const tt_layer *norm = norm_index >= 0 ? &w->g->layers[norm_index] : NULL;
    float *weight = values(w, l->weight), *bias = l->bias >= 0 ? values(w, l->bias) : NULL;
    float *made_bias = NULL;
    if (norm && !bias) {
        bias = made_bias = tt_calloc((size_t)cout, sizeof *made_bias);
        if (!made_bias) tt_onnx_out_of_memory(w->b);
    }
    if (norm && bias) fold(w, norm, weight, bias, cout, wp->count / (size_t)cout);
    const char *input = w->names[l->in[0]];
    if (l->in[1] >= 0) {
        Onnx__NodeProto *cat = node2(w, "Concat", l, input, w->names[l->in[1]], temp(w, l, "inputs"));
        tt_onnx_attr_int(w->b, cat, "axis", 1);
        input = cat ? cat->output[0] : NULL;
    }
    int64_t dims[4] = {wp->shape[0], wp->shape[1], wp->shape[2], wp->shape[3]}, bdims[1] = {cout};
    char bias_name[96];
    snprintf(bias_name, sizeof bias_name, "%s.bias", l->name);
    const char *wname = tt_onnx_init_f32_in_place(w->b, wp->name, 4, dims, weight);
    const char *bname = !bias ? ""
                        : made_bias ? tt_onnx_init_f32(w->b, bias_name, 1, bdims, made_bias)
                        : tt_onnx_init_f32_in_place(w->b, param(w, l->bias)->name, 1, bdims, bias);
    free(made_bias);
    int relu = norm && norm->relu, out = norm ? norm->out : l->out;
    const char *in[3] = {input, wname, bname}, *o[1] = {before_relu(w, l, relu, out)};
    Onnx__NodeProto *n = tt_onnx_node(w->b, "Conv", l->name, bname && bname[0] ? 3 : 2, in, 1, o);
    int d = l->dilation > 1 ? l->dilation : 1;
    int64_t dil[2] = {d, d};
    square_attrs(w, n, l->kernel, l->stride, d * (l->kernel / 2));
    tt_onnx_attr_ints(w->b, n, "dilations", 2, dil);
    tt_onnx_attr_int(w->b, n, "group", l->groups > 1 ? l->groups : 1);
    maybe_relu(w, l, relu, o[0], out);
}

/* A (C) parameter as a (C, 1, 1) initializer, to broadcast over a plane. */
static const char *per_channel(tt_onnx_walk *w, int index)
{
    const tt_param *p = param(w, index);
    int64_t dims[3] = {(int64_t)p->count, 1, 1};
    return tt_onnx_init_f32_in_place(w->b, p->name, 3, dims, values(w, index));
}

static void batch_norm(tt_onnx_walk *w, const tt_layer *l)
{
    const char *in[5] = {w->names[l->in[0]]};
    int idx[4] = {l->bn_w, l->bn_b, l->bn_rm, l->bn_rv};
    for (int k = 0; k < 4; k++) {
        int64_t dims[1] = {(int64_t)param(w, idx[k])->count};
        in[k + 1] = tt_onnx_init_f32_in_place(w->b, param(w, idx[k])->name, 1, dims,
                                              values(w, idx[k]));
    }
    const char *o[1] = {before_relu(w, l, l->relu, l->out)};
    Onnx__NodeProto *n = tt_onnx_node(w->b, "BatchNormalization", l->name, 5, in, 1, o);
    tt_onnx_attr_float(w->b, n, "epsilon", TT_NORM_DEFAULT_EPS);
    maybe_relu(w, l, l->relu, o[0], l->out);
}

/* Group norm: InstanceNormalization over (N, groups, C / groups * H * W),
 * back to x's shape, then weight and bias per channel. */
static void group_norm(tt_onnx_walk *w, const tt_layer *l)
{
    const char *x = w->names[l->in[0]];
    int groups = l->groups;
    int64_t grouped[3] = {0, groups, -1}, gdims[1] = {groups};
    float *ones = tt_malloc((size_t)groups * sizeof *ones), *zeros = tt_calloc((size_t)groups, sizeof *zeros);
    if (!ones || !zeros) tt_onnx_out_of_memory(w->b);
    for (int k = 0; ones && k < groups; k++) ones[k] = 1.0f;
    const char *scale = ones ? tt_onnx_init_f32(w->b, "group_norm.ones", 1, gdims, ones) : NULL;
    const char *shift = zeros ? tt_onnx_init_f32(w->b, "group_norm.zeros", 1, gdims, zeros) : NULL;
    free(ones);
    free(zeros);
    const char *shape = tt_onnx_init_i64(w->b, "group_norm.grouped", 3, grouped);
    const char *r = temp(w, l, "grouped"), *shape_x = temp(w, l, "shape");
    node2(w, "Reshape", l, x, shape, r);
    const char *in[3] = {r, scale, shift}, *o[1] = {temp(w, l, "normalised")};
    Onnx__NodeProto *n = tt_onnx_node(w->b, "InstanceNormalization", l->name, 3, in, 1, o);
    tt_onnx_attr_float(w->b, n, "epsilon", TT_NORM_DEFAULT_EPS);
    node1(w, "Shape", l, x, shape_x);
    const char *back = temp(w, l, "ungrouped"), *scaled = temp(w, l, "scaled");
    node2(w, "Reshape", l, o[0], shape_x, back);
    node2(w, "Mul", l, back, per_channel(w, l->bn_w), scaled);
    const char *sum = before_relu(w, l, l->relu, l->out);
    node2(w, "Add", l, scaled, per_channel(w, l->bn_b), sum);
    maybe_relu(w, l, l->relu, sum, l->out);
}

/* Resize by `factor`: nearest (asymmetric, floor: out[y] = in[y / 2]) or
 * bilinear with align_corners. */
static void upsample(tt_onnx_walk *w, const tt_layer *l)
{
    float factor = l->bilinear ? (float)l->factor : 2.0f;
    int64_t dims[1] = {4};
    float scales[4] = {1.0f, 1.0f, factor, factor};
    const char *in[3] = {w->names[l->in[0]], "", tt_onnx_init_f32(w->b, "resize.scales", 1, dims, scales)};
    const char *o[1] = {made(w, l->out)};
    Onnx__NodeProto *n = tt_onnx_node(w->b, "Resize", l->name, 3, in, 1, o);
    tt_onnx_attr_string(w->b, n, "mode", l->bilinear ? "linear" : "nearest");
    tt_onnx_attr_string(w->b, n, "coordinate_transformation_mode",
                        l->bilinear ? "align_corners" : "asymmetric");
    if (!l->bilinear) tt_onnx_attr_string(w->b, n, "nearest_mode", "floor");
}

static void conv_transpose(tt_onnx_walk *w, const tt_layer *l)
{
    const tt_param *wp = param(w, l->weight);
    int64_t dims[4] = {wp->shape[0], wp->shape[1], wp->shape[2], wp->shape[3]};
    const char *in[3] = {w->names[l->in[0]],
                         tt_onnx_init_f32_in_place(w->b, wp->name, 4, dims, values(w, l->weight)), ""};
    if (l->bias >= 0) {
        int64_t bdims[1] = {(int64_t)param(w, l->bias)->count};
        in[2] = tt_onnx_init_f32_in_place(w->b, param(w, l->bias)->name, 1, bdims,
                                          values(w, l->bias));
    }
    const char *o[1] = {made(w, l->out)};
    Onnx__NodeProto *n = tt_onnx_node(w->b, "ConvTranspose", l->name, l->bias >= 0 ? 3 : 2, in, 1, o);
    square_attrs(w, n, l->kernel, l->stride, l->pad);
}

/* The latest value before layer `index` whose plane is tensor t's: what a
 * broadcast spreads its 1x1 input over (DeepLab's image pooling: the
 * features the pooling read), so that its shape follows the input's. */
static const char *same_plane(const tt_onnx_walk *w, int index, int t)
{
    const tt_graph *g = w->g;
    const tt_tensor_def *d = &g->tensors[t];
    for (int i = index - 1; i >= 0; i--) {
        const tt_tensor_def *o = &g->tensors[g->layers[i].out];
        if (o->height == d->height && o->width == d->width && w->names[g->layers[i].out])
            return w->names[g->layers[i].out];
    }
    const tt_tensor_def *in = &g->tensors[g->input];
    return in->height == d->height && in->width == d->width ? w->names[g->input] : NULL;
}

/* (N, C, 1, 1) over the plane: Expand to (1, 1, H, W) of a value of that
 * plane, its H and W read by Shape and Slice. */
static void broadcast(tt_onnx_walk *w, int index)
{
    const tt_layer *l = &w->g->layers[index];
    const char *source = same_plane(w, index, l->out);
    int64_t two[1] = {2}, four[1] = {4}, ones[2] = {1, 1};
    const char *shape = temp(w, l, "source_shape"), *plane = temp(w, l, "plane");
    const char *target = temp(w, l, "target");
    node1(w, "Shape", l, source, shape);
    const char *slice[3] = {shape, tt_onnx_init_i64(w->b, "broadcast.from", 1, two),
                            tt_onnx_init_i64(w->b, "broadcast.to", 1, four)};
    const char *o[1] = {plane};
    tt_onnx_node(w->b, "Slice", l->name, 3, slice, 1, o);
    Onnx__NodeProto *cat = node2(w, "Concat", l, tt_onnx_init_i64(w->b, "broadcast.ones", 2, ones),
                                 plane, target);
    tt_onnx_attr_int(w->b, cat, "axis", 0);
    node2(w, "Expand", l, w->names[l->in[0]], target, made(w, l->out));
}

void tt_onnx_layer(tt_onnx_walk *w, int index)
{
    const tt_layer *l = &w->g->layers[index];
    const char *a = w->names[l->in[0]], *b = l->in[1] >= 0 ? w->names[l->in[1]] : NULL;
    switch (l->kind) {
    case TT_LAYER_CONV:
        conv(w, index);
        return;
    case TT_LAYER_NORM: {
        int producer = w->g->tensors[l->in[0]].producer;
        if (l->norm == TT_NORM_GROUP) group_norm(w, l);
        else if (producer < 0 || w->folded_into[producer] != index) batch_norm(w, l);
        return; /* else folded: made by its convolution */
    }
    case TT_LAYER_RELU:
        node1(w, "Relu", l, a, made(w, l->out));
        return;
    case TT_LAYER_ADD: {
        const char *sum = before_relu(w, l, l->relu, l->out);
        node2(w, "Add", l, a, b, sum);
        maybe_relu(w, l, l->relu, sum, l->out);
        return;
    }
    case TT_LAYER_MAX_POOL:
        square_attrs(w, node1(w, "MaxPool", l, a, made(w, l->out)), l->kernel, l->stride, l->pad);
        return;
    case TT_LAYER_UPSAMPLE:
        upsample(w, l);
        return;
    case TT_LAYER_CONV_T:
        conv_transpose(w, l);
        return;
    case TT_LAYER_DROPOUT: /* the identity at inference */
        if (w->names[l->out]) node1(w, "Identity", l, a, w->names[l->out]); /* the output's */
        else w->names[l->out] = a;
        return;
    case TT_LAYER_CONCAT:
        tt_onnx_attr_int(w->b, node2(w, "Concat", l, a, b, made(w, l->out)), "axis", 1);
        return;
    case TT_LAYER_MEAN:
        node1(w, "GlobalAveragePool", l, a, made(w, l->out));
        return;
    case TT_LAYER_BROADCAST:
        broadcast(w, index);
        return;
    case TT_LAYER_ACT:
        if (l->act == TT_ACT_SILU) {
            const char *s = temp(w, l, "sigmoid");
            node1(w, "Sigmoid", l, a, s);
            node2(w, "Mul", l, a, s, made(w, l->out));
        } else {
            node1(w, "Sigmoid", l, a, made(w, l->out));
        }
        return;
    case TT_LAYER_CHANNEL_MUL:
        node2(w, "Mul", l, a, b, made(w, l->out));
        return;
    }
}
