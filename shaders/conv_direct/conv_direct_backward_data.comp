/* conv_direct/conv_direct_backward_data: dinp[n, ci, y, x] += sum over co
 * and the taps (ky, kx) whose output position oy = (y + pH - ky dH) / sH
 * (exact, in range; likewise ox) exists, of dout[n, co, oy, ox] weight[co,
 * ci, ky, kx], CIB input channels a work-item (opencl/conv_direct.cl;
 * arguments dinp, dout, weight, geometry, row0; global (W, rows, N
 * ceil(Cin / CIB)) over the rows from row0).  Control flow uniform across a row, as in the forward. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint weight_offset; tt_geometry g; int row0;
} args;

void main()
{
    tt_geometry g = args.g;
    int x_id = int(gl_GlobalInvocationID.x), y = args.row0 + int(gl_GlobalInvocationID.y);
    int x = min(x_id, g.W - 1);
    int blocks = (g.Cin + TT_DIRECT_CIB - 1) / TT_DIRECT_CIB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int ci0 = int(gl_GlobalInvocationID.z) % blocks * TT_DIRECT_CIB;
    if (y >= g.H || n >= g.N) return;
    int last = min(TT_DIRECT_CIB, g.Cin - ci0) - 1; /* uniform */
    float acc[TT_DIRECT_CIB];
    for (int j = 0; j < TT_DIRECT_CIB; j++) acc[j] = 0.0;
    int ktaps = g.KH * g.KW;
    int d0 = TT_AT(args.dout_offset, 4), w0 = TT_AT(args.weight_offset, 4);
    for (int ky = 0; ky < g.KH; ky++) {
        int ty = y + g.PH - ky * g.DH;
        if (ty < 0 || ty % g.SH != 0) continue;
        int oy = ty / g.SH;
        if (oy >= g.OH) continue;
        for (int kx = 0; kx < g.KW; kx++) {
            int tx = x + g.PW - kx * g.DW;
            bool valid = tx >= 0 && tx % g.SW == 0 && tx / g.SW < g.OW;
            int ox_safe = clamp(tx / g.SW, 0, g.OW - 1);
            int tap = ky * g.KW + kx;
            for (int co = 0; co < g.Cout; co++) {
                float v = TT_B(dout)[d0 + ((n * g.Cout + co) * g.OH + oy) * g.OW + ox_safe];
                float d = valid ? v : 0.0;
                int w = w0 + (co * g.Cin + ci0) * ktaps + tap;
                for (int j = 0; j < TT_DIRECT_CIB; j++)
                    acc[j] = fma(d, TT_B(weight)[w + min(j, last) * ktaps], acc[j]);
            }
        }
    }
    if (x_id >= g.W) return;
    for (int j = 0; j <= last; j++)
        TT_B(dinp)[TT_AT(args.dinp_offset, 4) + ((n * g.Cin + ci0 + j) * g.H + y) * g.W + x] += acc[j];
}
