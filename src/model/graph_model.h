/*
 * A model built as a layer list (graph.h), run by the executor (exec.h):
 * what every such model holds and does alike.  A kind's builder (unet.c,
 * unet_resnet.c) allocates a struct that begins with a tt_graph_model,
 * adds its parameters and layers, and calls bind and place; the model's
 * forward, backward and destroy are these.
 */
#ifndef TT_MODEL_GRAPH_MODEL_H
#define TT_MODEL_GRAPH_MODEL_H

#include "model/exec.h"
#include "model/graph.h"
#include "model/model.h"
#include "model/params.h"

typedef struct tt_graph_model {
    tt_model model;           /* the interface's head, which owns the device buffers; first */
    tt_param_table params;
    tt_conv_algo conv_algo;   /* the spec's, or the direct kernels' where AUTO's workspace
                                 would not fit */
    tt_buffer *wsplit;        /* a two-input convolution's weight and gradient in halves */
    tt_buffer *bands;         /* the banded step's rooms (exec_band.c); NULL without */
    tt_graph graph;
    tt_exec exec;
} tt_graph_model;

/* A zeroed struct of `size` bytes that begins with a tt_graph_model, its
 * head set for the spec (the ops are this file's).  *out: tt_model_destroy(). */
tt_status tt_graph_model_new(size_t size, tt_backend *be, const tt_model_spec *spec, int capacity,
                             int height, int width, tt_graph_model **out);
/* After the layers (tt_graph_finish): the parameters from `seed`, and each
 * batch norm's state in them with its counter by name. */
tt_status tt_graph_model_bind(tt_graph_model *gm, uint64_t seed);
/* The input, the two-input convolutions' halves room, the band rooms
 * (banded: every tensor stored in band_precision), the workspace and the
 * arena, each from the step the executor records. */
tt_status tt_graph_model_place(tt_graph_model *gm, int banded, tt_precision band_precision);
/* The layer list of a model built as one (every kind of model.c's table),
 * or NULL for a model that is not (ONNX export walks it). */
const tt_graph *tt_graph_model_graph(const tt_model *model);

#endif
