/*
 * Nearest x2 upsampling of NCHW planes, as PyTorch's
 * F.interpolate(scale_factor=2, mode='nearest'): output (oy, ox) reads input
 * (oy / 2, ox / 2).
 *
 * Forward: one work-item per input, copied to its 2x2 block (a quarter of
 * the index arithmetic of one per output).  Backward: one work-item per
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
    int out_w = 2 * width;
    int i = get_global_id(0);
    if (i >= planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    float2 v = (float2)(inp[i]);
    __global float *o = out + (size_t)plane * 4 * height * width + (2 * iy) * out_w + 2 * ix;
    vstore2(v, 0, o);
    vstore2(v, 0, o + out_w);
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
