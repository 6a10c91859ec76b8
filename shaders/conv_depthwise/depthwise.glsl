/* Shared by the shaders/conv_depthwise/ shaders (opencl/conv_depthwise.cl,
 * whose header says how the work is shared; src/ops/conv_depthwise.c
 * launches them).  Include after common.glsl.
 *
 * - The OpenCL program's -D defines are specialization constants of the
 *   same names (the host passes them to every launch; the defaults here
 *   are the .cl file's).
 * - The geometry arguments N .. DW arrive as 15 ints in the push
 *   constants: one tt_geometry member `g` (Cin = Cout = C).
 * - Indices are int, as in the OpenCL kernels.
 */

/* the weight gradient's work-group and the taps it sums */
layout(constant_id = 3) const int TT_DW_WG = 64;
layout(constant_id = 4) const int TT_DW_TAPS = 9;
/* N, Cin, H, W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW */
struct tt_geometry {
    int N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
};

/* The first tap k in [0, K) whose position pos + pad - k dil is a multiple
 * s o of the stride (o: the output, possibly outside the plane), or K;
 * period: the taps from one such to the next; step: how far o moves in a
 * period (opencl/conv_depthwise.cl's tt_dw_first_tap). */
int tt_dw_first_tap(int pos, int pad, int dil, int s, int K, out int o, out int period,
                    out int step)
{
    int k = 0, q = (pos + pad) / s, r = (pos + pad) % s; /* pos + pad - k dil = q s + r */
    int dq = dil / s, dr = dil % s;
    while (r != 0 && k < K) {
        q -= dq;
        r -= dr;
        if (r < 0) {
            r += s;
            q--;
        }
        k++;
    }
    int p = 1;
    while ((p * dil) % s != 0) p++;
    o = q;
    period = p;
    step = p * dil / s;
    return k;
}
