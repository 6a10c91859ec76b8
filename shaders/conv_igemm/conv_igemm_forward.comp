/* conv_igemm/conv_igemm_forward: out (N, Cout, OH, OW) = conv(inp, weight)
 * + bias (has_bias), or out += conv (accumulate; no bias)
 * (opencl/conv_igemm.cl; arguments out, inp, weight, bias, has_bias,
 * accumulate, N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW,
 * G, k_from, k_to, then the two local tiles): the sums over K in [k_from,
 * k_to) only.  global (ceil(N OH OW / BN) NT, ceil(Cout/G / BM) MT, G). */
#version 450
#include "common.glsl"
#include "conv_igemm/igemm.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
TT_BUFFER(2, float, weight);
TT_BUFFER(3, float, bias);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; uint weight_offset; uint bias_offset;
    int has_bias; int accumulate;
    int N; int Cin; int H; int W; int Cout; int OH; int OW; int KH; int KW;
    int SH; int SW; int PH; int PW; int DH; int DW; int G; int k_from; int k_to;
} args;

#define IG_DST(i) TT_B(outp)[i]
#define IG_SRC(i) TT_B(inp)[i]
#define IG_WEIGHT(i) TT_B(weight)[i]
#define IG_BIAS(i) TT_B(bias)[i]
#include "conv_igemm/igemm_product.glsl"

void main()
{
    int cin_g = args.Cin / args.G, cout_g = args.Cout / args.G, khw = args.KH * args.KW;
    ig_product p = ig_product(
        args.N, cout_g, cin_g, args.KH, args.KW, args.OH, args.OW,
        args.Cin, args.H, args.W, args.Cout, args.OH, args.OW,
        args.SH, args.SW, -args.PH, -args.PW, args.DH, args.DW,
        1, 1, 0, 0,
        cout_g * cin_g * khw, cin_g * khw, khw, args.KW, 0, 0, 1, 1);
    ig_product_tile(p, TT_AT(args.out_offset, 4), TT_AT(args.inp_offset, 4),
                    TT_AT(args.weight_offset, 4), TT_AT(args.bias_offset, 4),
                    args.has_bias != 0, args.accumulate != 0, args.k_from, args.k_to);
}
