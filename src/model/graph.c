/* A model as a list of layers over named tensors; see graph.h. */
#include "model/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

int tt_graph_tensor(tt_graph *g, const char *name, int channels, int height, int width,
                    tt_keep keep)
{
    if (g->tensor_count == g->tensor_capacity) {
        int cap = g->tensor_capacity ? 2 * g->tensor_capacity : 64;
        tt_tensor_def *t = tt_realloc(g->tensors, sizeof *t * (size_t)cap);
        if (!t) {
            g->failed = 1;
            return -1;
        }
        g->tensors = t, g->tensor_capacity = cap;
    }
    tt_tensor_def *t = &g->tensors[g->tensor_count];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->channels = channels, t->height = height, t->width = width;
    t->producer = -1, t->keep = keep, t->alias = t->grad_alias = -1;
    return g->tensor_count++;
}

const tt_tensor_def *tt_graph_def(const tt_graph *g, int t)
{
    static const tt_tensor_def none;
    return t >= 0 && t < g->tensor_count ? &g->tensors[t] : &none;
}

tt_layer *tt_graph_layer(tt_graph *g, tt_layer_kind kind, const char *name, int in0, int in1,
                         int out)
{
    static tt_layer spare; /* written to when out of memory; g->failed says so */
    if (g->failed || out < 0 || in0 < 0) {
        g->failed = 1;
        return &spare;
    }
    if (g->layer_count == g->layer_capacity) {
        int cap = g->layer_capacity ? 2 * g->layer_capacity : 64;
        tt_layer *l = tt_realloc(g->layers, sizeof *l * (size_t)cap);
        if (!l) {
            g->failed = 1;
            return &spare;
        }
        g->layers = l, g->layer_capacity = cap;
    }
    tt_layer *l = &g->layers[g->layer_count];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->in[0] = in0, l->in[1] = in1, l->out = out;
    l->group = g->layer_count;
    l->weight = l->bias = l->bn_w = l->bn_b = l->bn_rm = l->bn_rv = -1;
    l->norm = TT_NORM_BATCH;
    g->tensors[out].producer = g->layer_count++;
    return l;
}

void tt_graph_group(tt_graph *g, int first)
{
    for (int i = first; i < g->layer_count; i++) g->layers[i].group = first;
}

tt_status tt_graph_finish(tt_graph *g)
{
    if (g->failed) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "model graph: out of host memory");
    for (int i = 0; i < g->layer_count; i++) {
        const tt_layer *l = &g->layers[i];
        int needs = l->weight >= 0 || l->bn_w >= 0;
        for (int k = 0; k < 2; k++)
            if (l->in[k] >= 0) needs |= g->tensors[l->in[k]].needs_grad;
        g->tensors[l->out].needs_grad = needs;
    }
    for (int i = 0; i < g->layer_count; i++) { /* a 16-bit tensor is read by norms alone */
        const tt_layer *l = &g->layers[i];
        for (int k = 0; k < 2; k++)
            if (l->in[k] >= 0 && g->tensors[l->in[k]].storage != TT_PRECISION_FP32 &&
                (l->kind != TT_LAYER_NORM || g->tensors[l->in[k]].keep != TT_KEEP))
                return tt_error_new(TT_ERR_INTERNAL, "model graph: '%s' is stored in 16 bits "
                                    "but read by '%s', which is not a norm, or not kept",
                                    g->tensors[l->in[k]].name, l->name);
    }
    /* a tensor written over in place no longer holds itself after the
     * forward: the backward makes it again */
    for (int t = 0; t < g->tensor_count; t++) {
        int a = g->tensors[t].alias;
        if (a >= 0 && g->tensors[a].keep == TT_KEEP) g->tensors[a].keep = TT_REMAKE;
    }
    for (int t = 0; t < g->tensor_count; t++) {
        tt_tensor_def *d = &g->tensors[t];
        if (d->rounded == TT_PRECISION_FP32) continue;
        if (d->storage != TT_PRECISION_FP32 || d->producer < 0)
            return tt_error_new(TT_ERR_INTERNAL, "model graph: '%s' is both stored and rounded, "
                                "or the input", d->name);
        d->halved = d->keep == TT_KEEP || d->kept_outside;
        const tt_layer *p = &g->layers[d->producer];
        int cheap = p->in[1] < 0 && g->tensors[p->in[0]].keep == TT_KEEP; /* made again from
                                                                             what is kept */
        for (int i = 0; i < g->layer_count && !cheap; i++)
            for (int k = 0; k < 2; k++)
                if (g->layers[i].in[k] == t && !tt_graph_near(g, t, i)) d->halved = 1;
    }
    return NULL;
}

int tt_graph_near(const tt_graph *g, int t, int reader)
{
    int p = g->tensors[t].producer;
    if (p < 0) return 1;
    int group = g->layers[p].group, last = p;
    while (last + 1 < g->layer_count && g->layers[last + 1].group == group) last++;
    return g->layers[reader].group == group || reader == last + 1;
}

void tt_graph_free(tt_graph *g)
{
    free(g->tensors);
    free(g->layers);
    memset(g, 0, sizeof *g);
}
