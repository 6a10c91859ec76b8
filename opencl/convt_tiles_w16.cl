/*
 * The forward of conv_transpose2d whose kernel tiles its output
 * (opencl/convt_tiles.cl has the op and every other kernel), for CPUs
 * with 16-lane vectors (AVX-512: PoCL compiles float16 to one zmm
 * register), kernels 2 wide: the UNet's 2x2 stride-2 up-convolution.
 * src/ops/convt_tiles.c chooses it where the device's traits say 16 lanes
 * (direct_w16, src/ops/device_traits.c).
 *
 * convt_tiles_forward_w8 keeps 2 output channels x 4 taps of 8 columns:
 * per input channel one float8 load and eight weight loads for eight 8-lane
 * multiply-adds, as many loads as FMAs.  Here a work-item keeps one output
 * channel's KH x 2 taps of 64 input columns (four float16 each): per input
 * channel four vector loads and 2 KH weight loads for 8 KH 16-lane FMAs.
 * The sums run over the input channels in order, as in the 8-wide kernel,
 * so both give the same bits.  Neighbouring work-items (dimension 0) are
 * output channels, so that they read the same input rows from cache.
 *
 * TT_CONVT_KH, the kernel's height (= its stride), comes from the host as
 * a -D define.  Geometry: N, Cin, H, W, Cout (OH = H KH, OW = 2 W).
 */
#if !defined(TT_CONVT_KH)
#error "convt_tiles_w16.cl: TT_CONVT_KH comes from the host (src/ops/convt_tiles.c)"
#endif
#define CONVT16_VECTORS 4 /* float16 vectors of input columns per work-item */
#define CONVT16_COLUMNS (16 * CONVT16_VECTORS)

/* out[n, co, iy KH + ky, 2 ix + kx] = bias[co] + sum over ci of
 * inp[n, ci, iy, ix] weight[ci, co, ky, kx]: output channel co, input row
 * iy of image n, input columns x0 .. x0 + 63 per work-item; the even and
 * odd output columns (kx = 0, 1) are interleaved at the store.
 * global (Cout, ceil(W / 64), N H). */
__kernel void convt_tiles_forward_w16(TT_MEM(float, out), TT_MEM(const float, inp),
                                      TT_MEM(const float, weight), TT_MEM(const float, bias),
                                      const int has_bias, const int N, const int Cin,
                                      const int H, const int W, const int Cout)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int co = get_global_id(0), x0 = get_global_id(1) * CONVT16_COLUMNS;
    const int row = get_global_id(2);
    if (co >= Cout || x0 >= W || row >= N * H) return;
    const int n = row / H, iy = row - n * H, whole = x0 + CONVT16_COLUMNS <= W;
    float16 acc[TT_CONVT_KH][2][CONVT16_VECTORS];
    TT_UNROLL
    for (int ky = 0; ky < TT_CONVT_KH; ky++)
        TT_UNROLL
        for (int v = 0; v < CONVT16_VECTORS; v++) acc[ky][0][v] = acc[ky][1][v] = (float16)(0.0f);
    const size_t plane = (size_t)H * W;
    __global const float *x = inp + (size_t)n * Cin * plane + (size_t)iy * W;
    __global const float *w = weight + (size_t)co * TT_CONVT_KH * 2;
    for (int ci = 0; ci < Cin; ci++, x += plane, w += (size_t)Cout * TT_CONVT_KH * 2) {
        float16 in[CONVT16_VECTORS];
        TT_UNROLL
        for (int v = 0; v < CONVT16_VECTORS; v++)
            in[v] = whole ? vload16(0, x + x0 + 16 * v) : tt_load16(x, x0 + 16 * v, W);
        TT_UNROLL
        for (int ky = 0; ky < TT_CONVT_KH; ky++) {
            const float16 w0 = (float16)(w[ky * 2]), w1 = (float16)(w[ky * 2 + 1]);
            TT_UNROLL
            for (int v = 0; v < CONVT16_VECTORS; v++) {
                acc[ky][0][v] = fma(in[v], w0, acc[ky][0][v]);
                acc[ky][1][v] = fma(in[v], w1, acc[ky][1][v]);
            }
        }
    }
    const int OW = 2 * W;
    const float16 b = (float16)(has_bias ? bias[co] : 0.0f);
    const uint16 low = (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const uint16 high = low + (uint16)(8);
    TT_UNROLL
    for (int ky = 0; ky < TT_CONVT_KH; ky++) {
        const size_t out_row = ((size_t)n * Cout + co) * H * TT_CONVT_KH + iy * TT_CONVT_KH + ky;
        __global float *o = out + out_row * OW;
        TT_UNROLL
        for (int v = 0; v < CONVT16_VECTORS; v++) {
            const float16 even = acc[ky][0][v] + b, odd = acc[ky][1][v] + b;
            const int x = 2 * (x0 + 16 * v);
            tt_store16(o, x, OW, shuffle2(even, odd, low));
            tt_store16(o, x + 16, OW, shuffle2(even, odd, high));
        }
    }
}
