/* conv_igemm/conv_igemm_backward_data: dinp (N, Cin, H, W) += conv2d's
 * input gradient of dout (N, Cout, OH, OW) at the pixels (ry + qy SH,
 * rx + qx SW) of one stride phase (opencl/conv_igemm.cl; arguments dinp,
 * dout, weight, N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH,
 * DW, G, ry, rx, k_from, k_to, then the two local tiles): the sums over
 * the phase's K in [k_from, k_to) only.  global (ceil(N QH QW / BN) NT,
 * ceil(Cin/G / BM) MT, G). */
#version 450
#include "common.glsl"
#include "conv_igemm/igemm.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint weight_offset;
    int N; int Cin; int H; int W; int Cout; int OH; int OW; int KH; int KW;
    int SH; int SW; int PH; int PW; int DH; int DW; int G; int ry; int rx; int k_from; int k_to;
} args;

#define IG_DST(i) TT_B(dinp)[i]
#define IG_SRC(i) TT_B(dout)[i]
#define IG_WEIGHT(i) TT_B(weight)[i]
#define IG_BIAS(i) TT_B(weight)[i]
#include "conv_igemm/igemm_product.glsl"

/* The taps of a kernel of `size` that reach phase r along one axis: the
 * first, their step, and their count (0: none). */
int phase_taps(int r, int stride, int pad, int dilation, int size, out int first, out int step)
{
    first = 0;
    while (first < size && abs(r + pad - first * dilation) % stride != 0) first++;
    step = 1;
    while ((step * dilation) % stride != 0) step++;
    return first < size ? (size - 1 - first) / step + 1 : 0;
}

/* a / b for b > 0 that divides a, of either sign. */
int exact_div(int a, int b) { return a >= 0 ? a / b : -(-a / b); }

void main()
{
    int cin_g = args.Cin / args.G, cout_g = args.Cout / args.G, khw = args.KH * args.KW;
    int ky0, kx0, sy, sx;
    int taps_y = phase_taps(args.ry, args.SH, args.PH, args.DH, args.KH, ky0, sy);
    int taps_x = phase_taps(args.rx, args.SW, args.PW, args.DW, args.KW, kx0, sx);
    ig_product p = ig_product(
        args.N, cin_g, cout_g, taps_y, taps_x, (args.H - args.ry + args.SH - 1) / args.SH,
        (args.W - args.rx + args.SW - 1) / args.SW,
        args.Cout, args.OH, args.OW, args.Cin, args.H, args.W,
        1, 1, exact_div(args.ry + args.PH - ky0 * args.DH, args.SH),
        exact_div(args.rx + args.PW - kx0 * args.DW, args.SW), -(sy * args.DH / args.SH),
        -(sx * args.DW / args.SW),
        args.SH, args.SW, args.ry, args.rx,
        cout_g * cin_g * khw, khw, cin_g * khw, args.KW, ky0, kx0, sy, sx);
    ig_product_tile(p, TT_AT(args.dinp_offset, 4), TT_AT(args.dout_offset, 4),
                    TT_AT(args.weight_offset, 4), 0, false, true, args.k_from, args.k_to);
}
