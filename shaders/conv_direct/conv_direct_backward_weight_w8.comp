/* conv_direct/conv_direct_backward_weight_w8: conv_direct_backward_weight
 * for CPUs, no shared memory and no barrier; sW must be 1
 * (opencl/conv_direct.cl; arguments dweight, dout, inp, geometry, row0,
 * rows: the output rows [row0, row0 + rows) of every image).  One
 * work-item per block of WCOB output channels x one input channel
 * (dimension 0) and per kernel row ky x chunk of KXB columns (dimension 1)
 * sums over every output position, 8 columns at a time (float[8] for
 * OpenCL's float8), then each accumulator across (tt_hsum8).  Channels
 * past Cout and columns past kW are computed on clamped addresses and
 * never stored. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint dweight_offset; uint dout_offset; uint inp_offset; tt_geometry g; int row0; int rows;
} args;

void main()
{
    tt_geometry g = args.g;
    int item = int(gl_GlobalInvocationID.x), kernel_row = int(gl_GlobalInvocationID.y);
    int blocks = (g.Cout + TT_DIRECT_WCOB - 1) / TT_DIRECT_WCOB;
    int co0 = item / g.Cin * TT_DIRECT_WCOB, ci = item % g.Cin;
    int chunks = (g.KW + TT_DIRECT_KXB - 1) / TT_DIRECT_KXB;
    int ky = kernel_row / chunks, kx0 = kernel_row % chunks * TT_DIRECT_KXB;
    if (co0 >= blocks * TT_DIRECT_WCOB || ky >= g.KH) return;
    int last = min(TT_DIRECT_WCOB, g.Cout - co0) - 1;
    float acc[TT_DIRECT_WCOB][TT_DIRECT_KXB][8];
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        for (int t = 0; t < TT_DIRECT_KXB; t++)
            for (int l = 0; l < 8; l++) acc[j][t][l] = 0.0;
    for (int n = 0; n < g.N; n++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        for (int oy = args.row0; oy < min(g.OH, args.row0 + args.rows); oy++) {
            int iy = oy * g.SH - g.PH + ky * g.DH;
            if (iy < 0 || iy >= g.H) continue;
            int row = plane + iy * g.W;
            int drow = TT_AT(args.dout_offset, 4) + ((n * g.Cout + co0) * g.OH + oy) * g.OW;
            for (int ox0 = 0; ox0 < g.OW; ox0 += 8) {
                float d[TT_DIRECT_WCOB][8];
                for (int j = 0; j < TT_DIRECT_WCOB; j++) {
                    float dj[8];
                    TT_LOAD8(dj, dout, drow + min(j, last) * g.OH * g.OW, ox0, g.OW)
                    d[j] = dj;
                }
                for (int t = 0; t < TT_DIRECT_KXB; t++) {
                    float x[8];
                    TT_LOAD8(x, inp, row, ox0 - g.PW + min(kx0 + t, g.KW - 1) * g.DW, g.W)
                    for (int j = 0; j < TT_DIRECT_WCOB; j++)
                        for (int l = 0; l < 8; l++) acc[j][t][l] = fma(d[j][l], x[l], acc[j][t][l]);
                }
            }
        }
    }
    int ktaps = g.KH * g.KW;
    for (int j = 0; j <= last; j++)
        for (int t = 0; t < TT_DIRECT_KXB && kx0 + t < g.KW; t++)
            TT_B(dweight)[TT_AT(args.dweight_offset, 4) + ((co0 + j) * g.Cin + ci) * ktaps + ky * g.KW +
                    kx0 + t] += tt_hsum8(acc[j][t]);
}
