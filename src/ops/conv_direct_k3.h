/*
 * What the two DIRECT rows share (src/ops/conv_direct.c, the 8-wide and
 * generic kernels; src/ops/conv_direct_w16.c, the 16-wide ones): the
 * geometry arguments, the 3x3 shape, the options of
 * opencl/conv_direct_k3.cl (whose band sums both weight gradients use) and
 * the weight gradient's bands of rows.  Internal to those two files.
 */
#ifndef TT_OPS_CONV_DIRECT_K3_H
#define TT_OPS_CONV_DIRECT_K3_H

#include "ops/conv_algo.h"

#define TT_K3_GEOMETRY_ARGS(s)                                                                \
    tt_arg_i32((int)(s)->batch), tt_arg_i32((int)(s)->cin), tt_arg_i32((int)(s)->h),           \
        tt_arg_i32((int)(s)->w), tt_arg_i32((int)(s)->cout), tt_arg_i32((int)(s)->oh),         \
        tt_arg_i32((int)(s)->ow), tt_arg_i32((int)(s)->kh), tt_arg_i32((int)(s)->kw),          \
        tt_arg_i32((int)(s)->sh), tt_arg_i32((int)(s)->sw), tt_arg_i32((int)(s)->ph),          \
        tt_arg_i32((int)(s)->pw), tt_arg_i32((int)(s)->dh), tt_arg_i32((int)(s)->dw)

/* Sizes of opencl/conv_direct_k3.cl, its options (none per device or shape). */
#define TT_K3_ROWS 2     /* output rows per work-item */
#define TT_K3_COB 4      /* output channels per work-item */
#define TT_K3_CHUNKS 4   /* column chunks of 8 per work-group (forward) */
#define TT_K3_TEXT_(x) #x
#define TT_K3_TEXT(x) TT_K3_TEXT_(x)
#define TT_K3_OPTIONS                                                                    \
    "-DTT_DIRECT_ROWS=" TT_K3_TEXT(TT_K3_ROWS) " -DTT_DIRECT_K3_COB=" TT_K3_TEXT(TT_K3_COB) \
    " -DTT_DIRECT_K3_CHUNKS=" TT_K3_TEXT(TT_K3_CHUNKS)

/* The UNet's 3x3, stride 1, padding 1 convolution. */
static inline int tt_is_k3(const tt_conv_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->ph == 1 && s->pw == 1 &&
           s->dh == 1 && s->dw == 1;
}

/* The input gradient's forward: dout (N, Cout, OH, OW) -> dinp (N, Cin, H, W). */
static inline tt_conv_shape tt_k3_data_shape(const tt_conv_shape *s)
{
    tt_conv_shape t = *s;
    t.cin = s->cout, t.cout = s->cin, t.h = s->oh, t.w = s->ow, t.oh = s->h, t.ow = s->w;
    return t;
}

/* n floats rounded up to a cache line's: where a padded copy starts after
 * something else in a workspace, so that its rows' vectors stay aligned. */
static inline size_t tt_k3_line_floats(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* The weight gradient's bands of rows (conv_direct.c, tt_k3w_bands_of):
 * `images_per_band` images to a band, `per_image` bands an image of
 * `rows` output rows, `count` bands in all. */
typedef struct tt_k3w_bands {
    size_t images_per_band, per_image, rows, count;
} tt_k3w_bands;

/* The bands of `s` whose rows' dout and input fit `band_bytes`, rows a
 * multiple of `step` where the band is not the whole image. */
tt_k3w_bands tt_k3w_bands_of(const tt_conv_shape *s, size_t band_bytes, size_t step);

/* dweight[i] += the sum of `bands` partial sums of `count` floats each
 * (conv_direct_weight_bands_sum). */
tt_status tt_k3w_bands_sum(tt_backend *be, tt_mem dweight, tt_mem partial, size_t bands,
                           size_t count);

#endif
