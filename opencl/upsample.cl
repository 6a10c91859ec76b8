/*
 * Bilinear upsampling of NCHW planes by an integer factor f, one forward
 * and one backward kernel for both variants, `aligned` picking one along
 * each axis (per-axis scales from the host):
 *
 * aligned = 0, align_corners = False, PyTorch's
 * F.interpolate(scale_factor=f, mode='bilinear'): for an output row (or
 * column) dst the source coordinate is src = max(scale * (dst + 0.5) - 0.5,
 * 0) with scale = (float)(1.0 / f) on both axes, taps i0 = floor(src),
 * i1 = min(i0 + 1, in - 1), weights 1 - (src - i0) and src - i0.
 *
 * aligned = 1, align_corners = True: for an axis of in_size inputs and
 * O = f in_size outputs, src = scale * (float)dst with
 * scale = (float)(in_size - 1) / (float)(O - 1) (0 when O == 1): one
 * rounding, nothing to fuse.  Taps i0 = min((int)src, in_size - 1)
 * (PyTorch's guard; src never passes in_size - 1 by more than its
 * rounding), i1 = min(i0 + 1, in_size - 1), the same weights.
 *
 * The arithmetic is pinned so that tests/ref_resize.c and the shaders give
 * the same bits: nothing is contracted (the pragma), and the sums are the
 * explicit fma() below, the same steps for both variants.  For f = 2 and
 * aligned = 0 they are the sums PoCL made of the earlier x2 kernel's
 * expressions, so x2 results keep their bits.
 *
 * Forward: one work-item per output.  Backward: one work-item per input,
 * gathering from the outputs that may tap it (bilinear_readers), so no
 * atomics are needed.  Backward ADDS.
 */
#pragma OPENCL FP_CONTRACT OFF

/* Taps of output index dst along an axis of in_size input samples. */
void bilinear_taps(int dst, int in_size, int aligned, float scale, int *i0, int *i1, float *w1)
{
    float src;
    int lo;
    if (aligned) {
        src = scale * (float)dst;
        lo = min((int)src, in_size - 1);
    } else {
        float scaled = scale * ((float)dst + 0.5f);
        src = scaled - 0.5f;
        if (src < 0.0f) src = 0.0f;
        lo = (int)src;
    }
    *i0 = lo;
    *i1 = lo + (lo < in_size - 1 ? 1 : 0);
    *w1 = src - (float)lo; /* exact */
}

/* The weight with which output index dst reads input index i (0 if not). */
float bilinear_weight(int dst, int i, int in_size, int aligned, float scale)
{
    int i0, i1;
    float w1;
    bilinear_taps(dst, in_size, aligned, scale, &i0, &i1, &w1);
    return (i0 == i ? 1.0f - w1 : 0.0f) + (i1 == i ? w1 : 0.0f);
}

/* The outputs *lo .. *hi that may read input i along an axis (in_size
 * inputs, factor f, O = f in_size outputs); the weights say which really
 * read it (0: not).
 *
 * aligned = 0: output dst taps input i when i - 1 <= src(dst) < i + 1,
 * that is for f i - f / 2 - 1/2 <= dst < f i + 3 f / 2 - 1/2 (the clamping
 * at 0 and at the last input only moves border outputs onto inputs 0 and
 * in - 1, which these bounds already hold); one more output on each side
 * covers src's rounding: f i - (f + 1) / 2 - 1 .. f i + 3 f / 2.
 *
 * aligned = 1: output dst reads input i only if i - 1 < src(dst) < i + 1,
 * or i = in_size - 1 and src >= i (the last output, whose src may round
 * just past in_size - 1).  In exact arithmetic
 * src = dst (in_size - 1) / (O - 1), and the float src differs from that
 * by under (in_size - 1) 2^-22 (two roundings of 2^-24 relative), which is
 * less than one output's step (in_size - 1) / (O - 1) while O <= 2^22
 * (TT_UPSAMPLE_ALIGNED_MAX_SIDE, checked by the host).  So the readers lie
 * within floor(q) .. ceil(r) for q = (i - 1) (O - 1) / (in_size - 1) and
 * r = (i + 1) (O - 1) / (in_size - 1); one more output on each side for
 * good measure.  With O - 1 = f (in_size - 1) + f - 1 the integer parts
 * stay small: q = (i - 1) f + (i - 1) (f - 1) / (in_size - 1).  A 1-wide
 * axis: every output reads the input.  At most about
 * 2 (O - 1) / (in_size - 1) + 3 per axis: 2 f + 3 for large in_size, up
 * to 3 f (all outputs) at in_size 3. */
void bilinear_readers(int i, int in_size, int factor, int aligned, int *lo, int *hi)
{
    int out_size = factor * in_size;
    if (!aligned) {
        *lo = max(factor * i - ((factor + 1) / 2 + 1), 0);
        *hi = min(factor * i + 3 * factor / 2, out_size - 1);
    } else if (in_size == 1) {
        *lo = 0;
        *hi = out_size - 1;
    } else {
        int n = in_size - 1, extra = factor - 1;
        *lo = i == 0 ? 0 : max((i - 1) * factor + (i - 1) * extra / n - 1, 0);
        *hi = min((i + 1) * factor + ((i + 1) * extra + n - 1) / n + 1, out_size - 1);
    }
}

/* out (planes, f height, f width) from inp (planes, height, width). */
__kernel void upsample_bilinear_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                        const int planes, const int height, const int width,
                                        const int factor, const int aligned,
                                        const float scale_y, const float scale_x)
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
    bilinear_taps(oy, height, aligned, scale_y, &y0, &y1, &hy1);
    bilinear_taps(ox, width, aligned, scale_x, &x0, &x1, &wx1);
    float hy0 = 1.0f - hy1, wx0 = 1.0f - wx1;
    float top = fma(wx0, x[y0 * width + x0], wx1 * x[y0 * width + x1]);
    float bottom = fma(wx0, x[y1 * width + x0], wx1 * x[y1 * width + x1]);
    out[o] = fma(hy0, top, hy1 * bottom);
}

/* dinp[i] += sum over outputs o of weight(o, i) * dout[o], over the
 * outputs bilinear_readers gives, rows then columns. */
__kernel void upsample_bilinear_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                         const int planes, const int height, const int width,
                                         const int factor, const int aligned,
                                         const float scale_y, const float scale_x)
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
    int oy_lo, oy_hi, ox_lo, ox_hi;
    bilinear_readers(iy, height, factor, aligned, &oy_lo, &oy_hi);
    bilinear_readers(ix, width, factor, aligned, &ox_lo, &ox_hi);
    float sum = 0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        float wy = bilinear_weight(oy, iy, height, aligned, scale_y);
        if (wy == 0.0f) continue;
        float row = 0.0f;
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            float wx = bilinear_weight(ox, ix, width, aligned, scale_x);
            if (wx != 0.0f) row = fma(wx, g[oy * out_w + ox], row);
        }
        sum = fma(wy, row, sum);
    }
    dinp[i] = dinp[i] + sum;
}
