/*
 * conv_transpose2d whose kernel tiles its output: kernel = stride, no
 * padding, no dilation, no output padding, groups = 1 (the UNet's 2x2
 * stride-2 up-convolution).  Every output pixel then comes from exactly one
 * input pixel and one tap t = ky KW + kx:
 *   out[n, co, iy KH + ky, ix KW + kx] = bias[co] + sum over ci of
 *       inp[n, ci, iy, ix] weight[ci, co, ky, kx]      (weight (Cin, Cout, KH, KW))
 * so the op is KH KW small matrix products with no columns and no overlap.
 *
 * Work-items run along the input width (dimension 0): neighbouring
 * work-items read neighbouring inputs (PoCL vectorises across them, GPUs
 * coalesce), and each keeps a block of channels x every tap in registers,
 * so one load feeds COB KH KW multiply-adds.  Columns past the width
 * compute on a clamped column and store nothing (uniform control flow).
 *
 * The kernel size is a compile-time constant (TT_CONVT_KH, TT_CONVT_KW), so
 * the accumulators are registers; the host builds one program per size.
 * Geometry: N, Cin, H, W, Cout (OH = H KH, OW = W KW).
 */

/* Sizes the host passes to every build as -D defines (src/ops/convt_tiles.c,
 * params_of); there are no defaults here:
 *   TT_CONVT_KH, TT_CONVT_KW  the kernel (= the stride)
 *   TT_CONVT_COB   output channels per work-item (forward)
 *   TT_CONVT_CIB   input channels per work-item (backward data)
 *   TT_CONVT_WG    backward weight work-group: a power of two, from the device
 *   TT_CONVT_WCIB  input channels per work-item (backward weight, w8) */
#if !defined(TT_CONVT_KH) || !defined(TT_CONVT_KW) || !defined(TT_CONVT_COB) ||              \
    !defined(TT_CONVT_CIB) || !defined(TT_CONVT_WG) || !defined(TT_CONVT_WCIB)
#error "convt_tiles.cl: every TT_CONVT_* size comes from the host (src/ops/convt_tiles.c)"
#endif
#define TT_CONVT_TAPS (TT_CONVT_KH * TT_CONVT_KW)

#define TT_CONVT_GEOMETRY const int N, const int Cin, const int H, const int W, const int Cout

/* out (overwritten) = bias + the products above; global (W, H, N ceil(Cout / COB)). */
__kernel void convt_tiles_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                  TT_MEM(const float, weight), TT_MEM(const float, bias),
                                  const int has_bias, TT_CONVT_GEOMETRY)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int ix_id = get_global_id(0), iy = get_global_id(1);
    const int ix = min(ix_id, W - 1);
    const int blocks = (Cout + TT_CONVT_COB - 1) / TT_CONVT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_CONVT_COB;
    if (iy >= H || n >= N) return;
    const int last = min(TT_CONVT_COB, Cout - co0) - 1; /* uniform */
    float acc[TT_CONVT_COB][TT_CONVT_TAPS];
    for (int j = 0; j < TT_CONVT_COB; j++)
        for (int t = 0; t < TT_CONVT_TAPS; t++) acc[j][t] = 0.0f;
    const size_t plane = (size_t)H * W;
    __global const float *x = inp + (size_t)n * Cin * plane + (size_t)iy * W + ix;
    for (int ci = 0; ci < Cin; ci++) {
        const float v = x[ci * plane];
        __global const float *w = weight + ((size_t)ci * Cout + co0) * TT_CONVT_TAPS;
        for (int j = 0; j < TT_CONVT_COB; j++)
            for (int t = 0; t < TT_CONVT_TAPS; t++)
                acc[j][t] = fma(v, w[min(j, last) * TT_CONVT_TAPS + t], acc[j][t]);
    }
    if (ix_id >= W) return;
    const int OH = H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    for (int j = 0; j <= last; j++) {
        const float b = has_bias ? bias[co0 + j] : 0.0f;
        __global float *o = out + ((size_t)n * Cout + co0 + j) * OH * OW;
        for (int ky = 0; ky < TT_CONVT_KH; ky++)
            for (int kx = 0; kx < TT_CONVT_KW; kx++)
                o[(size_t)(iy * TT_CONVT_KH + ky) * OW + ix * TT_CONVT_KW + kx] =
                    b + acc[j][ky * TT_CONVT_KW + kx];
    }
}

