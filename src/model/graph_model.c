/* What every model built as a layer list does alike; see graph_model.h. */
#include "model/graph_model.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/exec_internal.h"
#include "model/head.h"

static tt_status forward(tt_model *m, int batch, int training)
{
    return tt_exec_forward(&((tt_graph_model *)m)->exec, batch, training);
}

static tt_status backward(tt_model *m) { return tt_exec_backward(&((tt_graph_model *)m)->exec); }

static void destroy(tt_model *m)
{
    tt_graph_model *gm = (tt_graph_model *)m;
    if (!gm) return;
    tt_model_head_free(&gm->model);
    tt_buffer_free(gm->wsplit);
    tt_buffer_free(gm->bands);
    tt_exec_free(&gm->exec);
    tt_graph_free(&gm->graph);
    tt_params_free(&gm->params);
    free(gm);
}

static const tt_model_ops graph_model_ops = {forward, backward, destroy};

const tt_graph *tt_graph_model_graph(const tt_model *model)
{
    if (!model || model->ops != &graph_model_ops) return NULL;
    return &((const tt_graph_model *)model)->graph;
}

tt_status tt_graph_model_new(size_t size, tt_backend *be, const tt_model_spec *spec, int capacity,
                             int height, int width, tt_graph_model **out)
{
    *out = tt_calloc(1, size);
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", spec->kind);
    (*out)->model = (tt_model){.ops = &graph_model_ops, .be = be, .spec = *spec,
                               .capacity = capacity, .height = height, .width = width};
    (*out)->conv_algo = spec->algo;
    return NULL;
}

tt_status tt_graph_model_bind(tt_graph_model *gm, uint64_t seed)
{
    tt_model *m = &gm->model;
    tt_graph *g = &gm->graph;
    TT_TRY(tt_model_head_params(m, &gm->params, seed));
    int norms = 0;
    for (int i = 0; i < g->layer_count; i++)
        norms += g->layers[i].kind == TT_LAYER_NORM && g->layers[i].norm == TT_NORM_BATCH;
    m->counters = tt_calloc((size_t)norms + 1, sizeof *m->counters);
    if (!m->counters)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", m->spec.kind);
    for (int i = 0; i < g->layer_count; i++) {
        tt_layer *l = &g->layers[i];
        if (l->kind != TT_LAYER_NORM || l->norm != TT_NORM_BATCH) continue;
        l->bn = (tt_batch_norm_state){tt_model_param(m, l->bn_w), tt_model_param(m, l->bn_b),
                                      tt_model_param(m, l->bn_rm), tt_model_param(m, l->bn_rv), 0};
        tt_model_counter *k = &m->counters[m->counter_count++];
        snprintf(k->name, sizeof k->name, "%.70s.num_batches_tracked", l->name);
        k->value = &l->bn.num_batches_tracked;
    }
    return NULL;
}

/* Floats of the largest two-input convolution's weight. */
static size_t largest_split(const tt_graph *g)
{
    size_t most = 0;
    for (int i = 0; i < g->layer_count; i++) {
        const tt_layer *l = &g->layers[i];
        if (l->kind != TT_LAYER_CONV || l->in[1] < 0) continue;
        size_t f = (size_t)g->tensors[l->out].channels *
                   (g->tensors[l->in[0]].channels + g->tensors[l->in[1]].channels) * l->kernel *
                   l->kernel;
        if (f > most) most = f;
    }
    return most;
}

tt_status tt_graph_model_place(tt_graph_model *gm, int banded, tt_precision band_precision)
{
    tt_model *m = &gm->model;
    tt_graph *g = &gm->graph;
    tt_exec *x = &gm->exec;
    tt_status status = NULL;
    tt_arena_plan plan = {0};
    TT_CHECK(tt_model_head_input(m));
    g->tensors[g->input].fwd = m->input;
    size_t halves = largest_split(g); /* the weight's halves and its gradient's */
    if (halves)
        TT_CHECK(tt_buffer_alloc(m->be, 2 * halves * sizeof(float), TT_MEM_WORKSPACE,
                                 "conv.halves", &gm->wsplit));
    *x = (tt_exec){.model = m, .graph = g, .algo = &gm->conv_algo, .wsplit = gm->wsplit,
                   .banded = banded, .band_precision = band_precision,
                   .runner = &tt_exec_band_runner};
    if (banded) {
        x->band_floats = tt_exec_band_room_floats(x);
        TT_CHECK(tt_buffer_alloc(m->be, 3 * x->band_floats * sizeof(float), TT_MEM_WORKSPACE,
                                 "band rooms", &gm->bands));
        x->bands = gm->bands;
    }
    TT_CHECK(tt_exec_name_places(x, &plan));
    /* the workspace from the step's convolutions (a split one as its
     * halves), then the lives with it in place */
    TT_CHECK(tt_model_size_convs(m, &plan, tt_exec_record_step, x, &gm->conv_algo));
    TT_CHECK(tt_model_head_place(m, &plan, tt_exec_record_step, x));
    g->tensors[g->input].fwd = m->input;
    m->logits = g->tensors[g->output].fwd;
    m->dlogits = g->tensors[g->output].grad;
cleanup:
    tt_arena_plan_free(&plan);
    return status;
}
