/*
 * Bilinear x2 upsampling of NCHW planes, align_corners = False, with
 * PyTorch's arithmetic (F.interpolate(scale_factor=2, mode='bilinear')):
 * for an output row (or column) dst the source coordinate is
 * src = max((dst + 0.5) / 2 - 0.5, 0), taps i0 = floor(src),
 * i1 = min(i0 + 1, in - 1), weights 1 - (src - i0) and src - i0.
 * All of these are exact in float (multiples of 1/4).
 *
 * Forward: one work-item per output.  Backward: one work-item per input,
 * gathering from the output rows and columns that tap it (at most rows
 * 2i-1 .. 2i+2), so no atomics are needed.  Backward ADDS.
 */

/* Taps of output index dst along an axis of in_size input samples. */
void bilinear2x_taps(int dst, int in_size, int *i0, int *i1, float *w1)
{
    float src = ((float)dst + 0.5f) * 0.5f - 0.5f;
    if (src < 0.0f) src = 0.0f;
    int lo = (int)src;
    *i0 = lo;
    *i1 = lo + (lo < in_size - 1 ? 1 : 0);
    *w1 = src - (float)lo;
}

/* The weight with which output index dst reads input index i (0 if not). */
float bilinear2x_weight(int dst, int i, int in_size)
{
    int i0, i1;
    float w1;
    bilinear2x_taps(dst, in_size, &i0, &i1, &w1);
    return (i0 == i ? 1.0f - w1 : 0.0f) + (i1 == i ? w1 : 0.0f);
}

/* out (planes, 2 height, 2 width) from inp (planes, height, width). */
__kernel void upsample_bilinear2x_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                          const int planes, const int height, const int width)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int out_h = 2 * height, out_w = 2 * width;
    int o = get_global_id(0);
    if (o >= planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    __global const float *x = inp + (size_t)plane * height * width;
    int y0, y1, x0, x1;
    float hy1, wx1;
    bilinear2x_taps(oy, height, &y0, &y1, &hy1);
    bilinear2x_taps(ox, width, &x0, &x1, &wx1);
    float hy0 = 1.0f - hy1, wx0 = 1.0f - wx1;
    out[o] = hy0 * (wx0 * x[y0 * width + x0] + wx1 * x[y0 * width + x1]) +
             hy1 * (wx0 * x[y1 * width + x0] + wx1 * x[y1 * width + x1]);
}

/* dinp[i] += sum over outputs o of weight(o, i) * dout[o]. */
__kernel void upsample_bilinear2x_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                           const int planes, const int height, const int width)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int out_h = 2 * height, out_w = 2 * width;
    int i = get_global_id(0);
    if (i >= planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    __global const float *g = dout + (size_t)plane * out_h * out_w;
    int oy_lo = max(2 * iy - 2, 0), oy_hi = min(2 * iy + 3, out_h - 1);
    int ox_lo = max(2 * ix - 2, 0), ox_hi = min(2 * ix + 3, out_w - 1);
    float sum = 0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        float wy = bilinear2x_weight(oy, iy, height);
        if (wy == 0.0f) continue;
        float row = 0.0f;
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            float wx = bilinear2x_weight(ox, ix, width);
            if (wx != 0.0f) row += wx * g[oy * out_w + ox];
        }
        sum += wy * row;
    }
    dinp[i] += sum;
}
