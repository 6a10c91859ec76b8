/* conv_igemm/conv_igemm_backward_weight: slice s of the weight gradient's
 * pixels (group id z = s G + g): part[s Cout K + (g Cout/G + co) K + k]
 * (+= when accumulate, else =) the sum over the slice's pixels q = (n, oy,
 * ox) of dout[n, g Cout/G + co, oy, ox] times the input under tap k = (ci,
 * ky, kx) (opencl/conv_igemm.cl; arguments part, dout, inp, slice_len,
 * accumulate, N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW,
 * G, q_from, q_to, then the two local tiles): of each slice the pixels
 * [q_from, q_to) only.  global (ceil(K / BN) NT, ceil(Cout/G / BM) MT,
 * slices G). */
#version 450
#include "common.glsl"
#include "conv_igemm/igemm.glsl"

TT_BUFFER(0, float, part);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint part_offset; uint dout_offset; uint inp_offset; int slice_len; int accumulate;
    int N; int Cin; int H; int W; int Cout; int OH; int OW; int KH; int KW;
    int SH; int SW; int PH; int PW; int DH; int DW; int G; int q_from; int q_to;
} args;

void main()
{
    ig_group w = ig_group_of();
    int G = args.G, H = args.H, W = args.W, OH = args.OH, OW = args.OW;
    int g = int(gl_WorkGroupID.z) % G, s = int(gl_WorkGroupID.z) / G;
    int m0 = int(gl_WorkGroupID.y) * w.bm;
    int cin_g = args.Cin / G, cout_g = args.Cout / G, khw = args.KH * args.KW, K = cin_g * khw;
    int in_plane = H * W, out_plane = OH * OW;
    int q_begin = s * args.slice_len + args.q_from;
    int q_end = min(s * args.slice_len + min(args.q_to, args.slice_len), args.N * out_plane);
    int dout0 = TT_AT(args.dout_offset, 4), inp0 = TT_AT(args.inp_offset, 4);
    /* this invocation's columns k = (ci, ky, kx) */
    int k_first = int(gl_WorkGroupID.x) * w.bn + w.tx * TT_IG_RN;
    int col_at[IG_MAX_RN], col_y[IG_MAX_RN], col_x[IG_MAX_RN];
    for (int j = 0; j < TT_IG_RN; j++) {
        ig_idx3 t = ig_split(k_first + j, args.KH, args.KW);
        col_at[j] = inp0 + (g * cin_g + t.c) * in_plane;
        col_y[j] = k_first + j < K ? t.y * args.DH - args.PH : IG_OUTSIDE;
        col_x[j] = t.x * args.DW - args.PW;
    }
    float acc[IG_MAX_RM][IG_MAX_RN];
    for (int i = 0; i < IG_MAX_RM; i++)
        for (int j = 0; j < IG_MAX_RN; j++) acc[i][j] = 0.0;
    int a_step = w.wg >= TT_IG_BK ? w.wg / TT_IG_BK : 1;
    ig_idx3 a_next = ig_split(w.wg, OH, OW), b_next = ig_split(w.mt, OH, OW);
    for (int q0 = q_begin; q0 < q_end; q0 += TT_IG_BK) {
        /* A: dout rows of the group at the chunk's pixels */
        ig_idx3 u = ig_split(q0 + w.lid % TT_IG_BK, OH, OW);
        for (int qq = w.lid % TT_IG_BK; qq < TT_IG_BK; qq += w.wg) {
            int at = dout0 + (u.c * args.Cout + g * cout_g) * out_plane + u.y * OW + u.x;
            bool inside = q0 + qq < q_end;
            for (int mm = w.lid / TT_IG_BK; mm < w.bm; mm += a_step)
                tile_a[qq * w.bm + mm] =
                    inside && m0 + mm < cout_g ? TT_B(dout)[at + (m0 + mm) * out_plane] : 0.0;
            u = ig_add(u, a_next, OH, OW);
        }
        /* B: the columns gathered from the input at the chunk's pixels */
        u = ig_split(q0 + w.ty, OH, OW);
        for (int qq = w.ty; qq < TT_IG_BK; qq += w.mt) {
            int y0 = q0 + qq < q_end ? u.y * args.SH : IG_OUTSIDE, x0 = u.x * args.SW;
            int at = u.c * args.Cin * in_plane, row = qq * w.bn + w.tx * TT_IG_RN;
            for (int j = 0; j < TT_IG_RN; j++) {
                int y = y0 + col_y[j], x = x0 + col_x[j];
                tile_b[row + j] = y >= 0 && y < H && x >= 0 && x < W
                                      ? TT_B(inp)[at + col_at[j] + y * W + x]
                                      : 0.0;
            }
            u = ig_add(u, b_next, OH, OW);
        }
        barrier();
        ig_multiply(acc, w);
        barrier();
    }
    int base = TT_AT(args.part_offset, 4) + s * args.Cout * K;
    for (int i = 0; i < TT_IG_RM; i++) {
        int m = m0 + w.ty * TT_IG_RM + i;
        if (m >= cout_g) break;
        int row = base + (g * cout_g + m) * K;
        for (int j = 0; j < TT_IG_RN; j++)
            if (k_first + j < K)
                TT_B(part)[row + k_first + j] =
                    (args.accumulate != 0 ? TT_B(part)[row + k_first + j] : 0.0) + acc[i][j];
    }
}
