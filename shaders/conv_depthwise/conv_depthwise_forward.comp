/* conv_depthwise/conv_depthwise_forward: out[n, c, oy, ox] = (accumulate ?
 * out : 0) + (bias[c] or 0) + sum over ky, kx of inp[n, c, oy sH - pH + ky
 * dH, ox sW - pW + kx dW] weight[c, 0, ky, kx] (opencl/conv_depthwise.cl;
 * arguments out, inp, weight, bias, has_bias, accumulate, geometry; global
 * (OW, OH, N C), rounded up).  Taps outside the image read a clamped
 * address and use 0. */
#version 450
#include "common.glsl"
#include "conv_depthwise/depthwise.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
TT_BUFFER(2, float, weight);
TT_BUFFER(3, float, bias);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; uint weight_offset; uint bias_offset;
    int has_bias; int accumulate; tt_geometry g;
} args;

void main()
{
    tt_geometry g = args.g;
    int ox = int(gl_GlobalInvocationID.x), oy = int(gl_GlobalInvocationID.y);
    int nc = int(gl_GlobalInvocationID.z);
    if (ox >= g.OW || oy >= g.OH || nc >= g.N * g.Cout) return;
    int c = nc % g.Cout;
    int plane = TT_AT(args.inp_offset, 4) + nc * g.H * g.W;
    int w = TT_AT(args.weight_offset, 4) + c * g.KH * g.KW;
    int ix0 = ox * g.SW - g.PW, iy0 = oy * g.SH - g.PH;
    float acc = 0.0;
    for (int ky = 0; ky < g.KH; ky++) {
        int iy = iy0 + ky * g.DH;
        int row = plane + clamp(iy, 0, g.H - 1) * g.W;
        bool row_in = iy >= 0 && iy < g.H;
        for (int kx = 0; kx < g.KW; kx++) {
            int ix = ix0 + kx * g.DW;
            float v = TT_B(inp)[row + clamp(ix, 0, g.W - 1)];
            float x = row_in && ix >= 0 && ix < g.W ? v : 0.0;
            acc = fma(x, TT_B(weight)[w + ky * g.KW + kx], acc);
        }
    }
    int at = TT_AT(args.out_offset, 4) + (nc * g.OH + oy) * g.OW + ox;
    float base = args.accumulate != 0 ? TT_B(outp)[at] : 0.0;
    if (args.has_bias != 0) base += TT_B(bias)[TT_AT(args.bias_offset, 4) + c];
    TT_B(outp)[at] = base + acc;
}
