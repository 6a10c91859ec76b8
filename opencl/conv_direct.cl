/*
 * Direct convolution (cross-correlation, NCHW, groups = 1) for small channel
 * counts: no columns, no GEMM.  Any kernel size, stride, padding, dilation.
 * One source for the DIRECT rows (src/ops/conv_direct.c), each direction
 * once, with the vector width a define:
 *
 *   TT_DIRECT_VW 1  the program conv_direct: one column a work-item; work-
 *                   items run along the output width (dimension 0), so
 *                   neighbours read neighbouring addresses (GPUs coalesce)
 *   TT_DIRECT_VW 8  the program conv_direct_w8 (this source, built with the
 *                   DIRECT_W8 row's name; OpenCL's alone): 8 neighbouring
 *                   columns a work-item as one float8, stride 1 along W, so
 *                   that a CPU's SIMD units are used whether or not the
 *                   runtime vectorises across work-items
 *
 * Each work-item keeps a block of output (or input) channels in registers,
 * so one input load feeds several multiply-adds.  Columns outside the
 * image (padding, the ragged right edge) load 0 and are not stored
 * (tt_loadv / tt_storev).  The weight gradient sums over every output
 * position, which the two widths do in two ways: a work-group's tree in
 * local memory (1), a work-item's own run with no barrier (8: on PoCL,
 * values live across a barrier go through memory).
 *
 * The geometry arrives as one int array-like list of arguments:
 *   N, Cin, H, W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW
 *
 * Sizes the host passes to every build as -D defines (src/ops/conv_direct.c,
 * params_of); there are no defaults here, so nothing on the host mirrors
 * this file:
 *   TT_DIRECT_VW     columns a work-item: 1 or 8
 *   TT_DIRECT_COB    output channels per work-item (forward)
 *   TT_DIRECT_CIB    input channels per work-item (backward data)
 *   TT_DIRECT_WCOB   output channels per work-group or work-item (backward weight)
 * and for width 1:
 *   TT_DIRECT_TAPS   kernel taps per work-group (backward weight)
 *   TT_DIRECT_WG     work-group of backward weight; a power of two, per device
 *   TT_DIRECT_TW     tiled forward: output tile width = work-group dimension 0
 *   TT_DIRECT_TH     tiled forward: output tile height = work-group dimension 1
 * for width 8:
 *   TT_DIRECT_KXB    kernel columns per work-item (backward weight); 1 for 1x1
 * The 16-wide 3x3 and 7x7 kernels are conv_direct_w16.cl's: padded copies
 * in bands and a blocking of their own, another algorithm (DIRECT_W16).
 */
#if !defined(TT_DIRECT_VW) || !defined(TT_DIRECT_COB) || !defined(TT_DIRECT_CIB) || \
    !defined(TT_DIRECT_WCOB)
#error "conv_direct.cl: every TT_DIRECT_* size comes from the host (src/ops/conv_direct.c)"
#endif

#if TT_DIRECT_VW == 1
#if !defined(TT_DIRECT_TAPS) || !defined(TT_DIRECT_WG) || !defined(TT_DIRECT_TW) || \
    !defined(TT_DIRECT_TH)
#error "conv_direct.cl: width 1 takes TT_DIRECT_TAPS, _WG, _TW and _TH from the host"
#endif
typedef float floatv;
#define TT_SPLAT(s) (s)
/* row[x], 0 outside [0, w) (read at a clamped address: no branch) */
TT_INLINE float tt_loadv(__global const float *row, const int x, const int w)
{
    const float v = row[clamp(x, 0, w - 1)];
    return x >= 0 && x < w ? v : 0.0f;
}
/* row[x] (+)= v where x < w */
TT_INLINE void tt_storev(__global float *row, const int x, const int w, const float v,
                      const int accumulate)
{
    if (x < w) row[x] = (accumulate ? row[x] : 0.0f) + v;
}
#elif TT_DIRECT_VW == 8
#if !defined(TT_DIRECT_KXB)
#error "conv_direct.cl: width 8 takes TT_DIRECT_KXB from the host"
#endif
typedef float8 floatv;
#define TT_SPLAT(s) ((float8)(s))
#define tt_loadv tt_load8
#define tt_storev tt_store8
#else
#error "conv_direct.cl: TT_DIRECT_VW is 1 or 8"
#endif

