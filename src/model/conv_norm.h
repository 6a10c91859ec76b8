/*
 * A convolution and the batch norm after it, as the builders of smp-style
 * models (unet_resnet.c, fpn.c, resnet_encoder.c) add them: the
 * parameters under their state_dict names, then the layers and what the
 * backward keeps of their outputs.
 */
#ifndef TT_MODEL_CONV_NORM_H
#define TT_MODEL_CONV_NORM_H

#include "model/graph_model.h"

typedef struct tt_conv_norm {
    char name[48], norm[48];  /* the norm's "" without one (a bias instead) */
    int cin, cout, kernel, stride, groups;
    int dilation;             /* 0 means 1; padded by dilation * (kernel / 2) */
    int weight, bias, bn_w, bn_b, bn_rm, bn_rv; /* parameter indices, -1: none */
    tt_norm_kind kind;        /* the norm's: batch (the default) or group */
    int norm_groups;          /* group norm's groups */
} tt_conv_norm;

/* How the backward has a convolution's output and its norm's. */
typedef struct tt_conv_keeps {
    tt_keep out, act;
    int relu, frozen;
    int store16;              /* the output kept in 16 bits (the model's storage) */
} tt_conv_keeps;

/* The parameters of convolution `conv` (k x k, stride s, padding k / 2, in
 * `groups` groups) of cin -> cout channels and of its batch norm `norm`;
 * norm NULL: none, and a bias. */
tt_status tt_conv_norm_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv,
                              const char *norm, int cin, int cout, int k, int s, int groups);
/* A convolution alone, without a norm or a bias (a depthwise one before
 * its pointwise one). */
tt_status tt_conv_plain_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv, int cin,
                               int cout, int k, int groups);
/* The same with a group norm of `groups` groups (weight and bias only) and
 * no bias on the convolution. */
tt_status tt_conv_group_norm_params(tt_graph_model *gm, tt_conv_norm *c, const char *conv,
                                    const char *norm, int cin, int cout, int k, int groups);
/* One parameter "<prefix>.<suffix>"; its index in *index. */
tt_status tt_conv_norm_param(tt_graph_model *gm, const char *prefix, const char *suffix, int ndim,
                             const int *shape, tt_param_role role, int fan_in, int *index);

/* Convolution c over in0 (and in1: the weight's input channels split
 * [in0 | in1]) into a new tensor (or `out`), and its norm; returns the
 * tensor the next layer reads (the norm's output, or the convolution's
 * without a norm). */
int tt_conv_norm_layers(tt_graph_model *gm, const tt_conv_norm *c, int in0, int in1, int out,
                        tt_conv_keeps k);

#endif
