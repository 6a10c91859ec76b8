/*
 * Row bands of planar tensors: a few rows of every plane of an (N, C, H, W)
 * tensor, copied into a small fp32 buffer of their own or back.  A model
 * that stores a full-size tensor in 16 bits runs the fp32 kernels that read
 * or write it one band at a time, so no full-size fp32 copy ever exists
 * (the UNet's 16-bit storage with checkpointing).
 *
 * A band is rows [first - halo, first + rows + halo) of each plane, laid
 * out as an (N, C, rows + 2 halo, W) tensor; rows outside [0, H) read as
 * zeros, so a 3x3 convolution with padding 1 becomes one with padding 0 in
 * H over the band (conv_band_desc in unet_bands.c).  Tensors may be fp32,
 * fp16 or bf16 (core/precision.h); bands are fp32.
 */
#ifndef TT_OPS_BAND_H
#define TT_OPS_BAND_H

#include "backend/backend.h"
#include "core/precision.h"

typedef struct tt_band {
    int planes;          /* N * C */
    int height, width;   /* H, W of the tensor */
    int first, rows;     /* the band's own rows: [first, first + rows) within [0, H) */
    int halo;            /* rows added on each side (zeros outside [0, H)) */
    int zero_halo;       /* 1: the halo rows are zeros wherever they lie */
} tt_band;

/* Elements of the band's buffer: planes * (rows + 2 halo) * W. */
size_t tt_band_floats(const tt_band *band);

/* What a band's room holds of each plane, in elements: `lead` zeros, then
 * `count` elements of the tensor from element `from` of the plane, then
 * `trail` zeros (the rows past the tensor's edges, or the halo with
 * zero_halo).  Every kernel that fills a band reads it so. */
typedef struct tt_band_span {
    int lead, from, count, trail;
} tt_band_span;
tt_band_span tt_band_span_of(const tt_band *band);

/* NULL when the band lies in its tensor; an error naming `op` otherwise. */
tt_status tt_band_check(const char *op, const tt_band *band);

/* dst (the band, fp32) = rows [first - halo, first + rows + halo) of src
 * (the whole tensor, stored as `precision`), zeros outside [0, H). */
tt_status tt_band_gather(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision,
                         const tt_band *band);

/* Rows [first, first + rows) of dst (the whole tensor, stored as
 * `precision`: rounded to it) = the band's own rows of src (fp32, laid out
 * with the band's halo, which is not written back).  A 16-bit dst needs an
 * even W and must start at an even element, so that no two work-items
 * share a 32-bit word (Vulkan writes halves in pairs). */
tt_status tt_band_scatter(tt_backend *be, tt_mem dst, tt_precision precision, tt_mem src,
                          const tt_band *band);

#endif
