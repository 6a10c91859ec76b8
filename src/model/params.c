/* Named tensors in flat arenas, and PyTorch's default initialisation. */
#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

#define TT_PARAM_ALIGN 16 /* floats */

tt_status tt_params_add(tt_param_table *table, const char *name, int ndim, const int *shape,
                        tt_param_role role, int fan_in)
{
    TT_ASSERT(ndim >= 0 && ndim <= 4);
    if (table->count == table->capacity) {
        int cap = table->capacity ? 2 * table->capacity : 64;
        tt_param *grown = tt_realloc(table->params, sizeof *grown * (size_t)cap);
        if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "model: out of host memory");
        table->params = grown;
        table->capacity = cap;
    }
    tt_param *p = &table->params[table->count];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->count = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->count *= (size_t)shape[i];
    }
    p->role = role;
    p->fan_in = fan_in;
    p->trainable = role != TT_PARAM_RUNNING_MEAN && role != TT_PARAM_RUNNING_VAR;
    size_t *arena = p->trainable ? &table->trainable_floats : &table->state_floats;
    p->offset = *arena;
    *arena += (p->count + TT_PARAM_ALIGN - 1) / TT_PARAM_ALIGN * TT_PARAM_ALIGN;
    table->count++;
    return NULL;
}

const tt_param *tt_params_find(const tt_param_table *table, const char *name)
{
    for (int i = 0; i < table->count; i++)
        if (strcmp(table->params[i].name, name) == 0) return &table->params[i];
    return NULL;
}

void tt_params_free(tt_param_table *table)
{
    if (!table) return;
    free(table->params);
    memset(table, 0, sizeof *table);
}

/* xoshiro256** seeded by splitmix64: fast, reproducible, documented. */
typedef struct {
    uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(rng *r)
{
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return result;
}

static double uniform(rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(next(r) >> 11) * (1.0 / 9007199254740992.0));
}

void tt_params_init(const tt_param_table *table, uint64_t seed, float *trainable, float *state)
{
    rng r;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix(&x);
    if (trainable) memset(trainable, 0, table->trainable_floats * sizeof(float));
    if (state) memset(state, 0, table->state_floats * sizeof(float));
    for (int i = 0; i < table->count; i++) {
        const tt_param *p = &table->params[i];
        float *dst = p->trainable ? (trainable ? trainable + p->offset : NULL)
                                  : (state ? state + p->offset : NULL);
        if (!dst) continue;
        /* kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in); the conv
         * bias uses the same bound in PyTorch's reset_parameters */
        double bound = p->fan_in > 0 ? 1.0 / sqrt((double)p->fan_in) : 0.0;
        for (size_t j = 0; j < p->count; j++) {
            switch (p->role) {
            case TT_PARAM_WEIGHT:
            case TT_PARAM_BIAS: dst[j] = (float)uniform(&r, -bound, bound); break;
            case TT_PARAM_NORM_WEIGHT:
            case TT_PARAM_RUNNING_VAR: dst[j] = 1.0f; break;
            case TT_PARAM_NORM_BIAS:
            case TT_PARAM_RUNNING_MEAN: dst[j] = 0.0f; break;
            }
        }
    }
}

size_t tt_params_trainable_count(const tt_param_table *t)
{
    size_t n = 0;
    for (int i = 0; i < t->count; i++)
        if (t->params[i].trainable) n += t->params[i].count;
    return n;
}
