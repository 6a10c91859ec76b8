/* convt_tiles/convt_tiles_backward_data: dinp[n, ci, iy, ix] += sum over co
 * and the taps of dout[n, co, iy KH + ky, ix KW + kx] weight[ci, co, ky, kx],
 * TT_CONVT_CIB input channels an invocation (opencl/convt_tiles.cl;
 * arguments dinp, dout, weight, N, Cin, H, W, Cout; global
 * (W, H, N ceil(Cin / CIB))). */
#version 450
#include "common.glsl"
#include "convt_tiles/convt_tiles.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint weight_offset;
    int N; int Cin; int H; int W; int Cout;
} args;

void main()
{
    int ix_id = int(gl_GlobalInvocationID.x), iy = int(gl_GlobalInvocationID.y);
    int W = args.W, H = args.H, Cin = args.Cin, Cout = args.Cout;
    int ix = min(ix_id, W - 1);
    int blocks = (Cin + TT_CONVT_CIB - 1) / TT_CONVT_CIB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int ci0 = int(gl_GlobalInvocationID.z) % blocks * TT_CONVT_CIB;
    if (iy >= H || n >= args.N) return;
    int last = min(TT_CONVT_CIB, Cin - ci0) - 1;
    int OH = H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    float acc[TT_CONVT_CIB];
    for (int j = 0; j < TT_CONVT_CIB; j++) acc[j] = 0.0;
    int d0 = TT_AT(args.dout_offset, 4) + n * Cout * OH * OW + iy * TT_CONVT_KH * OW +
             ix * TT_CONVT_KW;
    int w0 = TT_AT(args.weight_offset, 4);
    for (int co = 0; co < Cout; co++) {
        float d[TT_CONVT_TAPS];
        for (int ky = 0; ky < TT_CONVT_KH; ky++)
            for (int kx = 0; kx < TT_CONVT_KW; kx++)
                d[ky * TT_CONVT_KW + kx] = TT_B(dout)[d0 + co * OH * OW + ky * OW + kx];
        for (int j = 0; j < TT_CONVT_CIB; j++) {
            int w = w0 + ((ci0 + min(j, last)) * Cout + co) * TT_CONVT_TAPS;
            for (int t = 0; t < TT_CONVT_TAPS; t++) acc[j] = fma(d[t], TT_B(weight)[w + t], acc[j]);
        }
    }
    if (ix_id >= W) return;
    int at = TT_AT(args.dinp_offset, 4) + ((n * Cin + ci0) * H + iy) * W + ix;
    for (int j = 0; j < TT_CONVT_CIB; j++)
        if (j <= last) TT_B(dinp)[at + j * H * W] += acc[j];
}