/* out[n, co, oy, ox] = (accumulate ? out : 0) + (bias[co] or 0) + sum over
 * ci, ky, kx of inp[n, ci, oy sH - pH + ky dH, ox sW - pW + kx dW]
 * weight[co, ci, ky, kx], VW columns from ox0 (sW 1 where VW is 8).
 * global (ceil(OW / VW), rows, N * ceil(Cout / COB)): the output rows
 * [row0, row0 + rows), a band of a launch the host cut for a GPU's
 * watchdog (device_traits.h dispatch_flops). */
__kernel void conv_direct_forward(TT_FORWARD_ARGS, const int row0)
{
    TT_FORWARD_PTRS;
    const int ox0 = get_global_id(0) * TT_DIRECT_VW, oy = row0 + get_global_id(1);
    const int blocks = (Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_DIRECT_COB;
    if (ox0 >= OW || oy >= OH || n >= N) return;
    const int last = min(TT_DIRECT_COB, Cout - co0) - 1;
    floatv acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = TT_SPLAT(0.0f);
    const int ktaps = KH * KW;
    const size_t wstride = (size_t)Cin * ktaps;
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        __global const float *wci = weight + ((size_t)co0 * Cin + ci) * ktaps;
        for (int ky = 0; ky < KH; ky++) {
            const int iy = oy * SH - PH + ky * DH;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KW; kx++) {
                const floatv x = tt_loadv(plane + iy * W, ox0 * SW - PW + kx * DW, W);
                const int tap = ky * KW + kx;
                for (int j = 0; j < TT_DIRECT_COB; j++)
                    acc[j] = fma(x, TT_SPLAT(wci[min(j, last) * wstride + tap]), acc[j]);
            }
        }
    }
    for (int j = 0; j <= last; j++) {
        __global float *row = out + (((size_t)n * Cout + co0 + j) * OH + oy) * OW;
        const floatv b = TT_SPLAT(has_bias ? bias[co0 + j] : 0.0f);
        tt_storev(row, ox0, OW, acc[j] + b, accumulate);
    }
}

/* dinp[n, ci, y, x] += sum over co and the taps (ky, kx) whose output
 * position oy = (y + pH - ky dH) / sH (exact, in range; likewise ox) exists,
 * of dout[n, co, oy, ox] weight[co, ci, ky, kx], VW columns from x0 (sW 1
 * where VW is 8).  global (ceil(W / VW), rows, N * ceil(Cin / CIB)): the
 * input rows [row0, row0 + rows). */
__kernel void conv_direct_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                        TT_MEM(const float, weight), TT_GEOMETRY, const int row0)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int x0 = get_global_id(0) * TT_DIRECT_VW, y = row0 + get_global_id(1);
    const int blocks = (Cin + TT_DIRECT_CIB - 1) / TT_DIRECT_CIB;
    const int n = get_global_id(2) / blocks, ci0 = get_global_id(2) % blocks * TT_DIRECT_CIB;
    if (x0 >= W || y >= H || n >= N) return;
    const int last = min(TT_DIRECT_CIB, Cin - ci0) - 1;
    floatv acc[TT_DIRECT_CIB];
    for (int j = 0; j < TT_DIRECT_CIB; j++) acc[j] = TT_SPLAT(0.0f);
    const int ktaps = KH * KW;
    for (int ky = 0; ky < KH; ky++) {
        const int ty = y + PH - ky * DH;
        if (ty < 0 || ty % SH) continue;
        const int oy = ty / SH;
        if (oy >= OH) continue;
        for (int kx = 0; kx < KW; kx++) {
            const int tx = x0 + PW - kx * DW; /* sW times the output column, where it is one */
            if (tx % SW) continue;
            const int tap = ky * KW + kx;
            for (int co = 0; co < Cout; co++) {
                const floatv d =
                    tt_loadv(dout + (((size_t)n * Cout + co) * OH + oy) * OW, tx / SW, OW);
                __global const float *w = weight + ((size_t)co * Cin + ci0) * ktaps + tap;
                for (int j = 0; j < TT_DIRECT_CIB; j++)
                    acc[j] = fma(d, TT_SPLAT(w[min(j, last) * ktaps]), acc[j]);
            }
        }
    }
    for (int j = 0; j <= last; j++)
        tt_storev(dinp + (((size_t)n * Cin + ci0 + j) * H + y) * W, x0, W, acc[j], 1);
}

