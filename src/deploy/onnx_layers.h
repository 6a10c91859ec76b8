/*
 * One layer of a model's layer list (model/graph.h) as ONNX nodes: what
 * tt_onnx_export (onnx_export.c) walks the list with.  Each tensor's value
 * has one name in the ONNX graph (names[t]); a layer's nodes read its
 * inputs' names and set its output's.
 */
#ifndef TT_DEPLOY_ONNX_LAYERS_H
#define TT_DEPLOY_ONNX_LAYERS_H

#include "deploy/onnx_builder.h"
#include "model/graph.h"
#include "model/params.h"

typedef struct tt_onnx_walk {
    tt_onnx_builder *b;
    const tt_graph *g;
    const tt_param_table *params;
    float *trainable, *state;       /* the export's host copies of the model's arenas: the
                                       initializers point into them, the folds change them */
    const char **names;             /* (g->tensor_count) each tensor's value; NULL: not made yet */
    int *folded_into;               /* (g->layer_count) a convolution's: the batch norm folded
                                       into it, or -1 */
} tt_onnx_walk;

/* Marks in w->folded_into each batch norm that reads a convolution's
 * output and nothing else does (the graph's output excepted). */
void tt_onnx_find_folds(tt_onnx_walk *w);

/* The nodes of layer `index` (failures are kept in the builder). */
void tt_onnx_layer(tt_onnx_walk *w, int index);

#endif
