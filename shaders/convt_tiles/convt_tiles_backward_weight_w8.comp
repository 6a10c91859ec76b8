/* convt_tiles/convt_tiles_backward_weight_w8: convt_tiles_backward_weight
 * for CPUs when the kernel is 2 wide: one invocation per block of
 * TT_CONVT_WCIB input channels and one output channel sums over every input
 * position, 8 columns at a time, with no barrier (opencl/convt_tiles.cl;
 * arguments dweight, dout, inp, N, Cin, H, W, Cout, row0, rows: the input
 * rows [row0, row0 + rows) of every image; global
 * (ceil(Cin / WCIB) Cout)).  The OpenCL kernel's float8 accumulators hold
 * lane 2 q + kx of columns q (first half) and q + 4 (second half); here
 * acc[((j KH + ky) 2 + kx) 8 + l] holds column l of tap (ky, kx), and the
 * end sums them in that kernel's order. */
#version 450
#include "common.glsl"
#include "convt_tiles/convt_tiles.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint dweight_offset; uint dout_offset; uint inp_offset;
    int N; int Cin; int H; int W; int Cout; int row0; int rows;
} args;

const int ACC = TT_CONVT_WCIB * TT_CONVT_KH * 2 * 8;

void main()
{
    int Cin = args.Cin, H = args.H, W = args.W;
    int blocks = (Cin + TT_CONVT_WCIB - 1) / TT_CONVT_WCIB;
    int co = tt_global_id() / blocks, ci0 = tt_global_id() % blocks * TT_CONVT_WCIB;
    if (co >= args.Cout) return;
    int last = min(TT_CONVT_WCIB, Cin - ci0) - 1;
    int OH = H * TT_CONVT_KH, OW = W * 2;
    float acc[ACC];
    for (int a = 0; a < ACC; a++) acc[a] = 0.0;
    for (int n = 0; n < args.N; n++) {
        int x = TT_AT(args.inp_offset, 4) + (n * Cin + ci0) * H * W;
        int d = TT_AT(args.dout_offset, 4) + (n * args.Cout + co) * OH * OW;
        for (int iy = args.row0; iy < min(H, args.row0 + args.rows); iy++) {
            int xrow = x + iy * W, drow = d + iy * TT_CONVT_KH * OW;
            for (int x0 = 0; x0 < W; x0 += 8) {
                int columns = min(8, W - x0);
                float dd[TT_CONVT_KH * 16]; /* dout's 16 columns of each row ky */
                for (int ky = 0; ky < TT_CONVT_KH; ky++)
                    for (int l = 0; l < 16; l++)
                        dd[ky * 16 + l] = l < 2 * columns ? TT_B(dout)[drow + ky * OW + 2 * x0 + l] : 0.0;
                for (int j = 0; j < TT_CONVT_WCIB; j++) {
                    float v[8];
                    int at = xrow + min(j, last) * H * W + x0;
                    for (int l = 0; l < 8; l++) v[l] = l < columns ? TT_B(inp)[at + l] : 0.0;
                    for (int ky = 0; ky < TT_CONVT_KH; ky++)
                        for (int kx = 0; kx < 2; kx++) {
                            int a = ((j * TT_CONVT_KH + ky) * 2 + kx) * 8;
                            for (int l = 0; l < 8; l++)
                                acc[a + l] = fma(v[l], dd[ky * 16 + 2 * l + kx], acc[a + l]);
                        }
                }
            }
        }
    }
    for (int j = 0; j < TT_CONVT_WCIB; j++)
        for (int ky = 0; ky < TT_CONVT_KH; ky++)
            for (int kx = 0; kx < 2; kx++) {
                int a = ((j * TT_CONVT_KH + ky) * 2 + kx) * 8;
                float s0 = acc[a] + acc[a + 4], s1 = acc[a + 1] + acc[a + 5];
                float s2 = acc[a + 2] + acc[a + 6], s3 = acc[a + 3] + acc[a + 7];
                int w = TT_AT(args.dweight_offset, 4) + ((ci0 + j) * args.Cout + co) * TT_CONVT_KH * 2;
                if (j <= last) TT_B(dweight)[w + ky * 2 + kx] += s0 + s1 + s2 + s3;
            }
}