#if TT_DIRECT_VW == 1
/* The same, with the input tile of a (TW x TH) block of outputs and the
 * block's weights staged in local memory, one input channel at a time (for
 * GPUs, where this saves global reads).  `tile` holds
 * ((TH-1) sH + (kH-1) dH + 1) x ((TW-1) sW + (kW-1) dW + 1) floats and
 * `wtile` COB * kH * kW; work-group (TW, TH, 1), global rounded up; the
 * rows from row0, a multiple of TH (whole tiles: no row twice). */
__kernel __attribute__((reqd_work_group_size(TT_DIRECT_TW, TT_DIRECT_TH, 1)))
void conv_direct_forward_tiled(TT_FORWARD_ARGS, const int row0, __local float *tile,
                               __local float *wtile)
{
    TT_FORWARD_PTRS;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int ox = get_global_id(0), oy = row0 + get_global_id(1);
    const int blocks = (Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_DIRECT_COB;
    const int tile_w = (TT_DIRECT_TW - 1) * SW + (KW - 1) * DW + 1;
    const int tile_h = (TT_DIRECT_TH - 1) * SH + (KH - 1) * DH + 1;
    const int y0 = (row0 + get_group_id(1) * TT_DIRECT_TH) * SH - PH;
    const int x0 = get_group_id(0) * TT_DIRECT_TW * SW - PW;
    const int ktaps = KH * KW, lid = ly * TT_DIRECT_TW + lx;
    const int wg = TT_DIRECT_TW * TT_DIRECT_TH;
    float acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = 0.0f;
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = lid; i < tile_h * tile_w; i += wg) {
            const int iy = y0 + i / tile_w, ix = x0 + i % tile_w;
            tile[i] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? plane[iy * W + ix] : 0.0f;
        }
        for (int i = lid; i < TT_DIRECT_COB * ktaps; i += wg) {
            const int j = i / ktaps;
            wtile[i] = co0 + j < Cout ? weight[((size_t)(co0 + j) * Cin + ci) * ktaps + i % ktaps]
                                      : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int ky = 0; ky < KH; ky++)
            for (int kx = 0; kx < KW; kx++) {
                const float x = tile[(ly * SH + ky * DH) * tile_w + lx * SW + kx * DW];
                for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] += x * wtile[j * ktaps + ky * KW + kx];
            }
    }
    if (ox >= OW || oy >= OH || n >= N) return;
    for (int j = 0; j < TT_DIRECT_COB && co0 + j < Cout; j++) {
        const size_t at = (((size_t)n * Cout + co0 + j) * OH + oy) * OW + ox;
        float base = accumulate ? out[at] : 0.0f;
        if (has_bias) base += bias[co0 + j];
        out[at] = base + acc[j];
    }
}

/* dweight[co, ci, t] += sum over n, oy, ox of dout[n, co, oy, ox] *
 * inp[n, ci, oy sH - pH + ky dH, ox sW - pW + kx dW] for the taps
 * t = ky kW + kx in [tap0, tap0 + TAPS) and WCOB output channels co.  One
 * work-group of WG per ci (dimension 0), tap chunk (dimension 1) and
 * output-channel block (dimension 2: Vulkan's shader of the same kernel
 * may not have 65536 groups in one dimension, as 512 x 512 channels would
 * in one); its work-items run along the rows' pixels of every image
 * (each input load feeds WCOB products), then reduce in local memory.  Only the output rows
 * [row0, row0 + rows) of every image: the host splits a long sum
 * (src/ops/conv_direct.c keeps a loop under TT_LOOP_BUDGET). */
