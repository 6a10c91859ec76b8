/* conv_direct/conv_direct_backward_data_w8: conv_direct_backward_data with
 * 8 columns a work-item (OpenCL's float8 as float[8]); sW must be 1
 * (opencl/conv_direct.cl; arguments dinp, dout, weight, geometry; global
 * (ceil(W / 8), H, N ceil(Cin / CIB))). */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint weight_offset; tt_geometry g;
} args;

void main()
{
    tt_geometry g = args.g;
    int x0 = int(gl_GlobalInvocationID.x) * 8, y = int(gl_GlobalInvocationID.y);
    int blocks = (g.Cin + TT_DIRECT_CIB - 1) / TT_DIRECT_CIB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int ci0 = int(gl_GlobalInvocationID.z) % blocks * TT_DIRECT_CIB;
    if (x0 >= g.W || y >= g.H || n >= g.N) return;
    int last = min(TT_DIRECT_CIB, g.Cin - ci0) - 1;
    float acc[TT_DIRECT_CIB][8];
    for (int j = 0; j < TT_DIRECT_CIB; j++)
        for (int l = 0; l < 8; l++) acc[j][l] = 0.0;
    int ktaps = g.KH * g.KW;
    int d0 = TT_AT(args.dout_offset, 4), w0 = TT_AT(args.weight_offset, 4);
    for (int ky = 0; ky < g.KH; ky++) {
        int ty = y + g.PH - ky * g.DH;
        if (ty < 0 || ty % g.SH != 0) continue;
        int oy = ty / g.SH;
        if (oy >= g.OH) continue;
        for (int kx = 0; kx < g.KW; kx++) {
            int tap = ky * g.KW + kx;
            for (int co = 0; co < g.Cout; co++) {
                float d[8];
                TT_LOAD8(d, dout, d0 + ((n * g.Cout + co) * g.OH + oy) * g.OW,
                         x0 + g.PW - kx * g.DW, g.OW)
                int w = w0 + (co * g.Cin + ci0) * ktaps + tap;
                for (int j = 0; j < TT_DIRECT_CIB; j++) {
                    float wj = TT_B(weight)[w + min(j, last) * ktaps];
                    for (int l = 0; l < 8; l++) acc[j][l] = fma(d[l], wj, acc[j][l]);
                }
            }
        }
    }
    for (int j = 0; j <= last; j++) {
        int row = TT_AT(args.dinp_offset, 4) + ((n * g.Cin + ci0 + j) * g.H + y) * g.W;
        float v[8] = acc[j];
        TT_STORE8(dinp, row, x0, g.W, v, true)
    }
}
