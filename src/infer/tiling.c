/* The sliding-window plan: tile origins, padding indices, blend weights; see tiling.h. */
#include "infer/tiling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

tt_status tt_blend_kind_parse(const char *text, tt_blend_kind *kind)
{
    if (text && strcmp(text, "gaussian") == 0) *kind = TT_BLEND_GAUSSIAN;
    else if (text && strcmp(text, "mean") == 0) *kind = TT_BLEND_MEAN;
    else
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "blend '%s' is unknown; use gaussian or mean",
                            text ? text : "(null)");
    return NULL;
}

tt_status tt_pad_kind_parse(const char *text, tt_pad_kind *kind)
{
    if (text && strcmp(text, "reflect") == 0) *kind = TT_PAD_REFLECT;
    else if (text && strcmp(text, "zero") == 0) *kind = TT_PAD_ZERO;
    else
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "padding '%s' is unknown; use reflect or zero",
                            text ? text : "(null)");
    return NULL;
}

int tt_pad_reflect_index(int i, int length)
{
    if (length <= 1) return 0;
    long period = 2L * (length - 1);
    long k = (long)i % period;
    if (k < 0) k += period;
    return (int)(k < length ? k : period - k);
}

/* Fills one axis: origins and weights. */
static tt_status axis_make(tt_tile_axis *a, int length, int tile, double overlap,
                           tt_blend_kind blend)
{
    a->length = length;
    a->tile = tile;
    if (length <= tile) {
        a->count = 1;
    } else {
        long step = (long)floor((double)tile * (1.0 - overlap));
        if (step < 1) step = 1;
        a->count = (int)((length - tile + step - 1) / step + 1);
    }
    a->origin = tt_malloc((size_t)a->count * sizeof *a->origin);
    a->weight = tt_malloc((size_t)tile * sizeof *a->weight);
    if (!a->origin || !a->weight)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile plan: out of host memory");
    if (length <= tile) {
        a->origin[0] = -((tile - length) / 2);
    } else {
        double span = (double)(length - tile);
        for (int i = 0; i < a->count; i++)
            a->origin[i] = (int)floor(span * i / (a->count - 1) + 0.5);
    }
    if (blend == TT_BLEND_MEAN) {
        for (int i = 0; i < tile; i++) a->weight[i] = 1.0f;
        return NULL;
    }
    double centre = tile / 2.0, sigma = tile / 8.0, peak = 0;
    for (int i = 0; i < tile; i++) {
        double d = i + 0.5 - centre;
        double g = exp(-d * d / (2 * sigma * sigma));
        if (g > peak) peak = g;
    }
    for (int i = 0; i < tile; i++) {
        double d = i + 0.5 - centre;
        float w = (float)(exp(-d * d / (2 * sigma * sigma)) / peak);
        a->weight[i] = w < TT_TILE_MIN_AXIS_WEIGHT ? TT_TILE_MIN_AXIS_WEIGHT : w;
    }
    return NULL;
}

tt_status tt_tile_plan_make(int height, int width, int tile_h, int tile_w, double overlap,
                            tt_blend_kind blend, tt_tile_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (height < 1 || width < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile plan: image %dx%d is empty", height,
                            width);
    if (tile_h < 1 || tile_w < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile plan: tile %dx%d is empty; give "
                            "--tile HxW with both >= 1", tile_h, tile_w);
    if (!(overlap >= 0 && overlap < 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile plan: overlap %g is outside [0, 1); "
                            "try 0.5", overlap);
    if (blend != TT_BLEND_GAUSSIAN && blend != TT_BLEND_MEAN)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile plan: unknown blend %d", (int)blend);
    plan->overlap = overlap;
    plan->blend = blend;
    tt_status status = NULL;
    TT_CHECK(axis_make(&plan->y, height, tile_h, overlap, blend));
    TT_CHECK(axis_make(&plan->x, width, tile_w, overlap, blend));
cleanup:
    if (status) tt_tile_plan_free(plan);
    return status;
}

void tt_tile_plan_free(tt_tile_plan *plan)
{
    if (!plan) return;
    free(plan->y.origin);
    free(plan->y.weight);
    free(plan->x.origin);
    free(plan->x.weight);
    memset(plan, 0, sizeof *plan);
}

void tt_tile_plan_origin(const tt_tile_plan *plan, int t, int *y0, int *x0)
{
    TT_ASSERT(t >= 0 && t < tt_tile_plan_count(plan));
    *y0 = plan->y.origin[t / plan->x.count];
    *x0 = plan->x.origin[t % plan->x.count];
}

void tt_tile_axis_sums(const tt_tile_axis *a, double *sum)
{
    for (int i = 0; i < a->length; i++) sum[i] = 0;
    for (int t = 0; t < a->count; t++)
        for (int i = 0; i < a->tile; i++) {
            long at = (long)a->origin[t] + i;
            if (at >= 0 && at < a->length) sum[at] += a->weight[i];
        }
}

void tt_tile_plan_weight_map(const tt_tile_plan *plan, float *map)
{
    int h = plan->y.length, w = plan->x.length;
    memset(map, 0, (size_t)h * w * sizeof *map);
    for (int t = 0; t < tt_tile_plan_count(plan); t++) {
        int y0, x0;
        tt_tile_plan_origin(plan, t, &y0, &x0);
        for (int i = 0; i < plan->y.tile; i++) {
            int y = y0 + i;
            if (y < 0 || y >= h) continue;
            for (int j = 0; j < plan->x.tile; j++) {
                int x = x0 + j;
                if (x < 0 || x >= w) continue;
                map[(size_t)y * w + x] += plan->y.weight[i] * plan->x.weight[j];
            }
        }
    }
}
