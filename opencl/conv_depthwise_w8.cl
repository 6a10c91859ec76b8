/*
 * Depthwise convolution for OpenCL CPUs: the DEPTHWISE_W8 row
 * (src/ops/conv_depthwise.c), the sums of conv_depthwise.cl over rows of
 * 8-wide vectors.  conv_depthwise.cl's one output a work-item keeps a GPU
 * busy; on a CPU its clamped reads become gathers and its work-groups
 * outnumber the work (1-2 GFLOP/s on EfficientNet's layers).  Here a
 * work-item takes a whole row of a plane, 8 columns at a time: a tap is a
 * vector load of the input row (every other column at stride 2) and a
 * vector fma.  Every element sums its taps in the order the scalar
 * kernels do (ky, then kx, rising), so the two agree to rounding of the
 * same terms.
 *
 * The geometry arrives as arguments (TT_GEOMETRY; Cin = Cout = C); the
 * column stride is 1 or 2 (the host runs the scalar kernels otherwise),
 * the row stride any.  Sizes the host passes as -D defines:
 *   TT_DW8_WG    the weight gradient's work-group, a power of two
 *   TT_DW8_TAPS  kernel taps a work-group of the weight gradient sums
 * No atomics: the weight gradient reduces in a fixed order.
 */
#ifndef TT_DW8_WG
#define TT_DW8_WG 16
#endif
#ifndef TT_DW8_TAPS
#define TT_DW8_TAPS 9
#endif

/* row[x0 + l s] for the 8 lanes l < lanes (s 1 or 2), 0 outside [0, w)
 * and in the lanes past `lanes`. */
TT_INLINE float8 dw8_load(__global const float *row, const int x0, const int s, const int w,
                       const int lanes)
{
    if (lanes == 8 && x0 >= 0) {
        if (s == 1 && x0 + 8 <= w) return vload8(0, row + x0);
        if (s == 2 && x0 + 16 <= w) return vload16(0, row + x0).even;
    }
    float v[8];
    for (int l = 0; l < 8; l++) {
        const int x = x0 + l * s;
        v[l] = l < lanes && x >= 0 && x < w ? row[x] : 0.0f;
    }
    return vload8(0, v);
}

/* row[x0 .. x0 + 7] = (accumulate ? row : 0) + v, the lanes below w - x0. */
TT_INLINE void dw8_store(__global float *row, const int x0, const int w, const float8 v,
                      const int accumulate)
{
    if (x0 + 8 <= w) {
        vstore8((accumulate ? vload8(0, row + x0) : (float8)0.0f) + v, 0, row + x0);
        return;
    }
    float lanes[8];
    vstore8(v, 0, lanes);
    for (int l = 0; l < 8 && x0 + l < w; l++) row[x0 + l] = (accumulate ? row[x0 + l] : 0.0f) + lanes[l];
}

/* Output row oy of image-channel nc: out = (accumulate ? out : 0) + bias +
 * the taps' sum.  global (N C, OH), rounded up. */
__kernel void conv_depthwise_w8_forward(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    const int nc = get_global_id(0), oy = get_global_id(1);
    if (nc >= N * Cout || oy >= OH) return;
    const int c = nc % Cout;
    __global const float *plane = inp + (size_t)nc * H * W;
    __global const float *w = weight + (size_t)c * KH * KW;
    __global float *orow = out + ((size_t)nc * OH + oy) * OW;
    const float b = has_bias ? bias[c] : 0.0f;
    for (int ox0 = 0; ox0 < OW; ox0 += 8) {
        const int lanes = min(8, OW - ox0);
        float8 acc = 0.0f;
        for (int ky = 0; ky < KH; ky++) {
            const int iy = oy * SH - PH + ky * DH;
            if (iy < 0 || iy >= H) continue; /* the scalar kernel adds 0 x w: the same sum */
            __global const float *row = plane + (size_t)iy * W;
            for (int kx = 0; kx < KW; kx++)
                acc = fma(dw8_load(row, ox0 * SW - PW + kx * DW, SW, W, lanes),
                          (float8)w[ky * KW + kx], acc);
        }
        if (ox0 + 8 <= OW) {
            const float8 base = accumulate ? vload8(0, orow + ox0) : (float8)0.0f;
            vstore8(base + b + acc, 0, orow + ox0);
        } else {
            float lanes_of[8];
            vstore8(acc, 0, lanes_of);
            for (int l = 0; l < lanes; l++)
                orow[ox0 + l] = (accumulate ? orow[ox0 + l] : 0.0f) + b + lanes_of[l];
        }
    }
}

/* Input row y of image-channel nc: dinp (+)= the sum over the taps (ky,
 * kx) whose output oy = (y + PH - ky DH) / SH, ox = (x + PW - kx DW) / SW
 * is exact and inside the plane, of dout[oy, ox] w[ky, kx].  At column
 * stride 2 a step takes 16 columns: the even ones read the outputs of the
 * taps of one parity, contiguous, the odd ones the other's.  global (N C,
 * H), rounded up. */
