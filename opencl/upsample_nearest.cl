/*
 * Nearest x2 upsampling of NCHW planes, as PyTorch's
 * F.interpolate(scale_factor=2, mode='nearest'): output (oy, ox) reads input
 * (oy / 2, ox / 2).
 *
 * Forward: one work-item per output, a copy.  Backward: one work-item per
 * input, summing its 2x2 block of the output gradient as
 * (top-left + top-right) + (bottom-left + bottom-right), then adding that
 * to dinp (shaders/upsample_nearest/ sum in the same order).  Backward ADDS.
 */

/* out (planes, 2 height, 2 width) from inp (planes, height, width). */
__kernel void upsample_nearest2x_forward(TT_MEM(float, out), TT_MEM(const float, inp),
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
    out[o] = inp[(size_t)plane * height * width + (oy / 2) * width + ox / 2];
}

/* dinp[i] += the sum of the 2x2 block of dout that input i was copied to. */
__kernel void upsample_nearest2x_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                          const int planes, const int height, const int width)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int out_w = 2 * width;
    int i = get_global_id(0);
    if (i >= planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    __global const float *g = dout + (size_t)plane * 4 * height * width + (2 * iy) * out_w + 2 * ix;
    float top = g[0] + g[1];
    float bottom = g[out_w] + g[out_w + 1];
    dinp[i] += top + bottom;
}