__kernel __attribute__((reqd_work_group_size(TT_DIRECT_WG, 1, 1)))
void conv_direct_backward_weight(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                 TT_MEM(const float, inp), TT_GEOMETRY, const int row0,
                                 const int rows)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    __local float partial[TT_DIRECT_WCOB * TT_DIRECT_TAPS * TT_DIRECT_WG];
    const int lid = get_local_id(0);
    const int co0 = get_group_id(2) * TT_DIRECT_WCOB, ci = get_group_id(0);
    const int ktaps = KH * KW, tap0 = get_group_id(1) * TT_DIRECT_TAPS;
    const int ky0 = tap0 / KW, kx0 = tap0 % KW;
    const int last = min(TT_DIRECT_WCOB, Cout - co0) - 1; /* uniform */
    float acc[TT_DIRECT_WCOB][TT_DIRECT_TAPS];
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        for (int t = 0; t < TT_DIRECT_TAPS; t++) acc[j][t] = 0.0f;
    /* control flow uniform across the row (clamped addresses, masked values) */
    /* the work-items walk the pixels of the rows of every image as one
     * run, so that small planes and batches still use every work-item */
    const int per_image = (min(OH, row0 + rows) - row0) * OW, pixels = N * per_image;
    for (int p0 = 0; p0 < pixels; p0 += TT_DIRECT_WG) {
        const int p = min(p0 + lid, pixels - 1), n = p / per_image, q = p % per_image;
        const int oy = row0 + q / OW, ox = q % OW;
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        __global const float *dplane = dout + (((size_t)n * Cout + co0) * OH + row0) * OW;
        float d[TT_DIRECT_WCOB];
        for (int j = 0; j < TT_DIRECT_WCOB; j++) {
            const float dv = dplane[(size_t)min(j, last) * OH * OW + q];
            d[j] = p0 + lid < pixels ? dv : 0.0f;
        }
        int ky = ky0, kx = kx0; /* taps past the kernel: computed, never stored */
        for (int t = 0; t < TT_DIRECT_TAPS; t++) {
            const int iy = oy * SH - PH + min(ky, KH - 1) * DH;
            const int ix = ox * SW - PW + kx * DW;
            if (++kx == KW) kx = 0, ky++;
            const float v = plane[clamp(iy, 0, H - 1) * W + clamp(ix, 0, W - 1)];
            const float x = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? v : 0.0f;
            for (int j = 0; j < TT_DIRECT_WCOB; j++) acc[j][t] = fma(d[j], x, acc[j][t]);
        }
    }
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        for (int t = 0; t < TT_DIRECT_TAPS; t++)
            partial[(j * TT_DIRECT_TAPS + t) * TT_DIRECT_WG + lid] = acc[j][t];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* work-items past the pixels hold zeros: the tree starts above the last
     * one that summed any (uniform) */
    int top = TT_DIRECT_WG;
    while (top / 2 >= pixels && top > 1) top /= 2;
    for (int step = top / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int i = 0; i < TT_DIRECT_WCOB * TT_DIRECT_TAPS; i++)
                partial[i * TT_DIRECT_WG + lid] += partial[i * TT_DIRECT_WG + lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = lid; i < TT_DIRECT_WCOB * TT_DIRECT_TAPS; i += TT_DIRECT_WG) {
        const int j = i / TT_DIRECT_TAPS, t = i % TT_DIRECT_TAPS;
        if (j <= last && tap0 + t < ktaps)
            dweight[((size_t)(co0 + j) * Cin + ci) * ktaps + tap0 + t] += partial[i * TT_DIRECT_WG];
    }
}
#endif

