/* Device time per kind of work from OpenCL profiling events (benchmarks);
 * the kinds and their sums are backend/profile.c's. */
#include <stdlib.h>

#include "backend/opencl/cl_internal.h"
#include "backend/profile.h"
#include "core/alloc.h"

cl_event *tt_cl_profile_slot(tt_backend *backend, const char *program, const char *kernel)
{
    tt_cl_backend *cl = backend->impl;
    if (!backend->profile) return NULL;
    if (cl->event_count == cl->event_capacity) {
        int cap = cl->event_capacity ? 2 * cl->event_capacity : 256;
        cl_event *events = tt_realloc(cl->events, sizeof *events * (size_t)cap);
        if (events) cl->events = events;
        char(*kinds)[TT_PROFILE_KIND_BYTES] = tt_realloc(cl->event_kinds, sizeof *kinds * (size_t)cap);
        if (kinds) cl->event_kinds = kinds;
        if (!events || !kinds) return NULL; /* profiling is best effort */
        cl->event_capacity = cap;
    }
    tt_profile_kind(backend, program, kernel, cl->event_kinds[cl->event_count]);
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
                CL_SUCCESS)
            tt_profile_add(p, cl->event_kinds[i], end > start ? 1e-9 * (double)(end - start) : 0.0);
        clReleaseEvent(e);
    }
    cl->event_count = 0;
}
