/*
 * The sliding-window plan of full-resolution prediction: where the tiles of
 * an image of any size go, how each tile is padded, and how overlapping
 * tiles are blended.
 *
 * Positions, per axis (the plan is a grid: rows x columns):
 *   - image length L <= tile T: one tile, the image CENTRED in it
 *     (origin -(T - L) / 2, possibly negative); the part of the tile outside
 *     the image is padding (reflect or zero, see tt_pad_kind);
 *   - L > T: n = ceil((L - T) / step) + 1 tiles with step = max(1,
 *     floor(T * (1 - overlap))), spread evenly as nnU-Net does: origin_i =
 *     round(i * (L - T) / (n - 1)), so the first tile starts at 0, the last
 *     ends exactly at the border, and neighbours overlap by at least
 *     `overlap` of the tile.  No tile then leaves the image.
 *
 * Blend weights are separable: weight(y, x) = wy[y] * wx[x].
 *   - TT_BLEND_GAUSSIAN: w[i] = exp(-(i + 0.5 - T/2)^2 / (2 sigma^2)),
 *     sigma = T / 8 per axis (nnU-Net), divided by its maximum (so the
 *     centre weighs 1) and clamped below at TT_TILE_MIN_AXIS_WEIGHT, so that
 *     every pixel gets a weight > 0 (>= 1e-6 in a corner);
 *   - TT_BLEND_MEAN: all ones (a plain average of the tiles).
 * Since the tiles form a grid and the weights are separable, the summed
 * weight at a pixel is sum_y[y] * sum_x[x] (tt_tile_plan_axis_sums).
 */
#ifndef TT_INFER_TILING_H
#define TT_INFER_TILING_H

#include <stddef.h>

#include "tiletrain.h"

typedef enum tt_blend_kind {
    TT_BLEND_GAUSSIAN,
    TT_BLEND_MEAN,
} tt_blend_kind;

typedef enum tt_pad_kind {
    TT_PAD_REFLECT, /* numpy/PyTorch "reflect": ... 2 1 | 0 1 2 ... L-1 | L-2 ..., periodic */
    TT_PAD_ZERO,    /* zero pixels (before normalisation) */
} tt_pad_kind;

/* Smallest per-axis Gaussian weight (the 2-D minimum is its square). */
#define TT_TILE_MIN_AXIS_WEIGHT 1e-3f

/* "gaussian"/"mean" and "reflect"/"zero" (exact, lower case); anything else
 * is TT_ERR_INVALID_ARGUMENT listing the valid names; *kind then unchanged. */
tt_status tt_blend_kind_parse(const char *text, tt_blend_kind *kind);
tt_status tt_pad_kind_parse(const char *text, tt_pad_kind *kind);

/* One axis of the plan. */
typedef struct tt_tile_axis {
    int length;       /* L: image height or width */
    int tile;         /* T: tile height or width */
    int count;        /* tiles along this axis */
    int *origin;      /* (count) first image coordinate of each tile; < 0 when padded */
    float *weight;    /* (tile) blend weight along this axis */
} tt_tile_axis;

typedef struct tt_tile_plan {
    tt_tile_axis y, x;   /* rows and columns */
    double overlap;
    tt_blend_kind blend;
} tt_tile_plan;

/* Plans an image of height x width (>= 1 each) cut into tiles of
 * tile_h x tile_w (>= 1 each) with overlap in [0, 1).  Errors:
 * TT_ERR_INVALID_ARGUMENT naming the bad value.  *plan is filled on success
 * (tt_tile_plan_free); on error it is left empty (free allowed). */
tt_status tt_tile_plan_make(int height, int width, int tile_h, int tile_w, double overlap,
                            tt_blend_kind blend, tt_tile_plan *plan);
/* Frees the arrays; the struct is zeroed.  NULL allowed. */
void tt_tile_plan_free(tt_tile_plan *plan);

/* Tiles in the plan: rows * columns; tile t is (row t / columns, column t % columns). */
static inline int tt_tile_plan_count(const tt_tile_plan *plan)
{
    return plan->y.count * plan->x.count;
}

/* The origin of tile t in image coordinates (may be negative when padded). */
void tt_tile_plan_origin(const tt_tile_plan *plan, int t, int *y0, int *x0);

/* sum[i] = summed blend weight along one axis at image coordinate i (length
 * entries): the weight a pixel (y, x) receives in all is
 * sum_y[y] * sum_x[x].  For tests and for dividing the accumulator. */
void tt_tile_axis_sums(const tt_tile_axis *axis, double *sum);

/* The summed weight of every pixel by brute force, adding each tile's
 * weights into map (height * width floats, row-major; zeroed first): an
 * independent check of the separable formula, for tests on small images. */
void tt_tile_plan_weight_map(const tt_tile_plan *plan, float *map);

/* The image coordinate a padded tile coordinate reads under reflect
 * padding: i in any integer, result in [0, length). */
int tt_pad_reflect_index(int i, int length);

#endif