/* dinp[n, ci, iy, ix] += sum over co and taps of dout[n, co, iy KH + ky,
 * ix KW + kx] weight[ci, co, ky, kx]; global (W, H, N ceil(Cin / CIB)). */
__kernel void convt_tiles_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                        TT_MEM(const float, weight), TT_CONVT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int ix_id = get_global_id(0), iy = get_global_id(1);
    const int ix = min(ix_id, W - 1);
    const int blocks = (Cin + TT_CONVT_CIB - 1) / TT_CONVT_CIB;
    const int n = get_global_id(2) / blocks, ci0 = get_global_id(2) % blocks * TT_CONVT_CIB;
    if (iy >= H || n >= N) return;
    const int last = min(TT_CONVT_CIB, Cin - ci0) - 1; /* uniform */
    const int OH = H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    float acc[TT_CONVT_CIB];
    for (int j = 0; j < TT_CONVT_CIB; j++) acc[j] = 0.0f;
    __global const float *d0 = dout + (size_t)n * Cout * OH * OW +
                               (size_t)iy * TT_CONVT_KH * OW + ix * TT_CONVT_KW;
    for (int co = 0; co < Cout; co++) {
        float d[TT_CONVT_TAPS];
        for (int ky = 0; ky < TT_CONVT_KH; ky++)
            for (int kx = 0; kx < TT_CONVT_KW; kx++)
                d[ky * TT_CONVT_KW + kx] = d0[(size_t)co * OH * OW + (size_t)ky * OW + kx];
        for (int j = 0; j < TT_CONVT_CIB; j++) {
            __global const float *w = weight + ((size_t)(ci0 + min(j, last)) * Cout + co) * TT_CONVT_TAPS;
            for (int t = 0; t < TT_CONVT_TAPS; t++) acc[j] = fma(d[t], w[t], acc[j]);
        }
    }
    if (ix_id >= W) return;
    for (int j = 0; j <= last; j++)
        dinp[(((size_t)n * Cin + ci0 + j) * H + iy) * W + ix] += acc[j];
}

/* dweight[ci, co, t] += sum over n, iy, ix of inp[n, ci, iy, ix]
 * dout[n, co, iy KH + ky, ix KW + kx].  One work-group of WG per (ci, co):
 * its work-items stride over the input positions (neighbours read
 * neighbouring inputs), then reduce the taps in local memory.  Only the
 * input rows [row0, row0 + rows) of every image: the host splits a long
 * sum (src/ops/convt_tiles.c keeps a loop under TT_LOOP_BUDGET).
 * global (Cin Cout WG), local (WG). */
