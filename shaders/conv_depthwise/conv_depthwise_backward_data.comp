/* conv_depthwise/conv_depthwise_backward_data: dinp[n, c, y, x] =
 * (accumulate ? dinp : 0) + sum over the taps (ky, kx) whose output oy =
 * (y + pH - ky dH) / sH (exact, in [0, OH); likewise ox) exists, of
 * dout[n, c, oy, ox] weight[c, 0, ky, kx]: a gather, no atomics, over
 * only the taps whose offset is a multiple of the stride
 * (opencl/conv_depthwise.cl; arguments dinp, dout, weight, accumulate,
 * geometry; global (W, H, N C), rounded up). */
#version 450
#include "common.glsl"
#include "conv_depthwise/depthwise.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint weight_offset; int accumulate; tt_geometry g;
} args;

void main()
{
    tt_geometry g = args.g;
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int nc = int(gl_GlobalInvocationID.z);
    if (x >= g.W || y >= g.H || nc >= g.N * g.Cin) return;
    int c = nc % g.Cin;
    int dplane = TT_AT(args.dout_offset, 4) + nc * g.OH * g.OW;
    int w = TT_AT(args.weight_offset, 4) + c * g.KH * g.KW;
    int oy, period_y, step_y, ox0, period_x, step_x;
    int ky0 = tt_dw_first_tap(y, g.PH, g.DH, g.SH, g.KH, oy, period_y, step_y);
    int kx0 = tt_dw_first_tap(x, g.PW, g.DW, g.SW, g.KW, ox0, period_x, step_x);
    float acc = 0.0;
    for (int ky = ky0; ky < g.KH; ky += period_y, oy -= step_y) {
        bool row_in = oy >= 0 && oy < g.OH;
        int row = dplane + clamp(oy, 0, g.OH - 1) * g.OW;
        int ox = ox0;
        for (int kx = kx0; kx < g.KW; kx += period_x, ox -= step_x) {
            float d = TT_B(dout)[row + clamp(ox, 0, g.OW - 1)];
            acc = fma(row_in && ox >= 0 && ox < g.OW ? d : 0.0,
                      TT_B(weight)[w + ky * g.KW + kx], acc);
        }
    }
    int at = TT_AT(args.dinp_offset, 4) + (nc * g.H + y) * g.W + x;
    TT_B(dinp)[at] = (args.accumulate != 0 ? TT_B(dinp)[at] : 0.0) + acc;
}
