/* upsample/upsample_bilinear_backward: dinp[i] += the sum over outputs o
 * of weight(o, i) * dout[o], align_corners False (aligned 0) or True (1)
 * (opencl/upsample.cl; arguments dinp, dout, planes, height, width,
 * factor, aligned, scale_y, scale_x).  One work-item per input, gathering
 * from the outputs bilinear_readers gives along each axis (the kernel says
 * why), the multiply-adds in the kernel's order through tt_fma, so the
 * bits are its bits.  The row loop takes two columns a step: aligned, up
 * to 3 f outputs per axis read an input (3 inputs a side),
 * (3 f)^2 = 36.9K single steps at f = 64, over TT_LOOP_BUDGET; two a step
 * keep it near 3 f + (3 f)^2 / 2 = 18.6K (align_corners = False: about
 * (2 f + 3)^2 / 2) (docs/backend.md, loops). */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"
#include "upsample/bilinear.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int planes; int height; int width; int factor;
    int aligned; float scale_y; float scale_x;
} args;

void main()
{
    int height = args.height, width = args.width, factor = args.factor, aligned = args.aligned;
    int out_h = factor * height, out_w = factor * width;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int g = TT_AT(args.dout_offset, 4) + (i / (width * height)) * out_h * out_w;
    int oy_lo, oy_hi, ox_lo, ox_hi;
    bilinear_readers(iy, height, factor, aligned, oy_lo, oy_hi);
    bilinear_readers(ix, width, factor, aligned, ox_lo, ox_hi);
    precise float sum = 0.0;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        float wy = bilinear_weight(oy, iy, height, aligned, args.scale_y);
        if (wy == 0.0) continue;
        precise float row = 0.0;
        for (int ox = ox_lo; ox <= ox_hi; ox += 2) {
            float wx = bilinear_weight(ox, ix, width, aligned, args.scale_x);
            if (wx != 0.0) row = tt_fma(wx, TT_B(dout)[g + oy * out_w + ox], row);
            if (ox + 1 <= ox_hi) {
                float wx1 = bilinear_weight(ox + 1, ix, width, aligned, args.scale_x);
                if (wx1 != 0.0) row = tt_fma(wx1, TT_B(dout)[g + oy * out_w + ox + 1], row);
            }
        }
        sum = tt_fma(wy, row, sum);
    }
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + sum;
    TT_B(dinp)[id] = total;
}
