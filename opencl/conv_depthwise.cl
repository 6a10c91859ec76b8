/*
 * Depthwise convolution (cross-correlation, NCHW): groups = Cin = Cout, one
 * filter of kH x kW per channel, weight (C, 1, kH, kW).  Any kernel size,
 * stride, padding and dilation (the DEPTHWISE row, src/ops/conv_depthwise.c;
 * EfficientNet's 3x3 and 5x5, DeepLabV3+'s atrous 3x3).  A channel reads
 * only its own plane, so each output costs kH kW multiply-adds: the work is
 * spread over every output (or input) pixel, one a work-item, with no
 * channel blocking.
 *
 * The geometry arrives as arguments (TT_GEOMETRY: N, Cin, H, W, Cout, OH,
 * OW, kH, kW, sH, sW, pH, pW, dH, dW; Cin = Cout = C), so that a device
 * builds the program once for every layer.  Taps outside the image read a
 * clamped address and use 0, so control flow stays uniform across a row.
 *
 * Sizes the host passes as -D defines (src/ops/conv_depthwise.c), per
 * device, with these defaults:
 *   TT_DW_WG     the weight gradient's work-group, a power of two
 *   TT_DW_TAPS   kernel taps a work-group of the weight gradient sums
 * No atomics anywhere: the weight gradient reduces in a fixed order, so a
 * run gives the same bits every time.
 */
#ifndef TT_DW_WG
#define TT_DW_WG 64
#endif
#ifndef TT_DW_TAPS
#define TT_DW_TAPS 9
#endif

/* v[i] where 0 <= i < n, else 0, read at a clamped address (no branch) */
TT_INLINE float tt_dw_load(__global const float *v, const int i, const int n)
{
    const float x = v[clamp(i, 0, n - 1)];
    return i >= 0 && i < n ? x : 0.0f;
}

/* out[n, c, oy, ox] = (accumulate ? out : 0) + (bias[c] or 0) + sum over
 * ky, kx of inp[n, c, oy sH - pH + ky dH, ox sW - pW + kx dW] weight[c, 0,
 * ky, kx].  global (OW, OH, N C), rounded up to whole work-groups. */
__kernel void conv_depthwise_forward(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    const int ox = get_global_id(0), oy = get_global_id(1), nc = get_global_id(2);
    if (ox >= OW || oy >= OH || nc >= N * Cout) return;
    const int c = nc % Cout;
    __global const float *plane = inp + (size_t)nc * H * W;
    __global const float *w = weight + (size_t)c * KH * KW;
    const int ix0 = ox * SW - PW, iy0 = oy * SH - PH;
    float acc = 0.0f;
    for (int ky = 0; ky < KH; ky++) {
        const int iy = iy0 + ky * DH;
        const int row = clamp(iy, 0, H - 1) * W;
        const int row_in = iy >= 0 && iy < H;
        for (int kx = 0; kx < KW; kx++) {
            const float x = tt_dw_load(plane + row, ix0 + kx * DW, W);
            acc = fma(row_in ? x : 0.0f, w[ky * KW + kx], acc);
        }
    }
    const size_t at = ((size_t)nc * OH + oy) * OW + ox;
    float base = accumulate ? out[at] : 0.0f;
    if (has_bias) base += bias[c];
    out[at] = base + acc;
}

/* The first tap k in [0, K) whose position pos + pad - k dil is a multiple
 * s * o of the stride (o: the output, possibly outside the plane), or K;
 * *period: the taps from one such to the next (s / gcd(s, dil)); *step:
 * how far o moves in a period (period dil / s).  A few steps, no division
 * a tap: only every period-th tap of a strided convolution reads an output. */
TT_INLINE int tt_dw_first_tap(const int pos, const int pad, const int dil, const int s,
                           const int K, int *o, int *period, int *step)
{
    int k = 0, q = (pos + pad) / s, r = (pos + pad) % s; /* pos + pad - k dil = q s + r */
    const int dq = dil / s, dr = dil % s;
    while (r != 0 && k < K) {
        q -= dq, r -= dr;
        if (r < 0) r += s, q--;
        k++;
    }
    int p = 1;
    while ((p * dil) % s) p++;
    *o = q, *period = p, *step = p * dil / s;
    return k;
}

/* dinp[n, c, y, x] = (accumulate ? dinp : 0) + sum over the taps (ky, kx)
 * whose output oy = (y + pH - ky dH) / sH (exact, in [0, OH); likewise ox)
 * exists, of dout[n, c, oy, ox] weight[c, 0, ky, kx]: a gather, each input
 * summed by one work-item, over only the taps whose offset is a multiple
 * of the stride (a quarter of them at stride 2).  global (W, H, N C),
 * rounded up. */
