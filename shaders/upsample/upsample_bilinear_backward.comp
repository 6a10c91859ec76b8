/* upsample/upsample_bilinear_backward: dinp[i] += the sum over outputs o
 * of weight(o, i) * dout[o] (opencl/upsample.cl; arguments dinp, dout,
 * planes, height, width, factor, scale).  One work-item per input,
 * gathering from the outputs f i - (f + 1) / 2 - 1 .. f i + 3 f / 2 along
 * each axis that may tap it (the kernel says why); the multiply-adds fused
 * as the kernel's fma(), so the bits are its bits.  At most about
 * (2 f + 3)^2 loop steps (f <= TT_UPSAMPLE_MAX_FACTOR keeps them within
 * lavapipe's loop limit). */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int planes; int height; int width; int factor; float scale;
} args;

/* The weight with which output index dst reads input index i (bilinear_weight). */
float weight(int dst, int i, int in_size)
{
    precise float scaled = args.scale * (float(dst) + 0.5);
    precise float src = scaled - 0.5;
    if (src < 0.0) src = 0.0;
    int lo = int(src);
    int hi = lo + (lo < in_size - 1 ? 1 : 0);
    precise float w1 = src - float(lo);
    precise float w = (lo == i ? 1.0 - w1 : 0.0) + (hi == i ? w1 : 0.0);
    return w;
}

void main()
{
    int height = args.height, width = args.width, factor = args.factor;
    int out_h = factor * height, out_w = factor * width;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int g = TT_AT(args.dout_offset, 4) + (i / (width * height)) * out_h * out_w;
    int below = (factor + 1) / 2 + 1, above = 3 * factor / 2;
    int oy_lo = max(factor * iy - below, 0), oy_hi = min(factor * iy + above, out_h - 1);
    int ox_lo = max(factor * ix - below, 0), ox_hi = min(factor * ix + above, out_w - 1);
    precise float sum = 0.0;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        float wy = weight(oy, iy, height);
        if (wy == 0.0) continue;
        precise float row = 0.0;
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            float wx = weight(ox, ix, width);
            if (wx != 0.0) row = tt_fma(wx, TT_B(dout)[g + oy * out_w + ox], row);
        }
        sum = tt_fma(wy, row, sum);
    }
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + sum;
    TT_B(dinp)[id] = total;
}