#if TT_DIRECT_VW == 8
/* conv_direct_backward_weight 8 columns at a time; sW must be 1.  One work-item per
 * block of WCOB output channels x one input channel (dimension 0) and per
 * kernel row ky x chunk of 3 columns kx (dimension 1) sums over every output
 * position, 8 columns at a time: each row of dout loaded for WCOB channels
 * and each shifted input row feed WCOB x 3 multiply-adds (12 float8
 * accumulators), and no barrier: on PoCL values live across a barrier go
 * through memory, which costs more than a work-group reduction brings on a
 * CPU.  Channels past Cout and columns past kW are computed on clamped
 * addresses and never stored.  Rows [row0, row0 + rows) as
 * conv_direct_backward_weight. */
__kernel void conv_direct_backward_weight_w8(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                             TT_MEM(const float, inp), TT_GEOMETRY, const int row0,
                                             const int rows)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    const int blocks = (Cout + TT_DIRECT_WCOB - 1) / TT_DIRECT_WCOB;
    const int co0 = get_global_id(0) / Cin * TT_DIRECT_WCOB, ci = get_global_id(0) % Cin;
    const int chunks = (KW + TT_DIRECT_KXB - 1) / TT_DIRECT_KXB;
    const int ky = get_global_id(1) / chunks, kx0 = get_global_id(1) % chunks * TT_DIRECT_KXB;
    if (co0 >= blocks * TT_DIRECT_WCOB || ky >= KH) return;
    const int last = min(TT_DIRECT_WCOB, Cout - co0) - 1;
    float8 acc[TT_DIRECT_WCOB][TT_DIRECT_KXB];
    TT_UNROLL
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        TT_UNROLL
        for (int t = 0; t < TT_DIRECT_KXB; t++) acc[j][t] = (float8)(0.0f);
    for (int n = 0; n < N; n++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        for (int oy = row0; oy < min(OH, row0 + rows); oy++) {
            const int iy = oy * SH - PH + ky * DH;
            if (iy < 0 || iy >= H) continue;
            __global const float *row = plane + iy * W;
            __global const float *drow = dout + (((size_t)n * Cout + co0) * OH + oy) * OW;
            /* plain loads where every lane is inside, zero-padded ones at the borders */
#define WEIGHT_COLUMNS(LOAD)                                                                 \
    {                                                                                        \
        float8 d[TT_DIRECT_WCOB];                                                            \
        TT_UNROLL                                                  \
        for (int j = 0; j < TT_DIRECT_WCOB; j++)                                             \
            d[j] = LOAD(drow + (size_t)min(j, last) * OH * OW, ox0, OW);                     \
        TT_UNROLL                                                  \
        for (int t = 0; t < TT_DIRECT_KXB; t++) {                                            \
            const float8 x = LOAD(row, ox0 - PW + min(kx0 + t, KW - 1) * DW, W);             \
            TT_UNROLL                                              \
            for (int j = 0; j < TT_DIRECT_WCOB; j++) acc[j][t] = fma(d[j], x, acc[j][t]);    \
        }                                                                                    \
    }
#define PLAIN_LOAD8(row, x0, w) vload8(0, (row) + (x0))
            for (int ox0 = 0; ox0 < OW; ox0 += 8) {
                if (ox0 >= PW && ox0 - PW + (KW - 1) * DW + 8 <= W && ox0 + 8 <= OW)
                    WEIGHT_COLUMNS(PLAIN_LOAD8)
                else
                    WEIGHT_COLUMNS(tt_load8)
            }
#undef PLAIN_LOAD8
#undef WEIGHT_COLUMNS
        }
    }
    const int ktaps = KH * KW;
    for (int j = 0; j <= last; j++)
        for (int t = 0; t < TT_DIRECT_KXB && kx0 + t < KW; t++) {
            const float4 h = acc[j][t].lo + acc[j][t].hi;
            dweight[((size_t)(co0 + j) * Cin + ci) * ktaps + ky * KW + kx0 + t] += h.x + h.y + h.z + h.w;
        }
}
#endif