__kernel void conv_depthwise_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                           TT_MEM(const float, weight), const int accumulate,
                                           TT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int x = get_global_id(0), y = get_global_id(1), nc = get_global_id(2);
    if (x >= W || y >= H || nc >= N * Cin) return;
    const int c = nc % Cin;
    __global const float *dplane = dout + (size_t)nc * OH * OW;
    __global const float *w = weight + (size_t)c * KH * KW;
    int oy, period_y, step_y, ox0, period_x, step_x;
    const int ky0 = tt_dw_first_tap(y, PH, DH, SH, KH, &oy, &period_y, &step_y);
    const int kx0 = tt_dw_first_tap(x, PW, DW, SW, KW, &ox0, &period_x, &step_x);
    float acc = 0.0f;
    for (int ky = ky0; ky < KH; ky += period_y, oy -= step_y) {
        const int row_in = oy >= 0 && oy < OH;
        const int row = clamp(oy, 0, OH - 1) * OW;
        int ox = ox0;
        for (int kx = kx0; kx < KW; kx += period_x, ox -= step_x) {
            const float d = dplane[row + clamp(ox, 0, OW - 1)];
            acc = fma(row_in && ox >= 0 && ox < OW ? d : 0.0f, w[ky * KW + kx], acc);
        }
    }
    const size_t at = ((size_t)nc * H + y) * W + x;
    dinp[at] = (accumulate ? dinp[at] : 0.0f) + acc;
}

/* dweight[c, 0, t] += sum over the output pixels [p0, p1) of every image
 * taken as one run (pixel p: image p / (OH OW), then row and column) of
 * dout[n, c, oy, ox] inp[n, c, oy sH - pH + ky dH, ox sW - pW + kx dW],
 * for the taps t = ky kW + kx in [tap0, tap0 + TAPS).  One work-group of
 * WG per channel (dimension 0) and tap chunk (dimension 1): its work-items
 * take every WG-th pixel, then sum their partial sums in a fixed tree in
 * local memory.  The host splits a long run into launches (the loop limit
 * of src/backend/loop_budget.h), each adding its sum in order. */
__kernel __attribute__((reqd_work_group_size(TT_DW_WG, 1, 1)))
void conv_depthwise_backward_weight(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                    TT_MEM(const float, inp), TT_GEOMETRY, const int p0,
                                    const int p1)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    __local float partial[TT_DW_TAPS * TT_DW_WG];
    const int lid = get_local_id(0), c = get_group_id(0);
    const int ktaps = KH * KW, tap0 = get_group_id(1) * TT_DW_TAPS;
    const int plane_out = OH * OW;
    float acc[TT_DW_TAPS];
    for (int t = 0; t < TT_DW_TAPS; t++) acc[t] = 0.0f;
    /* the pixel's image, row and column step by WG in that mixed radix
     * (no division a pixel) */
    const int first = p0 + lid, step_n = TT_DW_WG / plane_out;
    const int step_oy = TT_DW_WG % plane_out / OW, step_ox = TT_DW_WG % OW;
    int n = first / plane_out, oy = first % plane_out / OW, ox = first % OW;
    for (int p = first; p < p1; p += TT_DW_WG) {
        const float d = dout[((size_t)n * Cout + c) * plane_out + oy * OW + ox];
        __global const float *plane = inp + ((size_t)n * Cin + c) * H * W;
        int ky = tap0 / KW, kx = tap0 % KW; /* taps past the kernel: computed, never stored */
        for (int t = 0; t < TT_DW_TAPS; t++) {
            const int iy = oy * SH - PH + min(ky, KH - 1) * DH;
            const int ix = ox * SW - PW + kx * DW;
            if (++kx == KW) kx = 0, ky++;
            const float v = plane[clamp(iy, 0, H - 1) * W + clamp(ix, 0, W - 1)];
            acc[t] = fma(d, iy >= 0 && iy < H && ix >= 0 && ix < W ? v : 0.0f, acc[t]);
        }
        ox += step_ox;
        const int carry_x = ox >= OW;
        ox -= carry_x ? OW : 0, oy += step_oy + carry_x;
        const int carry_y = oy >= OH;
        oy -= carry_y ? OH : 0, n += step_n + carry_y;
    }
    for (int t = 0; t < TT_DW_TAPS; t++) partial[t * TT_DW_WG + lid] = acc[t];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* work-items past the run hold zeros: the tree starts above the last
     * one that summed any (uniform) */
    int top = TT_DW_WG;
    while (top / 2 >= p1 - p0 && top > 1) top /= 2;
    for (int step = top / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int t = 0; t < TT_DW_TAPS; t++)
                partial[t * TT_DW_WG + lid] += partial[t * TT_DW_WG + lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = lid; t < TT_DW_TAPS; t += TT_DW_WG)
        if (tap0 + t < ktaps) dweight[(size_t)c * ktaps + tap0 + t] += partial[t * TT_DW_WG];
}
