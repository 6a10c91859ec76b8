/* The optimizer object over AdamW and SGD (see optimizer.h). */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "ops/util.h"
#include "optim/adamw.h"
#include "optim/sgd.h"

static tt_mem state_at(tt_optimizer *o, int i, size_t first)
{
    return tt_mem_f32(tt_mem_of(o->state[i]), first);
}

static tt_status adamw_update(tt_optimizer *o, tt_mem params, tt_mem grads, size_t first, size_t n,
                              double lr, int64_t step)
{
    return tt_adamw_update(o->be, tt_mem_f32(params, first), tt_mem_f32(grads, first),
                           state_at(o, 0, first), state_at(o, 1, first), n, o->config, lr, step);
}

static tt_status sgd_update(tt_optimizer *o, tt_mem params, tt_mem grads, size_t first, size_t n,
                            double lr, int64_t step)
{
    tt_mem momentum = o->state_count ? state_at(o, 0, first) : (tt_mem){0};
    return tt_sgd_update(o->be, tt_mem_f32(params, first), tt_mem_f32(grads, first), momentum, n,
                         o->config, lr, step);
}

static const tt_optimizer_ops adamw_ops = {"adamw", "AdamW", adamw_update};
static const tt_optimizer_ops sgd_ops = {"sgd", "SGD", sgd_update};

/* The rule's hyperparameters from the request, checked; the names of the
 * state it keeps. */
static tt_status configure(tt_optimizer *o, const tt_optimizer_request *r)
{
    if (strcmp(r->name, "adamw") == 0) {
        tt_adamw_config *c = tt_malloc(sizeof *c);
        if (!c) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "optimizer: out of host memory");
        *c = tt_adamw_config_default();
        c->lr = r->lr;
        if (r->weight_decay >= 0) c->weight_decay = r->weight_decay;
        o->ops = &adamw_ops;
        o->config = c;
        o->state_count = 2;
        o->state_names[0] = "exp_avg";
        o->state_names[1] = "exp_avg_sq";
        return tt_adamw_config_check(c);
    }
    if (strcmp(r->name, "sgd") == 0) {
        tt_sgd_config *c = tt_malloc(sizeof *c);
        if (!c) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "optimizer: out of host memory");
        *c = tt_sgd_config_default();
        c->lr = r->lr;
        c->momentum = r->momentum;
        c->nesterov = r->nesterov;
        c->weight_decay = r->weight_decay >= 0 ? r->weight_decay : 0.0;
        o->ops = &sgd_ops;
        o->config = c;
        o->state_count = c->momentum > 0 ? 1 : 0;
        o->state_names[0] = "momentum_buffer";
        return tt_sgd_config_check(c);
    }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "optimizer '%s' is unknown: use adamw or sgd",
                        r->name);
}

tt_status tt_optimizer_create(tt_backend *be, const tt_optimizer_request *request, size_t floats,
                              tt_optimizer **out)
{
    *out = NULL;
    tt_optimizer *o = tt_calloc(1, sizeof *o);
    if (!o) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "optimizer: out of host memory");
    o->be = be;
    o->floats = floats;
    o->group_count = 1;
    o->groups[0] = (tt_optimizer_group){.begin = 0, .end = floats, .lr_scale = 1.0};
    tt_status status = NULL;
    TT_CHECK(configure(o, request));
    for (int i = 0; i < o->state_count; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", o->ops->name, o->state_names[i]);
        TT_CHECK(tt_buffer_alloc(be, floats * sizeof(float), TT_MEM_OPTIMIZER, name, &o->state[i]));
        TT_CHECK(tt_fill(be, tt_mem_of(o->state[i]), 0.0f, floats));
    }
    *out = o;
    return NULL;
cleanup:
    tt_optimizer_destroy(o);
    return status;
}

void tt_optimizer_destroy(tt_optimizer *o)
{
    if (!o) return;
    for (int i = 0; i < o->state_count; i++) tt_buffer_free(o->state[i]);
    free(o->config);
    free(o);
}

tt_status tt_optimizer_set_groups(tt_optimizer *o, const tt_optimizer_group *groups, int count)
{
    if (count < 1 || count > TT_OPTIMIZER_MAX_GROUPS)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "optimizer: %d parameter groups; give 1 to %d",
                            count, TT_OPTIMIZER_MAX_GROUPS);
    for (int i = 0; i < count; i++) {
        const tt_optimizer_group *g = &groups[i];
        size_t expected = i ? groups[i - 1].end : 0;
        if (g->begin != expected || g->end <= g->begin || g->end > o->floats)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "optimizer: parameter group %d covers floats %zu to %zu; the groups "
                                "must tile the arena of %zu floats in order (this one should begin "
                                "at %zu)", i, g->begin, g->end, o->floats, expected);
        if (!(g->lr_scale >= 0) || isinf(g->lr_scale))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "optimizer: parameter group %d has a rate scale of %g; give a "
                                "finite one >= 0", i, g->lr_scale);
    }
    if (groups[count - 1].end != o->floats)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "optimizer: the parameter groups end at float %zu, the arena at %zu",
                            groups[count - 1].end, o->floats);
    for (int i = 0; i < count; i++) {
        o->groups[i] = groups[i];
        o->groups[i].updates = o->updates;
    }
    o->group_count = count;
    return NULL;
}

tt_status tt_optimizer_step(tt_optimizer *o, tt_mem params, tt_mem grads, double lr)
{
    o->updates++;
    for (int i = 0; i < o->group_count; i++) {
        tt_optimizer_group *g = &o->groups[i];
        if (g->frozen) continue;
        g->updates++;
        TT_TRY(o->ops->update(o, params, grads, g->begin, g->end - g->begin, lr * g->lr_scale,
                              g->updates));
    }
    return NULL;
}