__kernel void conv_depthwise_w8_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                              TT_MEM(const float, weight), const int accumulate,
                                              TT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int nc = get_global_id(0), y = get_global_id(1);
    if (nc >= N * Cin || y >= H) return;
    const int c = nc % Cin;
    __global const float *dplane = dout + (size_t)nc * OH * OW;
    __global const float *w = weight + (size_t)c * KH * KW;
    __global float *irow = dinp + ((size_t)nc * H + y) * W;
    for (int x0 = 0; x0 < W; x0 += 8 * SW) {
        float8 even = 0.0f, odd = 0.0f; /* at stride 1, even holds the 8 columns */
        for (int ky = 0; ky < KH; ky++) {
            const int t = y + PH - ky * DH;
            if (t < 0 || t % SH) continue;
            const int oy = t / SH;
            if (oy >= OH) continue;
            __global const float *drow = dplane + (size_t)oy * OW;
            for (int kx = 0; kx < KW; kx++) {
                const int u = x0 + PW - kx * DW; /* x0's output column times SW */
                const float8 wv = (float8)w[ky * KW + kx];
                if (SW == 1) even = fma(tt_load8(drow, u, OW), wv, even);
                else if (u % 2 == 0) even = fma(tt_load8(drow, u / 2, OW), wv, even);
                else odd = fma(tt_load8(drow, (u + 1) / 2, OW), wv, odd);
            }
        }
        if (SW == 1) {
            dw8_store(irow, x0, W, even, accumulate);
        } else {
            float e[8], o[8];
            vstore8(even, 0, e);
            vstore8(odd, 0, o);
            for (int l = 0; l < 8; l++) {
                const int xe = x0 + 2 * l, xo = xe + 1;
                if (xe < W) irow[xe] = (accumulate ? irow[xe] : 0.0f) + e[l];
                if (xo < W) irow[xo] = (accumulate ? irow[xo] : 0.0f) + o[l];
            }
        }
    }
}

/* dweight[c, 0, t] += the sum over the output rows [r0, r1) of every image
 * taken as one run (row r: image r / OH, row r % OH) of dout[n, c, oy, ox]
 * inp[n, c, oy SH - PH + ky DH, ox SW - PW + kx DW] over ox, for the taps
 * t = ky KW + kx in [tap0, tap0 + TAPS).  One work-group of WG per
 * channel (dimension 0) and tap chunk (dimension 1): a work-item takes
 * every WG-th row, 8 columns a step, sums its lanes in order, then the
 * work-group sums in a fixed tree.  The host splits a long run into
 * launches (the loop limit), each adding its sum in order. */
__kernel __attribute__((reqd_work_group_size(TT_DW8_WG, 1, 1)))
void conv_depthwise_w8_backward_weight(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                       TT_MEM(const float, inp), TT_GEOMETRY, const int r0,
                                       const int r1)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    __local float partial[TT_DW8_TAPS * TT_DW8_WG];
    const int lid = get_local_id(0), c = get_group_id(0);
    const int ktaps = KH * KW, tap0 = get_group_id(1) * TT_DW8_TAPS;
    float8 acc[TT_DW8_TAPS];
    for (int t = 0; t < TT_DW8_TAPS; t++) acc[t] = 0.0f;
    for (int r = r0 + lid; r < r1; r += TT_DW8_WG) {
        const int n = r / OH, oy = r % OH;
        __global const float *drow = dout + (((size_t)n * Cout + c) * OH + oy) * OW;
        __global const float *plane = inp + ((size_t)n * Cin + c) * H * W;
        for (int ox0 = 0; ox0 < OW; ox0 += 8) {
            const int lanes = min(8, OW - ox0);
            const float8 d = dw8_load(drow, ox0, 1, OW, lanes);
            for (int t = 0; t < TT_DW8_TAPS; t++) {
                const int tap = tap0 + t, ky = tap / KW, kx = tap % KW;
                const int iy = oy * SH - PH + ky * DH;
                if (tap >= ktaps || iy < 0 || iy >= H) continue;
                acc[t] = fma(d, dw8_load(plane + (size_t)iy * W, ox0 * SW - PW + kx * DW, SW, W, lanes),
                             acc[t]);
            }
        }
    }
    for (int t = 0; t < TT_DW8_TAPS; t++) {
        const float8 a = acc[t];
        partial[t * TT_DW8_WG + lid] = ((a.s0 + a.s1) + (a.s2 + a.s3)) + ((a.s4 + a.s5) + (a.s6 + a.s7));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = TT_DW8_WG / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int t = 0; t < TT_DW8_TAPS; t++)
                partial[t * TT_DW8_WG + lid] += partial[t * TT_DW8_WG + lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = lid; t < TT_DW8_TAPS; t += TT_DW8_WG)
        if (tap0 + t < ktaps) dweight[(size_t)c * ktaps + tap0 + t] += partial[t * TT_DW8_WG];
}
