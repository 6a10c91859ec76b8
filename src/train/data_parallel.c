/* The cross-rank half of a data-parallel run; see data_parallel.h. */
#include "train/data_parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/status.h"

tt_status tt_dp_pick_device(const tt_dist *dist, tt_train_options *o)
{
    if (dist->size < 2 && strchr(o->device, ','))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--device '%s' is a list, one device per rank under mpirun; a "
                            "process alone takes one (`tiletrain devices` lists them)", o->device);
    if (dist->size < 2) return NULL;
    if (o->device[0]) { /* "a,b,c": entry local_rank; one entry: every rank's */
        int entries = 1;
        for (const char *p = o->device; *p; p++) entries += *p == ',';
        if (entries == 1) return NULL;
        if (dist->local_rank >= entries)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "--device '%s' names %d devices but this machine runs %d ranks; "
                                "give one per rank (or one for all)", o->device, entries,
                                dist->local_size);
        const char *start = o->device;
        for (int i = 0; i < dist->local_rank; i++) start = strchr(start, ',') + 1;
        size_t length = strcspn(start, ",");
        char mine[TT_OPT_STRING_MAX];
        snprintf(mine, sizeof mine, "%.*s", (int)length, start);
        if (!mine[0])
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--device '%s': entry %d is empty",
                                o->device, dist->local_rank);
        snprintf(o->device, sizeof o->device, "%s", mine);
        return NULL;
    }
    tt_backend_request request = {0};
    TT_TRY(tt_error_prefix(tt_backend_choose(tt_backend_choice_name(o->backend), NULL, &request), "--backend"));
    if (request.device && *request.device) return NULL; /* $TT_DEVICE chose for every rank */
    char spec[32];
    TT_TRY(tt_backend_spread(&request, dist->local_rank, spec, sizeof spec));
    snprintf(o->device, sizeof o->device, "%s", spec);
    o->backend = request.kind == TT_BACKEND_VULKAN ? TT_BACKEND_CHOICE_VULKAN : TT_BACKEND_CHOICE_OPENCL;
    return NULL;
}

tt_status tt_dp_create(const tt_dist *dist, tt_step *engine, tt_data_parallel **out)
{
    *out = NULL;
    if (dist->size < 2) return NULL;
    tt_data_parallel *dp = tt_calloc(1, sizeof *dp);
    size_t floats = engine->model->params->trainable_floats;
    if (dp) dp->staging = tt_malloc(floats * sizeof(float));
    if (!dp || !dp->staging) {
        tt_dp_destroy(dp);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "no host memory for the %zu-float gradient "
                            "staging buffer of data-parallel training", floats);
    }
    dp->dist = *dist;
    dp->engine = engine;
    *out = dp;
    return NULL;
}

void tt_dp_destroy(tt_data_parallel *dp)
{
    if (!dp) return;
    free(dp->staging);
    free(dp);
}

/* This rank's own error where it has one (a collective of the window, or
 * an earlier one, may be what failed, and `settled` the next collective
 * refused), else the collective's `settled`; the other is freed. */
static tt_status first_error(tt_status mine, tt_status settled)
{
    if (!mine) return settled;
    tt_status_free(settled);
    return mine;
}

/* The first failed rank's message, to every rank. */
static tt_status first_failure(const tt_dist *d, tt_status mine)
{
    double who = mine ? (double)(d->size - d->rank) : 0; /* the largest is the lowest rank */
    tt_status s = tt_dist_max_f64(d, &who, 1);
    if (s) return first_error(mine, s);
    int rank = d->size - (int)who;
    char message[1024] = "";
    if (rank == d->rank) snprintf(message, sizeof message, "%s", tt_status_message(mine));
    s = tt_dist_broadcast(d, message, sizeof message, rank);
    message[sizeof message - 1] = 0;
    if (rank == d->rank && !s) return tt_error_prefix(mine, "rank %d of %d", d->rank, d->size);
    if (s) return first_error(mine, s);
    tt_status_free(mine);
    return tt_error_new(TT_ERR_PEER, "rank %d of %d failed, so every rank stops: %s", rank,
                        d->size, message);
}

tt_status tt_dp_sum_window(const tt_dist *d, double *values, size_t n, tt_status mine)
{
    if (d->size < 2) return mine;
    double all[TT_DP_MAX_SUMS + 1];
    if (n > TT_DP_MAX_SUMS) {
        tt_status_free(mine);
        return tt_error_new(TT_ERR_INTERNAL, "tt_dp_sum_window: %zu values, at most %d", n,
                            TT_DP_MAX_SUMS);
    }
    memcpy(all, values, n * sizeof *all);
    all[n] = mine ? 1 : 0;
    tt_status s = tt_dist_sum_f64(d, all, n + 1);
    if (!s) memcpy(values, all, n * sizeof *all);
    int failed = !s && all[n] > 0;
    if (s) return first_error(mine, s);
    return failed ? first_failure(d, mine) : NULL;
}

tt_status tt_dp_sum_grads(tt_data_parallel *dp)
{
    double start = tt_seconds();
    tt_model *m = dp->engine->model;
    size_t bytes = m->params->trainable_floats * sizeof(float);
    tt_mem grads = tt_mem_of(m->grad_buffer);
    TT_TRY(tt_read(dp->engine->be, dp->staging, grads, bytes));
    TT_TRY(tt_dist_sum_f32(&dp->dist, dp->staging, m->params->trainable_floats));
    TT_TRY(tt_write(dp->engine->be, grads, dp->staging, bytes));
    dp->sum_seconds = tt_seconds() - start;
    return NULL;
}

tt_status tt_dp_check_weights(tt_data_parallel *dp, int64_t step)
{
    tt_model *m = dp->engine->model;
    TT_TRY(tt_model_get_params(m, dp->staging, NULL));
    uint64_t mine = tt_hash_bytes(TT_HASH_INIT, dp->staging,
                                  m->params->trainable_floats * sizeof(float));
    int size = dp->dist.size;
    uint64_t *all = tt_malloc(sizeof *all * (size_t)size);
    if (!all) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status s = tt_dist_gather_u64(&dp->dist, &mine, 1, all);
    char differ[256] = "";
    size_t used = 0;
    for (int r = 1; !s && r < size && used + 16 < sizeof differ; r++)
        if (all[r] != all[0])
            used += (size_t)snprintf(differ + used, sizeof differ - used, "%s%d", used ? ", " : "", r);
    free(all);
    TT_TRY(s);
    if (!used) return NULL;
    return tt_error_new(TT_ERR_PEER,
                        "the weights of rank %s differ from rank 0's after step %lld: the ranks "
                        "diverged (devices whose arithmetic differs, or a fault); resume from the "
                        "last checkpoint, with the same kind of device on every rank", differ,
                        (long long)step);
}

tt_status tt_dp_average_running_stats(tt_data_parallel *dp)
{
    tt_model *m = dp->engine->model;
    size_t n = m->params->state_floats;
    if (!m->state_buffer || !n) return NULL;
    float *state = tt_malloc(n * sizeof *state);
    if (!state) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status s = tt_model_get_params(m, NULL, state);
    if (!s) s = tt_dist_sum_f32(&dp->dist, state, n);
    for (size_t i = 0; !s && i < n; i++) state[i] /= (float)dp->dist.size;
    if (!s) s = tt_model_set_params(m, NULL, state);
    free(state);
    return s;
}
