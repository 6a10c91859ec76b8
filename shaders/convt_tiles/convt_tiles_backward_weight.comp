/* convt_tiles/convt_tiles_backward_weight: dweight[ci, co, t] += sum over
 * n, iy, ix of inp[n, ci, iy, ix] dout[n, co, iy KH + ky, ix KW + kx], one
 * work-group of TT_CONVT_WG per (ci, co) (opencl/convt_tiles.cl; arguments
 * dweight, dout, inp, N, Cin, H, W, Cout, row0, rows: the input rows
 * [row0, row0 + rows) of every image; global (Cin Cout WG), local (WG)).
 * Its invocations stride over the input positions, then reduce the taps in
 * shared memory by the OpenCL kernel's tree. */
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

shared float partial[TT_CONVT_TAPS * TT_CONVT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    /* a launch folded into rows may have whole groups past the end: each
     * leaves as a group, before any barrier */
    int group = tt_global_id() / TT_CONVT_WG;
    int Cout = args.Cout, W = args.W;
    if (group >= args.Cin * Cout) return;
    int ci = group / Cout, co = group % Cout;
    int OH = args.H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    int plane = args.H * W;
    int first = args.row0 * W, end = min(args.H, args.row0 + args.rows) * W;
    float acc[TT_CONVT_TAPS];
    for (int t = 0; t < TT_CONVT_TAPS; t++) acc[t] = 0.0;
    for (int n = 0; n < args.N; n++) {
        int x = TT_AT(args.inp_offset, 4) + (n * args.Cin + ci) * plane;
        int d = TT_AT(args.dout_offset, 4) + (n * Cout + co) * OH * OW;
        for (int p0 = first; p0 < end; p0 += TT_CONVT_WG) {
            int p = min(p0 + lid, end - 1); /* clamped: counted once below */
            float v = p0 + lid < end ? TT_B(inp)[x + p] : 0.0;
            int iy = p / W, ix = p % W;
            int drow = d + iy * TT_CONVT_KH * OW + ix * TT_CONVT_KW;
            for (int ky = 0; ky < TT_CONVT_KH; ky++)
                for (int kx = 0; kx < TT_CONVT_KW; kx++)
                    acc[ky * TT_CONVT_KW + kx] =
                        fma(v, TT_B(dout)[drow + ky * OW + kx], acc[ky * TT_CONVT_KW + kx]);
        }
    }
    for (int t = 0; t < TT_CONVT_TAPS; t++) partial[t * TT_CONVT_WG + lid] = acc[t];
    barrier();
    for (int step = TT_CONVT_WG / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int t = 0; t < TT_CONVT_TAPS; t++)
                partial[t * TT_CONVT_WG + lid] += partial[t * TT_CONVT_WG + lid + step];
        barrier();
    }
    int at = TT_AT(args.dweight_offset, 4) + (ci * Cout + co) * TT_CONVT_TAPS;
    for (int t = lid; t < TT_CONVT_TAPS; t += TT_CONVT_WG) TT_B(dweight)[at + t] += partial[t * TT_CONVT_WG];
}