__kernel __attribute__((reqd_work_group_size(TT_CONVT_WG, 1, 1)))
void convt_tiles_backward_weight(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                 TT_MEM(const float, inp), TT_CONVT_GEOMETRY, const int row0,
                                 const int rows)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    __local float partial[TT_CONVT_TAPS * TT_CONVT_WG];
    const int lid = get_local_id(0);
    const int ci = get_group_id(0) / Cout, co = get_group_id(0) % Cout;
    const int OH = H * TT_CONVT_KH, OW = W * TT_CONVT_KW;
    const int plane = H * W;
    const int first = row0 * W, end = min(H, row0 + rows) * W;
    float acc[TT_CONVT_TAPS];
    for (int t = 0; t < TT_CONVT_TAPS; t++) acc[t] = 0.0f;
    for (int n = 0; n < N; n++) {
        __global const float *x = inp + ((size_t)n * Cin + ci) * plane;
        __global const float *d = dout + ((size_t)n * Cout + co) * OH * OW;
        for (int p0 = first; p0 < end; p0 += TT_CONVT_WG) {
            const int p = min(p0 + lid, end - 1); /* clamped: counted once below */
            const float v = p0 + lid < end ? x[p] : 0.0f;
            const int iy = p / W, ix = p % W;
            __global const float *drow = d + (size_t)iy * TT_CONVT_KH * OW + ix * TT_CONVT_KW;
            for (int ky = 0; ky < TT_CONVT_KH; ky++)
                for (int kx = 0; kx < TT_CONVT_KW; kx++)
                    acc[ky * TT_CONVT_KW + kx] = fma(v, drow[(size_t)ky * OW + kx],
                                                     acc[ky * TT_CONVT_KW + kx]);
        }
    }
    for (int t = 0; t < TT_CONVT_TAPS; t++) partial[t * TT_CONVT_WG + lid] = acc[t];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = TT_CONVT_WG / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int t = 0; t < TT_CONVT_TAPS; t++)
                partial[t * TT_CONVT_WG + lid] += partial[t * TT_CONVT_WG + lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = lid; t < TT_CONVT_TAPS; t += TT_CONVT_WG)
        dweight[((size_t)ci * Cout + co) * TT_CONVT_TAPS + t] += partial[t * TT_CONVT_WG];
}

/* ---- 8-wide variants for CPUs, KW = 2 -------------------------------------
 * Each work-item takes 8 neighbouring input columns as one float8 (the SIMD
 * units are used whether or not the runtime vectorises across work-items);
 * their 16 output columns are one float16 whose even lanes are tap kx = 0
 * and odd lanes kx = 1.  Lanes past the edge load 0 and are not stored. */

/* row[x0 .. x0 + 15], 0 past w (x0 >= 0 here). */
TT_INLINE float16 convt_load16(__global const float *row, const int x0, const int w)
{
    if (x0 + 16 <= w) return vload16(0, row + x0);
    float lanes[16];
    for (int l = 0; l < 16; l++) lanes[l] = x0 + l < w ? row[x0 + l] : 0.0f;
    return vload16(0, lanes);
}

/* row[x0 .. x0 + 15] = v, the lanes inside [0, w) only. */
TT_INLINE void convt_store16(__global float *row, const int x0, const int w, const float16 v)
{
    if (x0 + 16 <= w) {
        vstore16(v, 0, row + x0);
        return;
    }
    float lanes[16];
    vstore16(v, 0, lanes);
    for (int l = 0; l < 16 && x0 + l < w; l++) row[x0 + l] = lanes[l];
}

/* convt_tiles_forward, 8 input columns per work-item; global
 * (ceil(W / 8), H, N ceil(Cout / COB)). */
