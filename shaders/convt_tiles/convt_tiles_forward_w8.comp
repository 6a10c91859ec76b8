/* convt_tiles/convt_tiles_forward_w8: convt_tiles_forward for CPUs when the
 * kernel is 2 wide, 8 neighbouring input columns an invocation
 * (opencl/convt_tiles.cl; arguments out, inp, weight, bias, has_bias, N,
 * Cin, H, W, Cout; global (ceil(W / 8), H, N ceil(Cout / COB))).  Column
 * x0 + l of the input feeds output columns 2 (x0 + l) + kx; the OpenCL
 * kernel's float8 lanes are the arrays' last index here.  Lanes past the
 * edge load 0 and are not stored. */
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

/* acc[((j KH + ky) 2 + kx) 8 + l]: channel co0 + j, tap (ky, kx), column x0 + l */
const int ACC = TT_CONVT_COB * TT_CONVT_KH * 2 * 8;

void main()
{
    int x0 = int(gl_GlobalInvocationID.x) * 8, iy = int(gl_GlobalInvocationID.y);
    int W = args.W, H = args.H, Cout = args.Cout;
    int blocks = (Cout + TT_CONVT_COB - 1) / TT_CONVT_COB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int co0 = int(gl_GlobalInvocationID.z) % blocks * TT_CONVT_COB;
    if (x0 >= W || iy >= H || n >= args.N) return;
    int last = min(TT_CONVT_COB, Cout - co0) - 1;
    int columns = min(8, W - x0);
    float acc[ACC];
    for (int a = 0; a < ACC; a++) acc[a] = 0.0;
    int plane = H * W;
    int x = TT_AT(args.inp_offset, 4) + n * args.Cin * plane + iy * W + x0;
    int w0 = TT_AT(args.weight_offset, 4) + co0 * TT_CONVT_KH * 2;
    for (int ci = 0; ci < args.Cin; ci++) {
        float v[8];
        for (int l = 0; l < 8; l++) v[l] = l < columns ? TT_B(inp)[x + ci * plane + l] : 0.0;
        int w = w0 + ci * Cout * TT_CONVT_KH * 2;
        for (int j = 0; j < TT_CONVT_COB; j++)
            for (int t = 0; t < TT_CONVT_KH * 2; t++) {
                float s = TT_B(weight)[w + min(j, last) * TT_CONVT_KH * 2 + t];
                int a = (j * TT_CONVT_KH * 2 + t) * 8;
                for (int l = 0; l < 8; l++) acc[a + l] = fma(v[l], s, acc[a + l]);
            }
    }
    int OH = H * TT_CONVT_KH, OW = W * 2;
    for (int j = 0; j < TT_CONVT_COB; j++) {
        if (j > last) continue; /* constant bounds: acc indexed by constants once unrolled */
        float b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j] : 0.0;
        int o = TT_AT(args.out_offset, 4) + (n * Cout + co0 + j) * OH * OW + 2 * x0;
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            int row = o + (iy * TT_CONVT_KH + ky) * OW;
            int a = (j * TT_CONVT_KH + ky) * 2 * 8;
            for (int l = 0; l < 8; l++)
                if (l < columns) {
                    TT_B(outp)[row + 2 * l] = acc[a + l] + b;
                    TT_B(outp)[row + 2 * l + 1] = acc[a + 8 + l] + b;
                }
        }
    }
}
