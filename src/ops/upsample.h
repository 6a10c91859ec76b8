/*
 * Bilinear upsampling of NCHW tensors by an integer factor f >= 1,
 * align_corners = False (True: the _aligned ops below), exactly as
 * PyTorch's F.interpolate(x, scale_factor=f, mode='bilinear',
 * align_corners=False): output (N, C, f H, f W).  Along each axis, output
 * index dst reads the source coordinate src = scale * (dst + 0.5) - 0.5
 * with scale = (float)(1.0 / f), in float, unfused (PyTorch's
 * area_pixel_compute_source_index), clamped at 0; the taps are
 * floor(src) and floor(src) + 1 (clamped to the last row or column) with
 * weights 1 - (src - floor(src)) and src - floor(src).
 * For f a power of two every step is exact.  1x1 inputs give constant
 * outputs; f = 1 gives the input's values.
 *
 * Backward ADDS: every input element sums the weighted gradients of the
 * outputs that read it (a gather, no atomics), with the very weights the
 * forward uses (the same float arithmetic in the kernel, the shader and
 * tests/ref_resize.c).
 */
#ifndef TT_OPS_UPSAMPLE_H
#define TT_OPS_UPSAMPLE_H

#include "backend/backend.h"

/* The largest factor: the backward's gather reads about (2f + 3)^2 outputs
 * per input in one invocation, which must stay within a Vulkan device's
 * loop limit (TT_LOOP_BUDGET, src/backend/loop_budget.h). */
#define TT_UPSAMPLE_MAX_FACTOR 64

/* The INPUT's shape; the output is (batch, channels, f height, f width)
 * for the factor f the op is given (2 for the x2 ops). */
typedef struct tt_upsample_desc {
    int batch, channels, height, width;
} tt_upsample_desc;

/* What the x2 upsamplings (bilinear and nearest) check before a launch
 * (`op` names the caller): the sizes positive and within one launch, the
 * (N, C, H, W) tensor `small` and the (N, C, 2H, 2W) tensor `big` large
 * enough (one without a buffer, a gradient not wanted, is not checked).
 * *planes = N C, *count = N C H W. */
tt_status tt_upsample_check(const char *op, const tt_upsample_desc *desc, tt_mem small,
                            const char *small_name, tt_mem big, const char *big_name, int *planes,
                            size_t *count);

/* out (N, C, f H, f W) = bilinear upsampling of inp (N, C, H, W) by
 * `factor` (1 .. TT_UPSAMPLE_MAX_FACTOR; else TT_ERR_INVALID_ARGUMENT
 * naming it).  out must not overlap inp. */
tt_status tt_upsample_bilinear_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                       const tt_upsample_desc *desc, int factor);
/* dinp (N, C, H, W) += transpose of the forward applied to dout
 * (N, C, f H, f W).  A dinp of (tt_mem){0} means not wanted: nothing is
 * done (after the checks).  dinp must not overlap dout. */
tt_status tt_upsample_bilinear_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                        const tt_upsample_desc *desc, int factor);

/*
 * align_corners = True, as PyTorch's F.interpolate(x, scale_factor=f,
 * mode='bilinear', align_corners=True) (segmentation_models_pytorch's FPN
 * and DeepLabV3+): output (N, C, f H, f W), corners on corners.  Along an
 * axis of I inputs and O = f I outputs, output index dst reads the source
 * coordinate src = scale * (float)dst with scale = (float)(I - 1) /
 * (float)(O - 1) (0 when O == 1) rounded once on the host, the multiply
 * in float (PyTorch's area_pixel_compute_scale and
 * area_pixel_compute_source_index); taps i0 = min(floor(src), I - 1) and
 * i1 = min(i0 + 1, I - 1), weights 1 - (src - i0) and src - i0.  The sums
 * are the fma steps of the align_corners = False kernels, so both backends
 * equal the float reference (tests/ref_resize.c) bit for bit.  1-wide
 * axes give constant outputs along them; f = 1 gives the input's values.
 *
 * The same factors (1 .. TT_UPSAMPLE_MAX_FACTOR) and checks as above,
 * plus: each output side f H and f W at most TT_UPSAMPLE_ALIGNED_MAX_SIDE,
 * else TT_ERR_UNSUPPORTED naming the op (the backward's range of outputs
 * per input allows for src's float rounding only that far; no image
 * comes near).  Backward ADDS, a gather as above: input i along an axis is
 * read by the outputs (i - 1) (O - 1) / (I - 1) .. (i + 1) (O - 1) / (I - 1)
 * (opencl/upsample.cl says why), up to about 3 f of them (I = 3).
 */
#define TT_UPSAMPLE_ALIGNED_MAX_SIDE (1 << 22)

tt_status tt_upsample_bilinear_aligned_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                               const tt_upsample_desc *desc, int factor);
/* dinp (N, C, H, W) += transpose of the aligned forward applied to dout;
 * a dinp of (tt_mem){0}: nothing done (after the checks). */
tt_status tt_upsample_bilinear_aligned_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                                const tt_upsample_desc *desc, int factor);

/* The x2 forms: tt_upsample_bilinear_forward/_backward (align_corners =
 * False) with factor 2 (the same kernels and bits). */
tt_status tt_upsample_bilinear2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                         const tt_upsample_desc *desc);
tt_status tt_upsample_bilinear2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                          const tt_upsample_desc *desc);

#endif
