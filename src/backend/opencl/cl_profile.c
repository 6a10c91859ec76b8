/* Device time per kind of work from OpenCL profiling events (benchmarks). */
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/cl_internal.h"

/* The op family of a kernel program: conv_direct, conv_winograd... -> conv. */
static const char *family(const char *program)
{
    static const struct {
        const char *prefix, *family;
    } map[] = {
        {"conv", "conv"},   {"gemm", "conv"},     {"im2col", "conv"}, {"norm", "norm"},
        {"activation", "activation"}, {"pool", "pool"}, {"upsample", "resample"},
        {"concat", "concat"}, {"loss", "loss"},     {"reduce", "reduce"}, {"optim", "optimizer"},
        {"util", "util"}, {"transfer", "transfer"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(program, map[i].prefix, strlen(map[i].prefix)) == 0) return map[i].family;
    return "other";
}

cl_event *tt_cl_profile_slot(tt_backend *backend, const char *program, const char *kernel)
{
    tt_cl_backend *cl = backend->impl;
    if (!backend->profile) return NULL;
    if (cl->event_count == cl->event_capacity) {
        int cap = cl->event_capacity ? 2 * cl->event_capacity : 256;
        cl_event *events = realloc(cl->events, sizeof *events * (size_t)cap);
        if (events) cl->events = events;
        char(*kinds)[40] = realloc(cl->event_kinds, sizeof *kinds * (size_t)cap);
        if (kinds) cl->event_kinds = kinds;
        if (!events || !kinds) return NULL; /* profiling is best effort */
        cl->event_capacity = cap;
    }
    snprintf(cl->event_kinds[cl->event_count], sizeof cl->event_kinds[0], "%s/%s",
             backend->phase ? backend->phase : "other",
             backend->profile->by_kernel ? kernel : family(program));
    cl->events[cl->event_count] = NULL;
    return &cl->events[cl->event_count++];
}

void tt_cl_profile_collect(tt_backend *backend)
{
    tt_cl_backend *cl = backend->impl;
    tt_profile *p = backend->profile;
    for (int i = 0; i < cl->event_count; i++) {
        cl_event e = cl->events[i];
        if (!e) continue;
        cl_ulong start = 0, end = 0;
        if (p && clWaitForEvents(1, &e) == CL_SUCCESS &&
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
                CL_SUCCESS &&
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS) {
            int k = 0;
            while (k < p->count && strcmp(p->kind[k], cl->event_kinds[i]) != 0) k++;
            if (k == p->count && p->count < TT_PROFILE_MAX_KINDS) {
                snprintf(p->kind[k], sizeof p->kind[k], "%s", cl->event_kinds[i]);
                p->count++;
            }
            if (k < p->count) {
                p->seconds[k] += end > start ? 1e-9 * (double)(end - start) : 0.0;
                p->launches[k]++;
            }
        }
        clReleaseEvent(e);
    }
    cl->event_count = 0;
}
