/* Global average pooling and the plane sums it is made of (see
 * global_avg_pool.h): host side of opencl/channel.cl and shaders/channel/. */
#include "ops/global_avg_pool.h"

#include <limits.h>
#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/status.h"
#include "ops/reduce.h"

/* Loop steps of one work-item over its chunk that the cut aims at: enough
 * work per work-group to pay for its tree, small enough that a large plane
 * runs as many work-groups. */
#define PLANE_CHUNK_STEPS 64
/* Most chunks a plane is cut into: the finishing work-item's loop. */
#define PLANE_MAX_CHUNKS 4096
/* Planes of at most this many floats take work-groups of this size (fewer
 * idle work-items on the small planes of a network's deep end). */
#define PLANE_SMALL_WG 64

_Static_assert(PLANE_MAX_CHUNKS < TT_LOOP_BUDGET, "the finish loop stays under the budget");

tt_status tt_plane_sum(tt_backend *be, const char *op, tt_mem out, tt_mem a, tt_mem b,
                       int planes, int plane, float scale, int accumulate)
{
    if (planes < 1 || plane < 1 || (double)planes * plane > (double)INT_MAX)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %d planes of %d floats: both must be >= 1 and the tensor at "
                            "most %d floats; split the batch",
                            op, planes, plane, INT_MAX);
    size_t count = (size_t)planes * plane;
    TT_TRY(tt_mem_check(op, "out", out, (size_t)planes * sizeof(float)));
    TT_TRY(tt_mem_check(op, b.buffer ? "a" : "inp", a, count * sizeof(float)));
    if (b.buffer) TT_TRY(tt_mem_check(op, "b", b, count * sizeof(float)));

    /* the work-group: the reductions' size, or a small one for small planes */
    int wg = tt_reduce_group_size(be);
    if (plane <= PLANE_SMALL_WG && wg > PLANE_SMALL_WG) wg = PLANE_SMALL_WG;
    char options[32];
    snprintf(options, sizeof options, "-DTT_WG=%d", wg);

    /* the cut: chunks of about PLANE_CHUNK_STEPS loop steps a work-item; at
     * most PLANE_MAX_CHUNKS (a plane of 2^31 floats then loops 2^19 / wg
     * steps a work-item, within TT_LOOP_BUDGET for wg >= 16) */
    size_t target = (size_t)wg * PLANE_CHUNK_STEPS;
    size_t chunks = ((size_t)plane + target - 1) / target;
    if (chunks > PLANE_MAX_CHUNKS) chunks = PLANE_MAX_CHUNKS;
    size_t chunk = ((size_t)plane + chunks - 1) / chunks;
    chunks = ((size_t)plane + chunk - 1) / chunk; /* no empty chunk at the end */

    tt_status status = NULL;
    tt_buffer *partial = NULL;
    tt_mem dst = out;
    if (chunks > 1) {
        TT_CHECK(tt_buffer_alloc(be, (size_t)planes * chunks * sizeof(float), TT_MEM_WORKSPACE,
                                 "plane_sum.partial", &partial));
        dst = tt_mem_of(partial);
    }
    /* one chunk: the group's sum is the plane's, scaled and stored at once */
    float group_scale = chunks > 1 ? 1.0f : scale;
    int group_accumulate = chunks > 1 ? 0 : accumulate;
    size_t global = (size_t)planes * chunks * (size_t)wg, local = (size_t)wg;
    if (b.buffer)
        TT_CHECK(tt_launch_kernel(be, "channel", "plane_dot_partial", options, 1, &global, &local,
                                  TT_ARGS(tt_arg_mem(dst), tt_arg_mem(a), tt_arg_mem(b),
                                          tt_arg_i32(planes), tt_arg_i32(plane),
                                          tt_arg_i32((int)chunk), tt_arg_i32((int)chunks),
                                          tt_arg_f32(group_scale),
                                          tt_arg_i32(group_accumulate))));
    else
        TT_CHECK(tt_launch_kernel(be, "channel", "plane_sum_partial", options, 1, &global, &local,
                                  TT_ARGS(tt_arg_mem(dst), tt_arg_mem(a), tt_arg_i32(planes),
                                          tt_arg_i32(plane), tt_arg_i32((int)chunk),
                                          tt_arg_i32((int)chunks), tt_arg_f32(group_scale),
                                          tt_arg_i32(group_accumulate))));
    if (chunks > 1)
        TT_CHECK(TT_LAUNCH_1D(be, "channel", "plane_sum_finish", (size_t)planes,
                              tt_arg_mem(out), tt_arg_mem(dst), tt_arg_i32(planes),
                              tt_arg_i32((int)chunks), tt_arg_f32(scale),
                              tt_arg_i32(accumulate)));
cleanup:
    /* the in-order queue keeps the buffer alive until the kernels using it ran */
    tt_buffer_free(partial);
    return status;
}

/* The shape's sizes positive and its elements within one launch. */
static tt_status check_desc(const char *op, const tt_global_avg_pool_desc *d)
{
    if (d->batch < 1 || d->channels < 1 || d->height < 1 || d->width < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d): every size must be positive", op,
                            d->batch, d->channels, d->height, d->width);
    return tt_launch_check_count(op, (size_t)d->batch * d->channels * d->height * d->width);
}

tt_status tt_global_avg_pool_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                     const tt_global_avg_pool_desc *d)
{
    const char *op = "global_avg_pool forward";
    TT_TRY(check_desc(op, d));
    int plane = d->height * d->width;
    return tt_plane_sum(be, op, out, inp, (tt_mem){0}, d->batch * d->channels, plane,
                        1.0f / (float)plane, 0);
}

tt_status tt_global_avg_pool_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                      const tt_global_avg_pool_desc *d)
{
    const char *op = "global_avg_pool backward";
    TT_TRY(check_desc(op, d));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    int planes = d->batch * d->channels, plane = d->height * d->width;
    size_t count = (size_t)planes * plane;
    TT_TRY(tt_mem_check(op, "dinp", dinp, count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "dout", dout, (size_t)planes * sizeof(float)));
    return TT_LAUNCH_1D(be, "channel", "global_avg_pool_backward", count, tt_arg_mem(dinp),
                        tt_arg_mem(dout), tt_arg_i32(plane), tt_arg_i32((int)count),
                        tt_arg_f32(1.0f / (float)plane));
}