__kernel void convt_tiles_forward_w8(TT_MEM(float, out), TT_MEM(const float, inp),
                                     TT_MEM(const float, weight), TT_MEM(const float, bias),
                                     const int has_bias, TT_CONVT_GEOMETRY)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int x0 = get_global_id(0) * 8, iy = get_global_id(1);
    const int blocks = (Cout + TT_CONVT_COB - 1) / TT_CONVT_COB;
    const int n = get_global_id(2) / blocks, co0 = get_global_id(2) % blocks * TT_CONVT_COB;
    if (x0 >= W || iy >= H || n >= N) return;
    const int last = min(TT_CONVT_COB, Cout - co0) - 1;
    float8 acc[TT_CONVT_COB][TT_CONVT_KH][2];
    TT_UNROLL
    for (int j = 0; j < TT_CONVT_COB; j++)
        TT_UNROLL
        for (int ky = 0; ky < TT_CONVT_KH; ky++) acc[j][ky][0] = acc[j][ky][1] = (float8)(0.0f);
    const size_t plane = (size_t)H * W;
    __global const float *x = inp + (size_t)n * Cin * plane + (size_t)iy * W;
    for (int ci = 0; ci < Cin; ci++) {
        const float8 v = tt_load8(x + ci * plane, x0, W);
        __global const float *w = weight + ((size_t)ci * Cout + co0) * TT_CONVT_TAPS;
        TT_UNROLL
        for (int j = 0; j < TT_CONVT_COB; j++) {
            __global const float *wj = w + min(j, last) * TT_CONVT_TAPS;
            TT_UNROLL
            for (int ky = 0; ky < TT_CONVT_KH; ky++) {
                acc[j][ky][0] = fma(v, (float8)(wj[ky * 2]), acc[j][ky][0]);
                acc[j][ky][1] = fma(v, (float8)(wj[ky * 2 + 1]), acc[j][ky][1]);
            }
        }
    }
    const int OH = H * TT_CONVT_KH, OW = W * 2;
    for (int j = 0; j <= last; j++) {
        const float b = has_bias ? bias[co0 + j] : 0.0f;
        __global float *o = out + ((size_t)n * Cout + co0 + j) * OH * OW;
        TT_UNROLL
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            float16 r;
            r.even = acc[j][ky][0] + b;
            r.odd = acc[j][ky][1] + b;
            convt_store16(o + (size_t)(iy * TT_CONVT_KH + ky) * OW, 2 * x0, OW, r);
        }
    }
}

/* convt_tiles_backward_data, 8 input columns per work-item; global
 * (ceil(W / 8), H, N ceil(Cin / CIB)). */
__kernel void convt_tiles_backward_data_w8(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                           TT_MEM(const float, weight), TT_CONVT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int x0 = get_global_id(0) * 8, iy = get_global_id(1);
    const int blocks = (Cin + TT_CONVT_CIB - 1) / TT_CONVT_CIB;
    const int n = get_global_id(2) / blocks, ci0 = get_global_id(2) % blocks * TT_CONVT_CIB;
    if (x0 >= W || iy >= H || n >= N) return;
    const int last = min(TT_CONVT_CIB, Cin - ci0) - 1;
    const int OH = H * TT_CONVT_KH, OW = W * 2;
    float8 acc[TT_CONVT_CIB];
    TT_UNROLL
    for (int j = 0; j < TT_CONVT_CIB; j++) acc[j] = (float8)(0.0f);
    __global const float *d0 = dout + (size_t)n * Cout * OH * OW + (size_t)iy * TT_CONVT_KH * OW;
    __global const float *wj[TT_CONVT_CIB]; /* made once: the loop below indexes them only */
    TT_UNROLL
    for (int j = 0; j < TT_CONVT_CIB; j++)
        wj[j] = weight + (size_t)(ci0 + min(j, last)) * Cout * TT_CONVT_TAPS;
    for (int co = 0; co < Cout; co++) {
        TT_UNROLL
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            const float16 d = convt_load16(d0 + (size_t)co * OH * OW + (size_t)ky * OW, 2 * x0, OW);
            TT_UNROLL
            for (int j = 0; j < TT_CONVT_CIB; j++) {
                __global const float *w = wj[j] + co * TT_CONVT_TAPS + ky * 2;
                acc[j] = fma(d.even, (float8)(w[0]), acc[j]);
                acc[j] = fma(d.odd, (float8)(w[1]), acc[j]);
            }
        }
    }
    for (int j = 0; j <= last; j++)
        tt_store8(dinp + (((size_t)n * Cin + ci0 + j) * H + iy) * W, x0, W, acc[j], 1);
}

/* convt_tiles_backward_weight for CPUs: one work-item per block of WCIB
 * input channels and one output channel sums over every input position, 8
 * columns at a time, with no barrier.  Each input vector is spread over 16
 * lanes, (x0 x0 x1 x1 ...), to meet the output row as it lies (even lanes
 * kx = 0, odd lanes kx = 1): plain loads of dout, two shuffles per input,
 * and WCIB x KH x 2 accumulators.  Blocking input channels rather than
 * output channels reads dout, the larger tensor, Cin / WCIB times.  Rows
 * [row0, row0 + rows) as convt_tiles_backward_weight.
 * global (ceil(Cin / WCIB) Cout). */
