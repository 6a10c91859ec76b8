/* Kinds of device time and their sums, shared by the backends; see profile.h. */
#include "backend/profile.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

const char *tt_profile_family(const char *program)
{
    static const struct {
        const char *prefix, *family;
    } map[] = {
        {"conv", "conv"},   {"gemm", "conv"},     {"im2col", "conv"}, {"blas", "conv"},
        {"norm", "norm"},   {"activation", "activation"}, {"add", "add"}, {"pool", "pool"},
        {"upsample", "resample"}, {"concat", "concat"}, {"loss", "loss"},
        {"reduce", "reduce"}, {"optim", "optimizer"}, {"util", "util"},
        {"transfer", "transfer"}, {"channel", "channel"}, {"dropout", "dropout"},
        {"tversky", "loss"}, {"lovasz", "loss"},
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
    if (k == p->count && k < TT_PROFILE_MAX_KINDS - 1) {
        snprintf(p->kind[k], sizeof p->kind[k], "%s", kind);
        p->count++;
    } else if (k == p->count) { /* the table is full: the rest share its last kind */
        k = TT_PROFILE_MAX_KINDS - 1;
        if (p->count < TT_PROFILE_MAX_KINDS) {
            snprintf(p->kind[k], sizeof p->kind[k], "%s", TT_PROFILE_OTHER_KINDS);
            p->count++;
        }
    }
    p->seconds[k] += seconds;
    p->launches[k]++;
}

double tt_profile_seconds(const tt_profile *p)
{
    double busy = 0;
    for (int k = 0; k < p->count; k++) busy += p->seconds[k];
    return busy;
}

void tt_profile_print(const tt_profile *p, FILE *out, const char *indent)
{
    double busy = tt_profile_seconds(p);
    for (int k = 0; k < p->count; k++)
        fprintf(out, "%s%-46s %8.3f s  %5.1f%%  %6llu launches\n", indent, p->kind[k],
                p->seconds[k], busy > 0 ? 100 * p->seconds[k] / busy : 0,
                (unsigned long long)p->launches[k]);
}

cJSON *tt_profile_json(const tt_profile *p)
{
    cJSON *kinds = cJSON_CreateObject();
    for (int k = 0; kinds && k < p->count; k++)
        if (!cJSON_AddNumberToObject(kinds, p->kind[k], p->seconds[k])) {
            cJSON_Delete(kinds);
            return NULL;
        }
    return kinds;
}
