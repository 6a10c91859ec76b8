/*
 * A convolution and the norm after it: parameters and layers (conv_norm.h).
 */
#include "model/conv_norm.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"

tt_status tt_conv_norm_param(tt_graph_model *gm, const char *prefix, const char *suffix, int ndim,
                             const int *shape, tt_param_role role, int fan_in, int *index)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    *index = gm->params.count;
    return tt_params_add(&gm->params, name, ndim, shape, role, fan_in);
}

static tt_status conv_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv,
                             const char *norm, int cin, int cout, int k, int s, int groups,
                             int bias)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", conv);
    snprintf(c->norm, sizeof c->norm, "%s", norm ? norm : "");
    c->cin = cin, c->cout = cout, c->kernel = k, c->stride = s, c->groups = groups;
    c->bias = c->bn_w = c->bn_b = c->bn_rm = c->bn_rv = -1;
    c->kind = TT_NORM_BATCH;
    int fan_in = cin / groups * k * k, wshape[4] = {cout, cin / groups, k, k};
    TT_TRY(tt_conv_norm_param(gm, conv, "weight", 4, wshape, TT_PARAM_WEIGHT, fan_in, &c->weight));
    if (!bias) return NULL;
    return tt_conv_norm_param(gm, conv, "bias", 1, &cout, TT_PARAM_BIAS, fan_in, &c->bias);
}

tt_status tt_conv_norm_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv,
                              const char *norm, int cin, int cout, int k, int s, int groups)
{
    TT_TRY(conv_params(gm, c, conv, norm, cin, cout, k, s, groups, !norm));
    if (!norm) return NULL;
    int v[1] = {cout};
    TT_TRY(tt_conv_norm_param(gm, norm, "weight", 1, v, TT_PARAM_NORM_WEIGHT, 0, &c->bn_w));
    TT_TRY(tt_conv_norm_param(gm, norm, "bias", 1, v, TT_PARAM_NORM_BIAS, 0, &c->bn_b));
    TT_TRY(tt_conv_norm_param(gm, norm, "running_mean", 1, v, TT_PARAM_RUNNING_MEAN, 0, &c->bn_rm));
    return tt_conv_norm_param(gm, norm, "running_var", 1, v, TT_PARAM_RUNNING_VAR, 0, &c->bn_rv);
}

tt_status tt_conv_plain_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv, int cin,
                               int cout, int k, int groups)
{
    return conv_params(gm, c, conv, NULL, cin, cout, k, 1, groups, 0);
}

tt_status tt_conv_group_norm_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv,
                                    const char *norm, int cin, int cout, int k, int groups)
{
    TT_TRY(conv_params(gm, c, conv, norm, cin, cout, k, 1, 1, 0));
    c->kind = TT_NORM_GROUP, c->norm_groups = groups;
    int v[1] = {cout};
    TT_TRY(tt_conv_norm_param(gm, norm, "weight", 1, v, TT_PARAM_NORM_WEIGHT, 0, &c->bn_w));
    return tt_conv_norm_param(gm, norm, "bias", 1, v, TT_PARAM_NORM_BIAS, 0, &c->bn_b);
}

int tt_conv_norm_layers(tt_graph_model *gm, const tt_conv_norm *c, int in0, int in1, int out,
                        tt_conv_keeps k)
{
    tt_graph *g = &gm->graph;
    const tt_tensor_def *in = tt_graph_def(g, in0);
    int d = c->dilation > 1 ? c->dilation : 1, reach = d * (c->kernel - 1) + 1;
    int oh = (in->height + 2 * d * (c->kernel / 2) - reach) / c->stride + 1;
    int ow = (in->width + 2 * d * (c->kernel / 2) - reach) / c->stride + 1;
    char name[64];
    if (out < 0) {
        snprintf(name, sizeof name, "%s.out", c->name);
        out = tt_graph_tensor(g, name, c->cout, oh, ow, k.out);
    }
    if (!g->failed && k.store16) g->tensors[out].storage = gm->model.spec.precision;
    tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV, c->name, in0, in1, out);
    l->kernel = c->kernel, l->stride = c->stride, l->weight = c->weight, l->bias = c->bias;
    l->groups = c->groups > 1 ? c->groups : 0, l->dilation = c->dilation;
    l->no_input_grad = in0 == g->input;
    if (c->bn_w < 0) return out;
    snprintf(name, sizeof name, "%s.act", c->name);
    int act = tt_graph_tensor(g, name, c->cout, oh, ow, k.act);
    tt_layer *n = tt_graph_layer(g, TT_LAYER_NORM, c->norm, out, -1, act);
    n->relu = k.relu, n->frozen = k.frozen;
    n->norm = c->kind, n->bn_w = c->bn_w, n->bn_b = c->bn_b, n->bn_rm = c->bn_rm,
    n->bn_rv = c->bn_rv;
    if (c->kind == TT_NORM_GROUP) n->groups = c->norm_groups;
    if (!g->failed) g->tensors[out].grad_alias = act; /* its backward runs in place */
    return act;
}
