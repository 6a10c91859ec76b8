/* conv_direct/conv_direct_forward: out[n, co, oy, ox] = (accumulate ? out :
 * 0) + (bias[co] or 0) + sum over ci, ky, kx of inp[n, ci, oy sH - pH + ky
 * dH, ox sW - pW + kx dW] weight[co, ci, ky, kx], COB output channels a
 * work-item (opencl/conv_direct.cl; arguments out, inp, weight, bias,
 * has_bias, accumulate, geometry, row0; global (OW, rows, N ceil(Cout / COB))
 * over the rows from row0).
 * Control flow stays uniform across a row, as in the OpenCL kernel:
 * columns past OW compute on a clamped column and store nothing; padding
 * columns read a clamped address and use 0. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_FORWARD_BUFFERS;
TT_FORWARD_ARGS;

void main()
{
    tt_geometry g = args.g;
    int ox_id = int(gl_GlobalInvocationID.x), oy = args.row0 + int(gl_GlobalInvocationID.y);
    int ox = min(ox_id, g.OW - 1);
    int blocks = (g.Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int co0 = int(gl_GlobalInvocationID.z) % blocks * TT_DIRECT_COB;
    if (oy >= g.OH || n >= g.N) return;
    int last = min(TT_DIRECT_COB, g.Cout - co0) - 1; /* uniform */
    float acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = 0.0;
    int ktaps = g.KH * g.KW, wstride = g.Cin * ktaps;
    for (int ci = 0; ci < g.Cin; ci++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        int wci = TT_AT(args.weight_offset, 4) + (co0 * g.Cin + ci) * ktaps;
        for (int ky = 0; ky < g.KH; ky++) {
            int iy = oy * g.SH - g.PH + ky * g.DH;
            if (iy < 0 || iy >= g.H) continue;
            int row = plane + iy * g.W;
            for (int kx = 0; kx < g.KW; kx++) {
                int ix = ox * g.SW - g.PW + kx * g.DW;
                float v = TT_B(inp)[row + clamp(ix, 0, g.W - 1)];
                float x = ix >= 0 && ix < g.W ? v : 0.0;
                int tap = ky * g.KW + kx;
                for (int j = 0; j < TT_DIRECT_COB; j++)
                    acc[j] = fma(x, TT_B(weight)[wci + min(j, last) * wstride + tap], acc[j]);
            }
        }
    }
    if (ox_id >= g.OW) return;
    for (int j = 0; j <= last; j++) {
        int at = TT_AT(args.out_offset, 4) + ((n * g.Cout + co0 + j) * g.OH + oy) * g.OW + ox;
        float base = args.accumulate != 0 ? TT_B(outp)[at] : 0.0;
        if (args.has_bias != 0) base += TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j];
        TT_B(outp)[at] = base + acc[j];
    }
}