__kernel void convt_tiles_backward_weight_w8(TT_MEM(float, dweight), TT_MEM(const float, dout),
                                             TT_MEM(const float, inp), TT_CONVT_GEOMETRY,
                                             const int row0, const int rows)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    const int blocks = (Cin + TT_CONVT_WCIB - 1) / TT_CONVT_WCIB;
    const int co = get_global_id(0) / blocks, ci0 = get_global_id(0) % blocks * TT_CONVT_WCIB;
    if (co >= Cout) return;
    const int last = min(TT_CONVT_WCIB, Cin - ci0) - 1;
    const int OH = H * TT_CONVT_KH, OW = W * 2;
    float8 acc[TT_CONVT_WCIB][TT_CONVT_KH][2];
    TT_UNROLL
    for (int j = 0; j < TT_CONVT_WCIB; j++)
        TT_UNROLL
        for (int ky = 0; ky < TT_CONVT_KH; ky++) acc[j][ky][0] = acc[j][ky][1] = (float8)(0.0f);
    for (int n = 0; n < N; n++) {
        __global const float *x = inp + ((size_t)n * Cin + ci0) * H * W;
        __global const float *d = dout + ((size_t)n * Cout + co) * OH * OW;
        for (int iy = row0; iy < min(H, row0 + rows); iy++) {
            __global const float *xrow = x + (size_t)iy * W;
            __global const float *drow = d + (size_t)iy * TT_CONVT_KH * OW;
#define CONVT_WEIGHT_COLUMNS(LOAD)                                                          \
    {                                                                                       \
        float8 dd[TT_CONVT_KH][2];                                                          \
        TT_UNROLL                                                 \
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {                                          \
            dd[ky][0] = LOAD(drow + ky * OW, 2 * x0, OW);                                   \
            dd[ky][1] = LOAD(drow + ky * OW, 2 * x0 + 8, OW);                               \
        }                                                                                   \
        TT_UNROLL                                                 \
        for (int j = 0; j < TT_CONVT_WCIB; j++) {                                           \
            const float8 v = LOAD(xrow + (size_t)min(j, last) * H * W, x0, W);              \
            const float8 lo = shuffle(v, (uint8)(0, 0, 1, 1, 2, 2, 3, 3));                  \
            const float8 hi = shuffle(v, (uint8)(4, 4, 5, 5, 6, 6, 7, 7));                  \
            TT_UNROLL                                             \
            for (int ky = 0; ky < TT_CONVT_KH; ky++) {                                      \
                acc[j][ky][0] = fma(lo, dd[ky][0], acc[j][ky][0]);                          \
                acc[j][ky][1] = fma(hi, dd[ky][1], acc[j][ky][1]);                          \
            }                                                                               \
        }                                                                                   \
    }
#define CONVT_PLAIN_LOAD8(row, x0, w) vload8(0, (row) + (x0))
            for (int x0 = 0; x0 < W; x0 += 8) {
                if (x0 + 8 <= W)
                    CONVT_WEIGHT_COLUMNS(CONVT_PLAIN_LOAD8)
                else
                    CONVT_WEIGHT_COLUMNS(tt_load8)
            }
#undef CONVT_PLAIN_LOAD8
#undef CONVT_WEIGHT_COLUMNS
        }
    }
    for (int j = 0; j <= last; j++)
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            const float8 s = acc[j][ky][0] + acc[j][ky][1];
            const float4 k0 = s.even, k1 = s.odd; /* the lanes alternate kx */
            __global float *w = dweight + ((size_t)(ci0 + j) * Cout + co) * TT_CONVT_TAPS + ky * 2;
            w[0] += k0.x + k0.y + k0.z + k0.w;
            w[1] += k1.x + k1.y + k1.z + k1.w;
        }
}
