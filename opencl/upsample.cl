/*
 * Bilinear upsampling of NCHW planes by an integer factor f,
 * align_corners = False, with PyTorch's arithmetic
 * (F.interpolate(scale_factor=f, mode='bilinear')): for an output row (or
 * column) dst the source coordinate is src = max(scale * (dst + 0.5) - 0.5,
 * 0) with scale = (float)(1.0 / f) (from the host), taps i0 = floor(src),
 * i1 = min(i0 + 1, in - 1), weights 1 - (src - i0) and src - i0.
 *
 * The arithmetic is pinned so that tests/ref_resize.c and the shaders give
 * the same bits: nothing is contracted (the pragma), and the sums are the
 * explicit fma() below.  For f = 2 they are the sums PoCL made of the
 * earlier x2 kernel's expressions, so x2 results keep their bits.
 *
 * Forward: one work-item per output.  Backward: one work-item per input,
 * gathering from the outputs that may tap it, so no atomics are needed.
 * Backward ADDS.
 */
#pragma OPENCL FP_CONTRACT OFF

/* Taps of output index dst along an axis of in_size input samples. */
void bilinear_taps(int dst, int in_size, float scale, int *i0, int *i1, float *w1)
{
    float scaled = scale * ((float)dst + 0.5f);
    float src = scaled - 0.5f;
    if (src < 0.0f) src = 0.0f;
    int lo = (int)src;
    *i0 = lo;
    *i1 = lo + (lo < in_size - 1 ? 1 : 0);
    *w1 = src - (float)lo; /* exact */
}

/* The weight with which output index dst reads input index i (0 if not). */
float bilinear_weight(int dst, int i, int in_size, float scale)
{
    int i0, i1;
    float w1;
    bilinear_taps(dst, in_size, scale, &i0, &i1, &w1);
    return (i0 == i ? 1.0f - w1 : 0.0f) + (i1 == i ? w1 : 0.0f);
}

/* out (planes, f height, f width) from inp (planes, height, width). */
__kernel void upsample_bilinear_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                        const int planes, const int height, const int width,
                                        const int factor, const float scale)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int out_h = factor * height, out_w = factor * width;
    int o = get_global_id(0);
    if (o >= planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    __global const float *x = inp + (size_t)plane * height * width;
    int y0, y1, x0, x1;
    float hy1, wx1;
    bilinear_taps(oy, height, scale, &y0, &y1, &hy1);
    bilinear_taps(ox, width, scale, &x0, &x1, &wx1);
    float hy0 = 1.0f - hy1, wx0 = 1.0f - wx1;
    float top = fma(wx0, x[y0 * width + x0], wx1 * x[y0 * width + x1]);
    float bottom = fma(wx0, x[y1 * width + x0], wx1 * x[y1 * width + x1]);
    out[o] = fma(hy0, top, hy1 * bottom);
}

/* dinp[i] += sum over outputs o of weight(o, i) * dout[o].  Along an axis,
 * output dst taps input i when i - 1 <= src(dst) < i + 1, that is for
 * f i - f / 2 - 1/2 <= dst < f i + 3 f / 2 - 1/2 (the clamping at 0 and at
 * the last input only moves border outputs onto inputs 0 and in - 1, which
 * these bounds already hold); one more output on each side covers src's
 * rounding, and the weights say which really tap it (0: not). */
__kernel void upsample_bilinear_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                         const int planes, const int height, const int width,
                                         const int factor, const float scale)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int out_h = factor * height, out_w = factor * width;
    int i = get_global_id(0);
    if (i >= planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    __global const float *g = dout + (size_t)plane * out_h * out_w;
    int below = (factor + 1) / 2 + 1, above = 3 * factor / 2;
    int oy_lo = max(factor * iy - below, 0), oy_hi = min(factor * iy + above, out_h - 1);
    int ox_lo = max(factor * ix - below, 0), ox_hi = min(factor * ix + above, out_w - 1);
    float sum = 0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        float wy = bilinear_weight(oy, iy, height, scale);
        if (wy == 0.0f) continue;
        float row = 0.0f;
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            float wx = bilinear_weight(ox, ix, width, scale);
            if (wx != 0.0f) row = fma(wx, g[oy * out_w + ox], row);
        }
        sum = fma(wy, row, sum);
    }
    dinp[i] = dinp[i] + sum;
}
