/*
 * Direct convolution (cross-correlation, NCHW, groups = 1) for small channel
 * counts: no columns, no GEMM.  Any kernel size, stride, padding, dilation.
 *
 * Work-items run along the output width (dimension 0), so neighbouring
 * work-items read neighbouring input addresses (PoCL vectorises across
 * work-items; GPUs coalesce).  Each work-item keeps a block of output (or
 * input) channels in registers, so one input load feeds several MACs.
 *
 * The geometry arrives as one int array-like list of arguments:
 *   N, Cin, H, W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW
 * (see src/ops/conv_direct.c, which sets every TT_DIRECT_* size below).
 */

/* Sizes the host passes to every build as -D defines (src/ops/conv_direct.c,
 * params_of); there are no defaults here, so nothing on the host mirrors
 * this file:
 *   TT_DIRECT_COB    output channels per work-item (forward)
 *   TT_DIRECT_CIB    input channels per work-item (backward data): likewise
 *   TT_DIRECT_TAPS   kernel taps per work-group (backward weight)
 *   TT_DIRECT_WCOB   output channels per work-group (backward weight)
 *   TT_DIRECT_WG     work-group of backward weight; a power of two, per device
 *   TT_DIRECT_TW     tiled forward: output tile width = work-group dimension 0
 *   TT_DIRECT_TH     tiled forward: output tile height = work-group dimension 1
 * Their 8-wide versions for CPUs are conv_direct_w8.cl's, the 16-wide 3x3
 * and 7x7 ones conv_direct_w16.cl's: each an algorithm of its own. */
#if !defined(TT_DIRECT_COB) || !defined(TT_DIRECT_CIB) || !defined(TT_DIRECT_TAPS) ||        \
    !defined(TT_DIRECT_WCOB) || !defined(TT_DIRECT_WG) || !defined(TT_DIRECT_TW) ||          \
    !defined(TT_DIRECT_TH)
#error "conv_direct.cl: every TT_DIRECT_* size comes from the host (src/ops/conv_direct.c)"
#endif

/* out[n, co, oy, ox] = (accumulate ? out : bias[co] or 0) + sum over ci, ky, kx
 * of inp[n, ci, oy sH - pH + ky dH, ox sW - pW + kx dW] weight[co, ci, ky, kx].
 * global (OW, OH, N * ceil(Cout / COB)). */
__kernel void conv_direct_forward(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    /* Control flow stays uniform across a row of work-items (PoCL vectorises
     * only that): out-of-range columns compute on a clamped column and are
     * not stored; padding columns load a clamped address and use 0. */
    const int ox_id = get_global_id(0), oy = get_global_id(1);
    const int ox = min(ox_id, OW - 1);
    const int blocks = (Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_DIRECT_COB;
    if (oy >= OH || n >= N) return;
    const int last = min(TT_DIRECT_COB, Cout - co0) - 1; /* uniform */
    float acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = 0.0f;
    const int ktaps = KH * KW;
    const size_t wstride = (size_t)Cin * ktaps;
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        __global const float *wci = weight + ((size_t)co0 * Cin + ci) * ktaps;
        for (int ky = 0; ky < KH; ky++) {
            const int iy = oy * SH - PH + ky * DH;
            if (iy < 0 || iy >= H) continue;
            __global const float *row = plane + iy * W;
            for (int kx = 0; kx < KW; kx++) {
                const int ix = ox * SW - PW + kx * DW;
                const float v = row[clamp(ix, 0, W - 1)];
                const float x = (ix >= 0 && ix < W) ? v : 0.0f;
                const int tap = ky * KW + kx;
                for (int j = 0; j < TT_DIRECT_COB; j++)
                    acc[j] = fma(x, wci[min(j, last) * wstride + tap], acc[j]);
            }
        }
    }
    if (ox_id >= OW) return;
    for (int j = 0; j <= last; j++) {
        const size_t at = (((size_t)n * Cout + co0 + j) * OH + oy) * OW + ox;
        float base = accumulate ? out[at] : 0.0f;
        if (has_bias) base += bias[co0 + j];
        out[at] = base + acc[j];
    }
}

/* The same, with the input tile of a (TW x TH) block of outputs and the
 * block's weights staged in local memory, one input channel at a time (for
 * GPUs, where this saves global reads).  `tile` holds
 * ((TH-1) sH + (kH-1) dH + 1) x ((TW-1) sW + (kW-1) dW + 1) floats and
 * `wtile` COB * kH * kW; work-group (TW, TH, 1), global rounded up. */
__kernel __attribute__((reqd_work_group_size(TT_DIRECT_TW, TT_DIRECT_TH, 1)))
void conv_direct_forward_tiled(TT_FORWARD_ARGS, __local float *tile, __local float *wtile)
{
    TT_FORWARD_PTRS;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int ox = get_global_id(0), oy = get_global_id(1);
    const int blocks = (Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_DIRECT_COB;
    const int tile_w = (TT_DIRECT_TW - 1) * SW + (KW - 1) * DW + 1;
    const int tile_h = (TT_DIRECT_TH - 1) * SH + (KH - 1) * DH + 1;
    const int y0 = get_group_id(1) * TT_DIRECT_TH * SH - PH;
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

/* dinp[n, ci, y, x] += sum over co and the taps (ky, kx) whose output
 * position oy = (y + pH - ky dH) / sH (exact, in range; likewise ox) exists,
 * of dout[n, co, oy, ox] weight[co, ci, ky, kx].
 * global (W, H, N * ceil(Cin / CIB)). */
__kernel void conv_direct_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                        TT_MEM(const float, weight), TT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    /* uniform control flow across a row, as in the forward */
    const int x_id = get_global_id(0), y = get_global_id(1);
    const int x = min(x_id, W - 1);
    const int blocks = (Cin + TT_DIRECT_CIB - 1) / TT_DIRECT_CIB;
    const int n = get_global_id(2) / blocks, ci0 = get_global_id(2) % blocks * TT_DIRECT_CIB;
    if (y >= H || n >= N) return;
    const int last = min(TT_DIRECT_CIB, Cin - ci0) - 1; /* uniform */
    float acc[TT_DIRECT_CIB];
    for (int j = 0; j < TT_DIRECT_CIB; j++) acc[j] = 0.0f;
    const int ktaps = KH * KW;
    for (int ky = 0; ky < KH; ky++) {
        const int ty = y + PH - ky * DH;
        if (ty < 0 || ty % SH) continue;
        const int oy = ty / SH;
        if (oy >= OH) continue;
        for (int kx = 0; kx < KW; kx++) {
            const int tx = x + PW - kx * DW;
            const int ox = tx / SW;
            const int valid = tx >= 0 && tx % SW == 0 && ox < OW;
            const int ox_safe = clamp(ox, 0, OW - 1);
            const int tap = ky * KW + kx;
            for (int co = 0; co < Cout; co++) {
                const float v = dout[(((size_t)n * Cout + co) * OH + oy) * OW + ox_safe];
                const float d = valid ? v : 0.0f;
                __global const float *w = weight + ((size_t)co * Cin + ci0) * ktaps + tap;
                for (int j = 0; j < TT_DIRECT_CIB; j++)
                    acc[j] = fma(d, w[min(j, last) * ktaps], acc[j]);
            }
        }
    }
    if (x_id >= W) return;
    for (int j = 0; j <= last; j++)
        dinp[(((size_t)n * Cin + ci0 + j) * H + y) * W + x] += acc[j];
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
