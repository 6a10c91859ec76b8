/*
 * conv_direct.cl's kernels for CPUs (the DIRECT_W8 algorithm), stride 1
 * along W: each work-item handles 8 neighbouring columns as one float8, so
 * that the SIMD units are used whether or not the runtime vectorises
 * across work-items.  Columns outside the image (padding, the ragged right
 * edge) are masked (tt_load8 / tt_store8, common.cl).  OpenCL's alone: a
 * Vulkan CPU device (lavapipe) runs a work-group's invocations side by side
 * in its SIMD lanes and ran these 3 times slower than the scalar shaders.
 *
 * Sizes the host passes to every build as -D defines (src/ops/conv_direct.c,
 * params_of); there are no defaults here:
 *   TT_DIRECT_COB    output channels per work-item (forward)
 *   TT_DIRECT_CIB    input channels per work-item (backward data)
 *   TT_DIRECT_WCOB   output channels per work-item (backward weight)
 *   TT_DIRECT_KXB    kernel columns per work-item (backward weight); 1 for 1x1
 */
#if !defined(TT_DIRECT_COB) || !defined(TT_DIRECT_CIB) || !defined(TT_DIRECT_WCOB) || \
    !defined(TT_DIRECT_KXB)
#error "conv_direct_w8.cl: every TT_DIRECT_* size comes from the host (src/ops/conv_direct.c)"
#endif

/* conv_direct_forward with 8 outputs per work-item; sW must be 1.
 * global (ceil(OW / 8), OH, N * ceil(Cout / COB)). */
__kernel void conv_direct_forward_w8(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    const int ox0 = get_global_id(0) * 8, oy = get_global_id(1);
    const int blocks = (Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_DIRECT_COB;
    if (ox0 >= OW || oy >= OH || n >= N) return;
    const int last = min(TT_DIRECT_COB, Cout - co0) - 1;
    float8 acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = (float8)(0.0f);
    const int ktaps = KH * KW;
    const size_t wstride = (size_t)Cin * ktaps;
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        __global const float *wci = weight + ((size_t)co0 * Cin + ci) * ktaps;
        for (int ky = 0; ky < KH; ky++) {
            const int iy = oy * SH - PH + ky * DH;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KW; kx++) {
                const float8 x = tt_load8(plane + iy * W, ox0 - PW + kx * DW, W);
                const int tap = ky * KW + kx;
                for (int j = 0; j < TT_DIRECT_COB; j++)
                    acc[j] = fma(x, (float8)(wci[min(j, last) * wstride + tap]), acc[j]);
            }
        }
    }
    for (int j = 0; j <= last; j++) {
        __global float *row = out + (((size_t)n * Cout + co0 + j) * OH + oy) * OW;
        const float8 b = (float8)(has_bias ? bias[co0 + j] : 0.0f);
        tt_store8(row, ox0, OW, acc[j] + b, accumulate);
    }
}

/* conv_direct_backward_data with 8 columns per work-item; sW must be 1.
 * global (ceil(W / 8), H, N * ceil(Cin / CIB)). */
__kernel void conv_direct_backward_data_w8(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                           TT_MEM(const float, weight), TT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int x0 = get_global_id(0) * 8, y = get_global_id(1);
    const int blocks = (Cin + TT_DIRECT_CIB - 1) / TT_DIRECT_CIB;
    const int n = get_global_id(2) / blocks, ci0 = get_global_id(2) % blocks * TT_DIRECT_CIB;
    if (x0 >= W || y >= H || n >= N) return;
    const int last = min(TT_DIRECT_CIB, Cin - ci0) - 1;
    float8 acc[TT_DIRECT_CIB];
    for (int j = 0; j < TT_DIRECT_CIB; j++) acc[j] = (float8)(0.0f);
    const int ktaps = KH * KW;
    for (int ky = 0; ky < KH; ky++) {
        const int ty = y + PH - ky * DH;
        if (ty < 0 || ty % SH) continue;
        const int oy = ty / SH;
        if (oy >= OH) continue;
        for (int kx = 0; kx < KW; kx++) {
            const int tap = ky * KW + kx;
            for (int co = 0; co < Cout; co++) {
                const float8 d = tt_load8(dout + (((size_t)n * Cout + co) * OH + oy) * OW,
                                          x0 + PW - kx * DW, OW);
                __global const float *w = weight + ((size_t)co * Cin + ci0) * ktaps + tap;
                for (int j = 0; j < TT_DIRECT_CIB; j++)
                    acc[j] = fma(d, (float8)(w[min(j, last) * ktaps]), acc[j]);
            }
        }
    }
    for (int j = 0; j <= last; j++)
        tt_store8(dinp + (((size_t)n * Cin + ci0 + j) * H + y) * W, x0, W, acc[j], 1);
}

/* conv_direct_backward_weight for CPUs; sW must be 1.  One work-item per
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
    __attribute__((opencl_unroll_hint))
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        __attribute__((opencl_unroll_hint))
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
        __attribute__((opencl_unroll_hint))                                                  \
        for (int j = 0; j < TT_DIRECT_WCOB; j++)                                             \
            d[j] = LOAD(drow + (size_t)min(j, last) * OH * OW, ox0, OW);                     \
        __attribute__((opencl_unroll_hint))                                                  \
        for (int t = 0; t < TT_DIRECT_KXB; t++) {                                            \
            const float8 x = LOAD(row, ox0 - PW + min(kx0 + t, KW - 1) * DW, W);             \
            __attribute__((opencl_unroll_hint))                                              \
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
