/* Kinds of device time and their sums, shared by the backends; see profile.h. */
#include "backend/profile.h"

#include <stdio.h>
#include <string.h>

const char *tt_profile_family(const char *program)
{
    static const struct {
        const char *prefix, *family;
    } map[] = {
        {"conv", "conv"},   {"gemm", "conv"},     {"im2col", "conv"}, {"blas", "conv"},
        {"norm", "norm"},   {"activation", "activation"}, {"pool", "pool"},
        {"upsample", "resample"}, {"concat", "concat"}, {"loss", "loss"},
        {"reduce", "reduce"}, {"optim", "optimizer"}, {"util", "util"},
        {"transfer", "transfer"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(program, map[i].prefix, strlen(map[i].prefix)) == 0) return map[i].family;
    return "other";
}

void tt_profile_kind(const tt_backend *backend, const char *program, const char *kernel,
                     char *out)
{
    snprintf(out, (size_t)TT_PROFILE_KIND_BYTES, "%s/%s",
             backend->phase ? backend->phase : "other",
             backend->profile && backend->profile->by_kernel ? kernel
                                                             : tt_profile_family(program));
}

void tt_profile_add(tt_profile *p, const char *kind, double seconds)
{
    int k = 0;
    while (k < p->count && strcmp(p->kind[k], kind) != 0) k++;
    if (k == p->count) {
        if (p->count == TT_PROFILE_MAX_KINDS) return;
        snprintf(p->kind[k], sizeof p->kind[k], "%s", kind);
        p->count++;
    }
    p->seconds[k] += seconds;
    p->launches[k]++;
}
