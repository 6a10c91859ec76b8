/*
 * The one executor of a layer list (graph.h): forward in list order,
 * backward in reverse (adding into the gradient arena), and what the
 * backward reads made again as each tensor's keep says.  A model holds
 * one (its head, its graph, its convolution algorithm and the room of a
 * two-input convolution's weight halves).
 */
#ifndef TT_MODEL_EXEC_H
#define TT_MODEL_EXEC_H

#include "model/arena_plan.h"
#include "model/graph.h"
#include "model/model.h"

typedef struct tt_exec tt_exec;

/* How each layer runs when not as plain kernels on whole tensors (the
 * banded storage: exec_band.c's tt_exec_band_runner). */
typedef struct tt_exec_runner {
    tt_status (*forward)(tt_exec *x, tt_layer *l, tt_mem out, int again);
    tt_status (*backward)(tt_exec *x, const tt_layer *l);
} tt_exec_runner;

/* A RECOMPUTE tensor's place for the backward of one layer (its scope),
 * or a rounded tensor's for a reader (the scope) far on in the forward. */
typedef struct tt_exec_pass {
    int tensor, scope;
    int forward;                  /* a place of the forward's (a rounded tensor read far on) */
    tt_mem place;
    int made;
} tt_exec_pass;

struct tt_exec {
    tt_model *model;              /* the head: backend, parameters, workspace, norm sync */
    tt_graph *graph;
    const tt_conv_algo *algo;     /* the kind's: AUTO, or the direct kernels' */
    tt_buffer *wsplit;            /* a two-input conv's weight and gradient in halves */
    int batch, training;          /* of the last forward */
    int scope;                    /* the layer whose backward runs (RECOMPUTE places are
                                     its own, or its group's) */
    int symbolic;                 /* finding the RECOMPUTE places: nothing runs */
    int in_forward;               /* the forward runs: the places taken are its own */
    tt_exec_pass *passes;
    int pass_count, pass_capacity;
    int failed;
    int recording;                /* the plan's record of a step (tt_exec_record_step) */
    unsigned splits;              /* wsplit rooms filled so far: a two-input conv checks that
                                     none came between its halves */
    int banded;                   /* banded storage (exec_band.c): every tensor stored whole in
                                     band_precision (fp32 at an odd width), the fp32 kernels run
                                     on row bands of them in three band rooms, each layer by
                                     the runner's functions */
    const struct tt_exec_runner *runner;
    tt_precision band_precision;
    tt_buffer *bands;             /* the rooms, band_floats each (the model's) */
    size_t band_floats;
};

tt_status tt_exec_forward(tt_exec *x, int batch, int training);
/* Adds the gradient of the loss, given at the output's gradient place
 * (the model's dlogits), into the gradient arena. */
tt_status tt_exec_backward(tt_exec *x);
/* Names every place of the step in `plan` (the RECOMPUTE places found by
 * running the backward once symbolically). */
tt_status tt_exec_name_places(tt_exec *x, tt_arena_plan *plan);
/* The step the plan records: a training forward of a whole micro-batch,
 * the loss's copy, the backward (the head puts its counters back). */
tt_status tt_exec_record_step(void *exec, tt_backend *recorder);
void tt_exec_free(tt_exec *x);

#endif
