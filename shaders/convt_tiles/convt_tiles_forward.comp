/* convt_tiles/convt_tiles_forward: out (overwritten) = bias + the per-tap
 * products of a kernel that tiles its output, one input column and
 * TT_CONVT_COB output channels an invocation (opencl/convt_tiles.cl;
 * arguments out, inp, weight, bias, has_bias, N, Cin, H, W, Cout; global
 * (W, H, N ceil(Cout / COB))).  Columns past the width compute on a clamped
 * column and store nothing. */
#version 450
#include "common.glsl"
#include "convt_tiles/convt_tiles.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
TT_BUFFER(2, float, weight);
TT_BUFFER(3, float, bias);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; uint weight_offset; uint bias_offset; int has_bias;
    int N; int Cin; int H; int W; int Cout;
} args;

void main()
{
    int ix_id = int(gl_GlobalInvocationID.x), iy = int(gl_GlobalInvocationID.y);
    int W = args.W, H = args.H, Cout = args.Cout;
    int ix = min(ix_id, W - 1);
    int blocks = (Cout + TT_CONVT_COB - 1) / TT_CONVT_COB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int co0 = int(gl_GlobalInvocationID.z) % blocks * TT_CONVT_COB;
    if (iy >= H || n >= args.N) return;
    int last = min(TT_CONVT_COB, Cout - co0) - 1;
    float acc[TT_CONVT_COB * TT_CONVT_TAPS];
    for (int a = 0; a < TT_CONVT_COB * TT_CONVT_TAPS; a++) acc[a] = 0.0;
    int plane = H * W;
    int x = TT_AT(args.inp_offset, 4) + n * args.Cin * plane + iy * W + ix;
    int w0 = TT_AT(args.weight_offset, 4) + co0 * TT_CONVT_TAPS;
    for (int ci = 0; ci < args.Cin; ci++) {
        float v = TT_B(inp)[x + ci * plane];
        int w = w0 + ci * Cout * TT_CONVT_TAPS;
        for (int j = 0; j < TT_CONVT_COB; j++)
            for (int t = 0; t < TT_CONVT_TAPS; t++)
                acc[j * TT_CONVT_TAPS + t] =
                    fma(v, TT_B(weight)[w + min(j, last) * TT_CONVT_TAPS + t], acc[j * TT_CONVT_TAPS + t]);
    }
    if (ix_id >= W) return;
    int OH = H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    for (int j = 0; j < TT_CONVT_COB; j++) {
        if (j > last) continue; /* constant bounds: acc indexed by constants once unrolled */
        float b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j] : 0.0;
        int o = TT_AT(args.out_offset, 4) + (n * Cout + co0 + j) * OH * OW;
        for (int ky = 0; ky < TT_CONVT_KH; ky++)
            for (int kx = 0; kx < TT_CONVT_KW; kx++)
                TT_B(outp)[o + (iy * TT_CONVT_KH + ky) * OW + ix * TT_CONVT_KW + kx] =
                    b + acc[j * TT_CONVT_TAPS + ky * TT_CONVT_KW + kx];
    }
}
