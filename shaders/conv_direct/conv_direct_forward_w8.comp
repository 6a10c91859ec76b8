/* conv_direct/conv_direct_forward_w8: conv_direct_forward with 8
 * neighbouring outputs a work-item (OpenCL's float8 as float[8]); sW must
 * be 1 (opencl/conv_direct.cl; arguments as conv_direct_forward; global
 * (ceil(OW / 8), OH, N ceil(Cout / COB))).  Columns outside the image
 * (padding, the ragged right edge) are masked (TT_LOAD8, TT_STORE8). */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_FORWARD_BUFFERS;
TT_FORWARD_ARGS;

void main()
{
    tt_geometry g = args.g;
    int ox0 = int(gl_GlobalInvocationID.x) * 8, oy = int(gl_GlobalInvocationID.y);
    int blocks = (g.Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int co0 = int(gl_GlobalInvocationID.z) % blocks * TT_DIRECT_COB;
    if (ox0 >= g.OW || oy >= g.OH || n >= g.N) return;
    int last = min(TT_DIRECT_COB, g.Cout - co0) - 1;
    float acc[TT_DIRECT_COB][8];
    for (int j = 0; j < TT_DIRECT_COB; j++)
        for (int l = 0; l < 8; l++) acc[j][l] = 0.0;
    int ktaps = g.KH * g.KW, wstride = g.Cin * ktaps;
    for (int ci = 0; ci < g.Cin; ci++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        int wci = TT_AT(args.weight_offset, 4) + (co0 * g.Cin + ci) * ktaps;
        for (int ky = 0; ky < g.KH; ky++) {
            int iy = oy * g.SH - g.PH + ky * g.DH;
            if (iy < 0 || iy >= g.H) continue;
            for (int kx = 0; kx < g.KW; kx++) {
                float x[8];
                TT_LOAD8(x, inp, plane + iy * g.W, ox0 - g.PW + kx * g.DW, g.W)
                int tap = ky * g.KW + kx;
                for (int j = 0; j < TT_DIRECT_COB; j++) {
                    float w = TT_B(weight)[wci + min(j, last) * wstride + tap];
                    for (int l = 0; l < 8; l++) acc[j][l] = fma(x[l], w, acc[j][l]);
                }
            }
        }
    }
    for (int j = 0; j <= last; j++) {
        int row = TT_AT(args.out_offset, 4) + ((n * g.Cout + co0 + j) * g.OH + oy) * g.OW;
        float b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j] : 0.0;
        float v[8];
        for (int l = 0; l < 8; l++) v[l] = acc[j][l] + b;
        TT_STORE8(outp, row, ox0, g.OW, v, args.accumulate != 0)
    }
}
