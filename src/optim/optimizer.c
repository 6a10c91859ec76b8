/* The optimizer object over AdamW and SGD (see optimizer.h). */
#include "optim/optimizer.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/util.h"
#include "optim/adamw.h"
#include "optim/sgd.h"

static tt_status adamw_update(tt_optimizer *o, tt_mem params, tt_mem grads, size_t n, double lr)
{
    return tt_adamw_update(o->be, params, grads, tt_mem_of(o->state[0]), tt_mem_of(o->state[1]), n,
                           o->config, lr, o->updates);
}

static tt_status sgd_update(tt_optimizer *o, tt_mem params, tt_mem grads, size_t n, double lr)
{
    tt_mem momentum = o->state_count ? tt_mem_of(o->state[0]) : (tt_mem){0};
    return tt_sgd_update(o->be, params, grads, momentum, n, o->config, lr, o->updates);
}

static const tt_optimizer_ops adamw_ops = {"adamw", "AdamW", adamw_update};
static const tt_optimizer_ops sgd_ops = {"sgd", "SGD", sgd_update};

/* The rule's hyperparameters from the request, checked; the names of the
 * state it keeps. */
static tt_status configure(tt_optimizer *o, const tt_optimizer_request *r)
{
    if (strcmp(r->name, "adamw") == 0) {
        tt_adamw_config *c = malloc(sizeof *c);
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
        tt_sgd_config *c = malloc(sizeof *c);
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
    tt_optimizer *o = calloc(1, sizeof *o);
    if (!o) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "optimizer: out of host memory");
    o->be = be;
    o->floats = floats;
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

tt_status tt_optimizer_step(tt_optimizer *o, tt_mem params, tt_mem grads, double lr)
{
    o->updates++;
    return o->ops->update(o, params, grads, o->floats, lr);
}
