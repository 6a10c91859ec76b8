/* convt_tiles/convt_tiles_backward_data_w8: convt_tiles_backward_data for
 * CPUs when the kernel is 2 wide, 8 neighbouring input columns an
 * invocation (opencl/convt_tiles.cl; arguments dinp, dout, weight, N, Cin,
 * H, W, Cout; global (ceil(W / 8), H, N ceil(Cin / CIB))).  Input column
 * x0 + l meets dout's columns 2 (x0 + l) and 2 (x0 + l) + 1 (the OpenCL
 * kernel's even and odd lanes), in that order.  Lanes past the edge load 0
 * and are not stored. */
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
    int x0 = int(gl_GlobalInvocationID.x) * 8, iy = int(gl_GlobalInvocationID.y);
    int W = args.W, H = args.H, Cin = args.Cin, Cout = args.Cout;
    int blocks = (Cin + TT_CONVT_CIB - 1) / TT_CONVT_CIB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int ci0 = int(gl_GlobalInvocationID.z) % blocks * TT_CONVT_CIB;
    if (x0 >= W || iy >= H || n >= args.N) return;
    int last = min(TT_CONVT_CIB, Cin - ci0) - 1;
    int columns = min(8, W - x0);
    int OH = H * TT_CONVT_KH, OW = W * 2;
    float acc[TT_CONVT_CIB * 8]; /* acc[j 8 + l]: channel ci0 + j, column x0 + l */
    for (int a = 0; a < TT_CONVT_CIB * 8; a++) acc[a] = 0.0;
    int d0 = TT_AT(args.dout_offset, 4) + n * Cout * OH * OW + iy * TT_CONVT_KH * OW + 2 * x0;
    int w0 = TT_AT(args.weight_offset, 4) + ci0 * Cout * TT_CONVT_KH * 2;
    for (int co = 0; co < Cout; co++)
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            float d[16];
            int row = d0 + co * OH * OW + ky * OW;
            for (int l = 0; l < 16; l++) d[l] = l < 2 * columns ? TT_B(dout)[row + l] : 0.0;
            for (int j = 0; j < TT_CONVT_CIB; j++) {
                int w = w0 + (min(j, last) * Cout + co) * TT_CONVT_KH * 2 + ky * 2;
                float w_even = TT_B(weight)[w], w_odd = TT_B(weight)[w + 1];
                for (int l = 0; l < 8; l++) {
                    acc[j * 8 + l] = fma(d[2 * l], w_even, acc[j * 8 + l]);
                    acc[j * 8 + l] = fma(d[2 * l + 1], w_odd, acc[j * 8 + l]);
                }
            }
        }
    int at = TT_AT(args.dinp_offset, 4) + ((n * Cin + ci0) * H + iy) * W + x0;
    for (int j = 0; j < TT_CONVT_CIB; j++)
        for (int l = 0; l < 8; l++)
            if (j <= last && l < columns) TT_B(dinp)[at + j * H * W + l] += acc[j * 8 + l];
}
