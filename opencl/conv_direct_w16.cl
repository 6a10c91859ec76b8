/*
 * The 3x3, stride 1, padding 1, dilation 1 direct convolution for CPUs
 * with 16-lane vectors (AVX-512: PoCL compiles float16 to one zmm register,
 * float8 to half of one): conv_direct.cl's padded 3x3 kernels with 16
 * columns per work-item.  Planes of width W, a multiple of 8, read from a
 * copy with the padding written out (conv_pad_k3_w16), so that every load
 * is a plain one; and the stride-2 kernels of ResNet's down-sampling 3x3
 * and 7x7 stem (the end of the file).
 * src/ops/conv_direct.c chooses them where the device's
 * traits say 16 lanes (src/ops/device_traits.c) and launches them.
 *
 * Sizes the host passes as -D defines (src/ops/conv_direct.c, w16_options);
 * there are no defaults here:
 *   TT_W16_ROWS  output rows per work-item (forward)
 *   TT_W16_COB   output channels per work-item (forward)
 *   TT_W16_WCOB  output channels per work-item (weight gradient)
 *   TT_W16_WROWS output rows per step of the weight gradient
 *   TT_W16_DCIB  input channels per work-item (stride-2 input gradient)
 *   TT_W16_FLIPPED  1: the forwards read their weights flipped (K16_TAP_AT)
 * Every forward and weight gradient takes plane_rows after the geometry:
 * the rows of a plane of out (dout), OH but where the host launches the
 * stride-1 kernels on a band of an image's rows.
 */
#if !defined(TT_W16_ROWS) || !defined(TT_W16_COB) || !defined(TT_W16_WCOB) || \
    !defined(TT_W16_WROWS) || !defined(TT_W16_DCIB) || !defined(TT_W16_FLIPPED)
#error "conv_direct_w16.cl: every TT_W16_* size comes from the host (src/ops/conv_direct.c)"
#endif

/* The forwards' weight of output channel co, input channel ci and tap t:
 * weight (Cout, Cin, 3, 3) at [co, ci, t]; with TT_W16_FLIPPED, weight
 * (Cin, Cout, 3, 3) at [ci, co, 8 - t], the convolution whose forward is
 * the input gradient of that weight's (so that the input gradient reads
 * the weights as they are, with no flipped copy).  K16_CHANNEL_AT(co) + K16_TAP_AT(ci, t). */
#if TT_W16_FLIPPED
#define K16_CHANNEL_AT(co) ((size_t)(co) * 9 + 8)
#define K16_TAP_AT(ci, t) ((long)(ci) * Cout * 9 - (t))
#else
#define K16_CHANNEL_AT(co) ((size_t)(co) * Cin * 9)
#define K16_TAP_AT(ci, t) ((long)(ci) * 9 + (t))
#endif

/* The padded plane (H, W), any W: rows of P = W16 + 16 floats (W16: W
 * rounded up to a multiple of 16), 16 zeros then the row, then zeros up
 * to W16 (so that the right neighbour of the last column is a zero: the
 * rest of the row's last vector or the next row's first 16); a row of
 * zeros above, and below as many as round the rows up to a multiple of
 * TT_W16_ROWS and one more (so that the forward's last row block stays
 * inside whatever H is); 16 zeros after the last row.  K16_PLANE floats a
 * plane, a multiple of 16.  Where W % 16 != 0 the last vector of a row is
 * part row: the forward stores its first W % 16 lanes only; the stride-1
 * weight gradient reads the row's last 16 columns there, those the vector
 * before it counted masked, and the stride-2 one (outputs a multiple of 8
 * wide) 8 columns of dout (k16_dout), so neither meets the lanes past the
 * row.
 *
 * A band of a plane is the same layout over rows row0 .. row0 + H - 1 of a
 * plane of `height` rows: its halo rows above and below are the plane's
 * neighbouring rows (zeros past the plane's edges), so that a kernel over
 * the band computes the plane's output rows row0 .. row0 + H - 1 (the
 * host's bands of planes whose whole copy would be too large). */
#define K16_PITCH(W) (((W) + 15) / 16 * 16 + 16)
#define K16_ROWS(H) (((H) + TT_W16_ROWS - 1) / TT_W16_ROWS * TT_W16_ROWS + 2)
#define K16_PLANE(H, W) (K16_ROWS(H) * K16_PITCH(W) + 16)

/* dst: the band of H rows from row0 of `planes` planes (height, W) of src,
 * padded as above (the whole plane: row0 = 0, H = height).
 * global (K16_ROWS(H) + 1, planes): row r of the padded band, a work-item
 * each (r = K16_ROWS(H): the 16 zeros at the end). */
__kernel void conv_pad_k3_w16(TT_MEM(float, dst), TT_MEM(const float, src), const int planes,
                              const int H, const int W, const int row0, const int height)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int r = get_global_id(0), plane = get_global_id(1);
    if (r > K16_ROWS(H) || plane >= planes) return;
    __global float *d = dst + (size_t)plane * K16_PLANE(H, W) + r * K16_PITCH(W);
    vstore16((float16)(0.0f), 0, d);
    if (r == K16_ROWS(H)) return;
    const int y = row0 + r - 1; /* the plane's row */
    if (r > H + 1 || y < 0 || y >= height) {
        for (int x0 = 0; x0 < W; x0 += 16) vstore16((float16)(0.0f), 0, d + 16 + x0);
        return;
    }
    __global const float *row = src + ((size_t)plane * height + y) * W;
    int x0 = 0;
    for (; x0 + 16 <= W; x0 += 16) vstore16(vload16(0, row + x0), 0, d + 16 + x0);
    if (x0 < W) vstore16(tt_load16(row, x0, W), 0, d + 16 + x0);
}

/* 16 columns of dout from x0 in a row OW wide, OW % 8 == 0: the last 8 of
 * a row with OW % 16 == 8 as lanes 0-7, zeros above (they meet nothing). */
TT_INLINE float16 k16_dout(__global const float *row, const int x0, const int OW)
{
    if (x0 + 16 <= OW) return vload16(0, row + x0);
    return (float16)(vload8(0, row + x0), (float8)(0.0f));
}

/* The forwards' start: zero accumulators and the weights of output
 * channels co0 + j (channels past `last` on the last real one's). */
TT_INLINE void k16_forward_start(float16 acc[TT_W16_COB][TT_W16_ROWS],
                              __global const float *wj[TT_W16_COB],
                              __global const float *weight, const int co0, const int last,
                              const int Cin, const int Cout)
{
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++) {
        wj[j] = weight + K16_CHANNEL_AT(co0 + min(j, last));
        TT_UNROLL
        for (int r = 0; r < TT_W16_ROWS; r++) acc[j][r] = (float16)(0.0f);
    }
}

/* o[0 .. n - 1] (+)= a + b's first n lanes (n < 16), summed in the order
 * of the whole vectors' store, lane by lane: no private array, which
 * would cost the forwards' accumulators their registers. */
#define K16_PUT(i, lane) \
    if ((i) < n) o[i] = (accumulate ? o[i] : 0.0f) + a.lane + b.lane
TT_INLINE void k16_store_part(__global float *o, const float16 a, const float16 b, const int n,
                           const int accumulate)
{
    K16_PUT(0, s0); K16_PUT(1, s1); K16_PUT(2, s2); K16_PUT(3, s3);
    K16_PUT(4, s4); K16_PUT(5, s5); K16_PUT(6, s6); K16_PUT(7, s7);
    K16_PUT(8, s8); K16_PUT(9, s9); K16_PUT(10, sa); K16_PUT(11, sb);
    K16_PUT(12, sc); K16_PUT(13, sd); K16_PUT(14, se);
}
#undef K16_PUT

/* The forwards' end: out[co0 + j, y0 + r, x0 ..] (+)= acc[j][r] + bias for
 * the channels up to `last` and rows inside OH, in planes of plane_rows
 * rows (OH, or a whole plane's rows when the launch is a band of it); at
 * a row's end the OW - x0 columns left.  Unrolled with constant indices,
 * so that acc stays in registers. */
TT_INLINE void k16_store_rows(__global float *out, float16 acc[TT_W16_COB][TT_W16_ROWS],
                           __global const float *bias, const int has_bias, const int accumulate,
                           const int co0, const int last, const int y0, const int x0,
                           const int OH, const int OW, const int plane_rows)
{
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++) {
        const float16 b = (float16)(has_bias && j <= last ? bias[co0 + j] : 0.0f);
        TT_UNROLL
        for (int r = 0; r < TT_W16_ROWS; r++) {
            if (j > last || y0 + r >= OH) continue;
            __global float *o = out + ((size_t)(co0 + j) * plane_rows + y0 + r) * OW + x0;
            if (x0 + 16 <= OW) {
                vstore16((accumulate ? vload16(0, o) : (float16)(0.0f)) + acc[j][r] + b, 0, o);
            } else if (x0 + 8 == OW) {
                vstore8((accumulate ? vload8(0, o) : (float8)(0.0f)) + acc[j][r].lo + b.lo, 0, o);
            } else {
                k16_store_part(o, acc[j][r], b, OW - x0, accumulate);
            }
        }
    }
}

/* The weight gradients' work-item (item, b): the pairs (co0 + j, ci), j up
 * to `last` (the channels past it compute on the last real one, unstored),
 * over band b (images n0 .. n1 - 1, output rows r0 .. r1 - 1). */
typedef struct k16_band {
    int ci, co0, last, n0, n1, r0, r1;
} k16_band;

/* The weight gradients' start: *w, and the accumulators zeroed; 0 when
 * item is past the last block of pairs (nothing to do). */
TT_INLINE int k16_weight_start(k16_band *w, float16 acc[TT_W16_WCOB][3][3], const int item,
                            const int b, const int N, const int Cin, const int Cout, const int OH,
                            const int images_per_band, const int bands_per_image,
                            const int band_rows)
{
    const int blocks = (Cout + TT_W16_WCOB - 1) / TT_W16_WCOB;
    if (item >= blocks * Cin) return 0;
    w->ci = item % Cin, w->co0 = item / Cin * TT_W16_WCOB;
    w->last = min(TT_W16_WCOB, Cout - w->co0) - 1;
    w->n0 = b / bands_per_image * images_per_band, w->n1 = min(N, w->n0 + images_per_band);
    w->r0 = b % bands_per_image * band_rows, w->r1 = min(OH, w->r0 + band_rows);
    TT_UNROLL
    for (int j = 0; j < TT_W16_WCOB; j++)
        TT_UNROLL
        for (int ky = 0; ky < 3; ky++)
            TT_UNROLL
            for (int kx = 0; kx < 3; kx++) acc[j][ky][kx] = (float16)(0.0f);
    return 1;
}

/* The weight gradients' end: band b's sums of the nine taps of the pairs
 * (co0 + j, ci), j up to `last`, each acc summed across its lanes. */
TT_INLINE void k16_store_taps(__global float *partial, float16 acc[TT_W16_WCOB][3][3], const int b,
                           const int Cout, const int Cin, const int co0, const int ci,
                           const int last)
{
    TT_UNROLL
    for (int j = 0; j < TT_W16_WCOB; j++) {
        if (j > last) continue;
        __global float *o = partial + (((size_t)b * Cout + co0 + j) * Cin + ci) * 9;
        TT_UNROLL
        for (int t = 0; t < 9; t++) {
            const float16 a = acc[j][t / 3][t % 3];
            const float8 h8 = a.lo + a.hi;
            const float4 h4 = h8.lo + h8.hi;
            o[t] = h4.x + h4.y + h4.z + h4.w;
        }
    }
}

/* The prologue of the 16-wide forwards (stride 1 and 2), whose arguments
 * are (out, inp, weight, bias, has_bias, accumulate, TT_GEOMETRY): the
 * pointers; co0, x0, y0 (the work-item's first output channel, column and
 * row; out of range: return); last (its last real channel: channels past
 * Cout compute on the last real one's weights, unstored); acc and wj
 * started (k16_forward_start). */
#define K16_FORWARD_BEGIN                                                        \
    TT_PTR(float, out);                                                          \
    TT_PTR(const float, inp);                                                    \
    TT_PTR(const float, weight);                                                 \
    TT_PTR(const float, bias);                                                   \
    const int co0 = get_global_id(0) * TT_W16_COB, x0 = get_global_id(1) * 16;  \
    const int y0 = get_global_id(2) * TT_W16_ROWS;                               \
    if (co0 >= Cout || x0 >= OW || y0 >= OH) return;                             \
    const int last = min(TT_W16_COB, Cout - co0) - 1;                            \
    float16 acc[TT_W16_COB][TT_W16_ROWS];                                        \
    __global const float *wj[TT_W16_COB];                                        \
    k16_forward_start(acc, wj, weight, co0, last, Cin, Cout)

/* out[co, y, x] = (accumulate ? out : 0) + (has_bias ? bias[co] : 0) + the
 * 3x3 cross-correlation of one image's padded input (conv_pad_k3_w16;
 * the host launches it per image, or per band of OH rows of an image
 * whose output planes have plane_rows rows) with weight (Cout, Cin, 3,
 * 3).  Each work-item: 16 columns from x0, TT_W16_ROWS rows from y0, TT_W16_COB
 * channels from co0.  Per input channel and kernel column kx it loads the
 * ROWS + 2 input rows' vectors at that shift and feeds each weight, one
 * broadcast, to every output row it meets (ROWS FMAs a weight load, and
 * ROWS + 2 inputs live rather than 3 (ROWS + 2)).
 * global (ceil(Cout / COB), ceil(OW / 16), ceil(OH / ROWS)). */
__kernel void conv_direct_forward_k3p16(TT_MEM(float, out), TT_MEM(const float, inp),
                                        TT_MEM(const float, weight), TT_MEM(const float, bias),
                                        const int has_bias, const int accumulate, TT_GEOMETRY,
                                        const int plane_rows)
{
    K16_FORWARD_BEGIN;
    const int P = K16_PITCH(W);
    for (int ci = 0; ci < Cin; ci++) {
        /* padded row y0 + i is input row y0 - 1 + i; columns from -1 */
        __global const float *rows = inp + (size_t)ci * K16_PLANE(H, W) + (size_t)y0 * P + 15 + x0;
        TT_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            float16 x[TT_W16_ROWS + 2];
            TT_UNROLL
            for (int i = 0; i < TT_W16_ROWS + 2; i++) x[i] = vload16(0, rows + i * P + kx);
            TT_UNROLL
            for (int ky = 0; ky < 3; ky++)
                TT_UNROLL
                for (int j = 0; j < TT_W16_COB; j++) {
                    const float16 w = (float16)(wj[j][K16_TAP_AT(ci, ky * 3 + kx)]);
                    TT_UNROLL
                    for (int r = 0; r < TT_W16_ROWS; r++) acc[j][r] = fma(x[r + ky], w, acc[j][r]);
                }
        }
    }
    k16_store_rows(out, acc, bias, has_bias, accumulate, co0, last, y0, x0, OH, OW,
                   plane_rows);
}


/* The prologue of the 16-wide weight gradients (stride 1 and 2), whose
 * arguments are (partial, dout, padded, images_per_band, bands_per_image,
 * band_rows, TT_GEOMETRY): the pointers; b (the band), acc started and the
 * work-item's pair block and band (k16_weight_start; none: return) as ci,
 * co0, last, n0, n1, r0, r1. */
#define K16_WEIGHT_BEGIN                                                                      \
    TT_PTR(float, partial);                                                                   \
    TT_PTR(const float, dout);                                                                \
    TT_PTR(const float, padded);                                                              \
    const int b = get_global_id(1);                                                           \
    k16_band w;                                                                               \
    float16 acc[TT_W16_WCOB][3][3];                                                           \
    if (!k16_weight_start(&w, acc, get_global_id(0), b, N, Cin, Cout, OH, images_per_band,    \
                          bands_per_image, band_rows))                                        \
        return;                                                                               \
    const int ci = w.ci, co0 = w.co0, last = w.last, n0 = w.n0, n1 = w.n1, r0 = w.r0, r1 = w.r1

/* The stride-1 weight gradient's step at columns XS .. XS + 15 of the
 * input rows from `row` (padded, columns from -1): WROWS rows of dout
 * (d[r][j] = D, an expression of r and j) meet the WROWS + 2 input rows'
 * three shifted vectors, each loaded once.  A row's vectors run in a loop
 * of whole ones; where OW % 16 != 0 its last one after the loop, at
 * OW - 16 (OW >= 16 here), the lanes the vector before it counted masked
 * to zero: no lane-by-lane load, and nothing of the kind in the loop
 * (either made the kernel 1.2-2x slower). */
#define K16_LANES ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define K16_WEIGHT_ROWS(XS, D)                                                          \
    do {                                                                                \
        float16 d[TT_W16_WROWS][TT_W16_WCOB];                                           \
        TT_UNROLL                                             \
        for (int r = 0; r < TT_W16_WROWS; r++)                                          \
            TT_UNROLL                                         \
            for (int j = 0; j < TT_W16_WCOB; j++) d[r][j] = (D);                        \
        TT_UNROLL                                             \
        for (int i = 0; i < TT_W16_WROWS + 2; i++)                                      \
            TT_UNROLL                                         \
            for (int kx = 0; kx < 3; kx++) {                                            \
                const float16 x = vload16(0, row + i * P + (XS) + kx);                  \
                TT_UNROLL                                     \
                for (int r = 0; r < TT_W16_WROWS; r++) {                                \
                    const int ky = i - r;                                               \
                    if (ky < 0 || ky > 2) continue;                                     \
                    TT_UNROLL                                 \
                    for (int j = 0; j < TT_W16_WCOB; j++)                               \
                        acc[j][ky][kx] = fma(d[r][j], x, acc[j][ky][kx]);               \
                }                                                                       \
            }                                                                           \
    } while (0)

/* The same for one row of dout (d[j] = D, an expression of j). */
#define K16_WEIGHT_ROW(XS, D)                                                           \
    do {                                                                                \
        float16 d[TT_W16_WCOB];                                                         \
        TT_UNROLL                                             \
        for (int j = 0; j < TT_W16_WCOB; j++) d[j] = (D);                               \
        TT_UNROLL                                             \
        for (int ky = 0; ky < 3; ky++)                                                  \
            TT_UNROLL                                         \
            for (int kx = 0; kx < 3; kx++) {                                            \
                const float16 x = vload16(0, row + ky * P + (XS) + kx);                 \
                TT_UNROLL                                     \
                for (int j = 0; j < TT_W16_WCOB; j++)                                   \
                    acc[j][ky][kx] = fma(d[j], x, acc[j][ky][kx]);                      \
            }                                                                           \
    } while (0)

/* The partial sums of the weight gradient over bands, as conv_direct.cl's
 * conv_direct_backward_weight_k3p, from the padded input of
 * conv_pad_k3_w16 (images, or a band of OH rows of one image whose dout
 * planes have plane_rows rows): work-item (item, b) sums the nine taps of
 * the pairs (co, ci) for TT_W16_WCOB channels co from co0 (item = co0 / WCOB Cin +
 * ci) over band b (images n0 .. n1 - 1, output rows r0 .. r1 - 1) into
 * partial[(b Cout Cin + co Cin + ci) 9 + tap].  TT_W16_WROWS output rows
 * at a time: each of the WROWS + 2 input rows' three shifted vectors is
 * loaded once and meets the dout of every row and channel it reaches
 * (with 4 rows: 18 input loads for 36 WCOB FMAs; one row at a time, 9 for
 * 9 WCOB).  Channels past Cout compute on the last real one, unstored. */
__kernel void conv_direct_backward_weight_k3p16(TT_MEM(float, partial), TT_MEM(const float, dout),
                                                TT_MEM(const float, padded),
                                                const int images_per_band,
                                                const int bands_per_image, const int band_rows,
                                                TT_GEOMETRY, const int plane_rows)
{
    K16_WEIGHT_BEGIN;
    const int P = K16_PITCH(W);
    for (int n = n0; n < n1; n++) {
        /* padded row oy + ky is input row oy - 1 + ky; columns from -1 */
        __global const float *plane = padded + ((size_t)n * Cin + ci) * K16_PLANE(H, W) + 15;
        __global const float *dplane[TT_W16_WCOB];
        TT_UNROLL
        for (int j = 0; j < TT_W16_WCOB; j++)
            dplane[j] = dout + ((size_t)n * Cout + co0 + min(j, last)) * plane_rows * OW;
        int oy = r0;
        for (; oy + TT_W16_WROWS <= r1; oy += TT_W16_WROWS) {
            __global const float *row = plane + (size_t)oy * P;
            int x0 = 0;
            for (; x0 + 16 <= OW; x0 += 16)
                K16_WEIGHT_ROWS(x0, vload16(0, dplane[j] + (size_t)(oy + r) * OW + x0));
            if (x0 < OW) {
                const int xs = OW - 16;
                const int16 keep = K16_LANES >= (int16)(x0 - xs);
                K16_WEIGHT_ROWS(xs, select((float16)(0.0f),
                                           vload16(0, dplane[j] + (size_t)(oy + r) * OW + xs),
                                           keep));
            }
        }
        for (; oy < r1; oy++) {
            __global const float *row = plane + (size_t)oy * P;
            int x0 = 0;
            for (; x0 + 16 <= OW; x0 += 16)
                K16_WEIGHT_ROW(x0, vload16(0, dplane[j] + (size_t)oy * OW + x0));
            if (x0 < OW) {
                const int xs = OW - 16;
                const int16 keep = K16_LANES >= (int16)(x0 - xs);
                K16_WEIGHT_ROW(xs, select((float16)(0.0f),
                                          vload16(0, dplane[j] + (size_t)oy * OW + xs), keep));
            }
        }
    }
    k16_store_taps(partial, acc, b, Cout, Cin, co0, ci, last);
}

/* ---- planes 8 wide: two rows of 8 as one float16 -------------------------
 * (ResNet's last level at 256x256.)  The padded copy (conv_pad_k3_h16):
 * each plane (H, 8) is 16 zeros, a row of zeros, the H rows, rows of zeros
 * up to H16_ROWS(H) rows in all, 16 zeros; padded row r is input row r - 1.
 * A vector loaded from padded row r, column kx - 1 holds the input rows
 * r - 1 and r at columns kx - 1 .. kx + 6; the lanes of the columns past
 * the row (kx = 0: lanes 0 and 8; kx = 2: lanes 7 and 15) read a
 * neighbour and are masked to the padding's 0 (k3h_mask).  A forward
 * work-item takes TT_W16_ROWS output rows, TT_W16_ROWS / 2 vectors. */
#if TT_W16_ROWS % 2
#error "conv_direct_w16.cl: TT_W16_ROWS must be even (planes 8 wide take rows in pairs)"
#endif
#define H16_VECTORS (TT_W16_ROWS / 2)
#define H16_ROWS(H) (((H) + TT_W16_ROWS - 1) / TT_W16_ROWS * TT_W16_ROWS + 2)
#define H16_PLANE(H) (H16_ROWS(H) * 8 + 32)

TT_INLINE float16 k3h_mask(const float16 x, const int kx)
{
    if (kx == 0) return select(x, (float16)(0.0f), (int16)(-1, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0));
    if (kx == 2) return select(x, (float16)(0.0f), (int16)(0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, -1));
    return x;
}

/* dst: `planes` planes (H, 8) of src, padded as above.
 * global (H16_ROWS(H) + 4, planes): padded row r - 2 (r < 2 and
 * r = H16_ROWS(H) + 2, + 3: the zeros before and after), 8 floats each. */
__kernel void conv_pad_k3_h16(TT_MEM(float, dst), TT_MEM(const float, src), const int planes,
                              const int H)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int r = get_global_id(0) - 2, plane = get_global_id(1);
    if (r > H16_ROWS(H) + 1 || plane >= planes) return;
    __global float *d = dst + (size_t)plane * H16_PLANE(H) + 16 + r * 8;
    const int inside = r >= 1 && r <= H;
    vstore8(inside ? vload8(0, src + ((size_t)plane * H + r - 1) * 8) : (float8)(0.0f), 0, d);
}

/* conv_direct_forward_k3p16 for planes 8 wide, one image's padded input
 * (conv_pad_k3_h16; launched per image).  Output vector v of a work-item
 * holds rows y0 + 2v and y0 + 2v + 1; for kernel row ky it meets the input
 * vector t = 2v + ky (padded row y0 + t), so that per channel and kx the
 * 2 V + 1 vectors are loaded once for 3 V COB FMAs.
 * global (ceil(Cout / COB), 1, ceil(OH / ROWS)). */
__kernel void conv_direct_forward_k3h16(TT_MEM(float, out), TT_MEM(const float, inp),
                                        TT_MEM(const float, weight), TT_MEM(const float, bias),
                                        const int has_bias, const int accumulate, TT_GEOMETRY,
                                        const int plane_rows)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int co0 = get_global_id(0) * TT_W16_COB, y0 = get_global_id(2) * TT_W16_ROWS;
    if (co0 >= Cout || y0 >= OH) return;
    const int last = min(TT_W16_COB, Cout - co0) - 1;
    float16 acc[TT_W16_COB][H16_VECTORS];
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++)
        TT_UNROLL
        for (int v = 0; v < H16_VECTORS; v++) acc[j][v] = (float16)(0.0f);
    __global const float *wj[TT_W16_COB];
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++) wj[j] = weight + K16_CHANNEL_AT(co0 + min(j, last));
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *rows = inp + (size_t)ci * H16_PLANE(H) + 16 + y0 * 8 - 1;
        TT_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            float16 x[2 * H16_VECTORS + 1];
            TT_UNROLL
            for (int t = 0; t < 2 * H16_VECTORS + 1; t++)
                x[t] = k3h_mask(vload16(0, rows + t * 8 + kx), kx);
            TT_UNROLL
            for (int ky = 0; ky < 3; ky++)
                TT_UNROLL
                for (int j = 0; j < TT_W16_COB; j++) {
                    const float16 w = (float16)(wj[j][K16_TAP_AT(ci, ky * 3 + kx)]);
                    TT_UNROLL
                    for (int v = 0; v < H16_VECTORS; v++)
                        acc[j][v] = fma(x[2 * v + ky], w, acc[j][v]);
                }
        }
    }
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++) {
        const float16 b = (float16)(has_bias && j <= last ? bias[co0 + j] : 0.0f);
        TT_UNROLL
        for (int v = 0; v < H16_VECTORS; v++) {
            const int y = y0 + 2 * v;
            if (j > last || y >= OH) continue;
            __global float *o = out + ((size_t)(co0 + j) * plane_rows + y) * 8;
            const float16 sum = acc[j][v] + b;
            if (y + 1 < OH) {
                vstore16((accumulate ? vload16(0, o) : (float16)(0.0f)) + sum, 0, o);
            } else { /* the last row of an odd plane */
                vstore8((accumulate ? vload8(0, o) : (float8)(0.0f)) + sum.lo, 0, o);
            }
        }
    }
}

/* conv_direct_backward_weight_k3p16 for planes 8 wide, from the padded
 * input of conv_pad_k3_h16: a dout vector holds rows oy and oy + 1 (its
 * upper half 0 where oy + 1 is past the band) and meets, for kernel row
 * ky, the input vector of padded row oy + ky. */
__kernel void conv_direct_backward_weight_k3h16(TT_MEM(float, partial), TT_MEM(const float, dout),
                                                TT_MEM(const float, padded),
                                                const int images_per_band,
                                                const int bands_per_image, const int band_rows,
                                                TT_GEOMETRY, const int plane_rows)
{
    K16_WEIGHT_BEGIN;
    for (int n = n0; n < n1; n++) {
        __global const float *plane = padded + ((size_t)n * Cin + ci) * H16_PLANE(H) + 16 - 1;
        __global const float *dplane[TT_W16_WCOB];
        TT_UNROLL
        for (int j = 0; j < TT_W16_WCOB; j++)
            dplane[j] = dout + ((size_t)n * Cout + co0 + min(j, last)) * plane_rows * 8;
        for (int oy = r0; oy < r1; oy += 2) {
            float16 d[TT_W16_WCOB];
            TT_UNROLL
            for (int j = 0; j < TT_W16_WCOB; j++) {
                __global const float *p = dplane[j] + (size_t)oy * 8;
                d[j] = oy + 1 < r1 ? vload16(0, p) : (float16)(vload8(0, p), (float8)(0.0f));
            }
            TT_UNROLL
            for (int ky = 0; ky < 3; ky++)
                TT_UNROLL
                for (int kx = 0; kx < 3; kx++) {
                    const float16 x = k3h_mask(vload16(0, plane + (oy + ky) * 8 + kx), kx);
                    TT_UNROLL
                    for (int j = 0; j < TT_W16_WCOB; j++)
                        acc[j][ky][kx] = fma(d[j], x, acc[j][ky][kx]);
                }
        }
    }
    k16_store_taps(partial, acc, b, Cout, Cin, co0, ci, last);
}

/* ---- 3x3, stride 2, padding 1: the ResNet encoder's down-sampling -------
 * The padded copy (conv_pad_k3s2_w16) splits each input row into its even
 * and odd columns, so that every tap of 16 neighbouring outputs is one
 * plain vector load: output column x reads input columns 2x - 1, 2x and
 * 2x + 1 (kx = 0, 1, 2), that is O[x], E[x] and O[x + 1] with E[x] =
 * in[2x] and O[x] = in[2x - 1] (O[0] and what lies past the row: the
 * padding's zeros).  A padded row is E (S16(OW) floats), then O (S16(OW) +
 * 16 floats); padded row r is input row r - 1, S2_ROWS(OH) rows, so that
 * the last block of TT_W16_ROWS output rows reads inside the plane; 16
 * zeros after the last row. */
#define S16(OW) (((OW) + 15) / 16 * 16)
#define S2_PITCH(OW) (2 * S16(OW) + 16)
#define S2_ROWS(OH) (2 * (((OH) + TT_W16_ROWS - 1) / TT_W16_ROWS * TT_W16_ROWS) + 1)
#define S2_PLANE(OH, OW) (S2_ROWS(OH) * S2_PITCH(OW) + 16)

/* dst: `planes` planes (H, W) of src in the layout above, for an output of
 * OH x OW.  global (S2_ROWS(OH) + 1, planes): padded row r, a work-item
 * each (r = S2_ROWS(OH): the 16 zeros at the end). */
__kernel void conv_pad_k3s2_w16(TT_MEM(float, dst), TT_MEM(const float, src), const int planes,
                                const int H, const int W, const int OH, const int OW)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int r = get_global_id(0), plane = get_global_id(1);
    if (r > S2_ROWS(OH) || plane >= planes) return;
    __global float *d = dst + (size_t)plane * S2_PLANE(OH, OW) + (size_t)r * S2_PITCH(OW);
    if (r == S2_ROWS(OH)) {
        vstore16((float16)(0.0f), 0, d);
        return;
    }
    __global float *e = d, *o = d + S16(OW);
    if (r == 0 || r > H) {
        for (int x = 0; x < S2_PITCH(OW); x += 16) vstore16((float16)(0.0f), 0, d + x);
        return;
    }
    __global const float *row = src + ((size_t)plane * H + r - 1) * W;
    int x = 0;
    o[0] = 0.0f;
    for (; 2 * x + 32 <= W; x += 16) { /* E[x..x+15], O[x+1..x+16] */
        const float16 a = vload16(0, row + 2 * x), b = vload16(0, row + 2 * x + 16);
        vstore16((float16)(a.even, b.even), 0, e + x);
        vstore16((float16)(a.odd, b.odd), 0, o + x + 1);
    }
    for (; x < S16(OW) + 15; x++) {
        if (x < S16(OW)) e[x] = 2 * x < W ? row[2 * x] : 0.0f;
        o[x + 1] = 2 * x + 1 < W ? row[2 * x + 1] : 0.0f;
    }
}

/* conv_direct_forward_k3p16 for stride 2: one image's padded input
 * (conv_pad_k3s2_w16; the host launches it per image).  Per input channel
 * the 2 ROWS + 1 padded rows from 2 y0 are loaded once at each kx and meet
 * every output row r they reach (ky = i - 2 r).
 * global (ceil(Cout / COB), ceil(OW / 16), ceil(OH / ROWS)). */
__kernel void conv_direct_forward_k3s2p16(TT_MEM(float, out), TT_MEM(const float, inp),
                                          TT_MEM(const float, weight), TT_MEM(const float, bias),
                                          const int has_bias, const int accumulate, TT_GEOMETRY,
                                          const int plane_rows)
{
    K16_FORWARD_BEGIN;
    const int S = S2_PITCH(OW);
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *rows = inp + (size_t)ci * S2_PLANE(OH, OW) + (size_t)(2 * y0) * S + x0;
        TT_UNROLL
        for (int i = 0; i < 2 * TT_W16_ROWS + 1; i++) {
            float16 x[3];
            x[0] = vload16(0, rows + i * S + S16(OW));
            x[1] = vload16(0, rows + i * S);
            x[2] = vload16(0, rows + i * S + S16(OW) + 1);
            TT_UNROLL
            for (int r = 0; r < TT_W16_ROWS; r++) {
                const int ky = i - 2 * r;
                if (ky < 0 || ky > 2) continue;
                TT_UNROLL
                for (int kx = 0; kx < 3; kx++)
                    TT_UNROLL
                    for (int j = 0; j < TT_W16_COB; j++)
                        acc[j][r] = fma(x[kx], (float16)(wj[j][K16_TAP_AT(ci, ky * 3 + kx)]),
                                        acc[j][r]);
            }
        }
    }
    k16_store_rows(out, acc, bias, has_bias, accumulate, co0, last, y0, x0, OH, OW,
                   plane_rows);
}

/* The weight gradient of the stride-2 3x3 as conv_direct_backward_weight_k3p16
 * over bands, from conv_pad_k3s2_w16's copy of the band's images: output
 * row oy meets padded rows 2 oy + ky, and per kernel row the three column
 * taps are the plain loads O[x], E[x], O[x + 1].  dout is read 8 columns at
 * a row's end where OW % 16 == 8 (k16_dout), so the lanes past it add 0.
 * global (ceil(Cout / WCOB) Cin, bands per image), work-groups of one. */
__kernel void conv_direct_backward_weight_k3s2p16(TT_MEM(float, partial),
                                                  TT_MEM(const float, dout),
                                                  TT_MEM(const float, padded),
                                                  const int images_per_band,
                                                  const int bands_per_image, const int band_rows,
                                                  TT_GEOMETRY, const int plane_rows)
{
    K16_WEIGHT_BEGIN;
    const int S = S2_PITCH(OW), E16 = S16(OW);
    for (int n = n0; n < n1; n++) {
        __global const float *plane =
            padded + ((size_t)(n - n0) * Cin + ci) * S2_PLANE(OH, OW);
        __global const float *dplane[TT_W16_WCOB];
        TT_UNROLL
        for (int j = 0; j < TT_W16_WCOB; j++)
            dplane[j] =
                dout + ((size_t)(n - n0) * Cout + co0 + min(j, last)) * plane_rows * OW;
        for (int oy = r0; oy < r1; oy++) {
            __global const float *row = plane + (size_t)(2 * oy) * S;
            for (int x0 = 0; x0 < OW; x0 += 16) {
                float16 d[TT_W16_WCOB];
                TT_UNROLL
                for (int j = 0; j < TT_W16_WCOB; j++)
                    d[j] = k16_dout(dplane[j] + (size_t)oy * OW, x0, OW);
                TT_UNROLL
                for (int ky = 0; ky < 3; ky++) {
                    __global const float *r = row + ky * S + x0;
                    const float16 x[3] = {vload16(0, r + E16), vload16(0, r), vload16(0, r + E16 + 1)};
                    TT_UNROLL
                    for (int kx = 0; kx < 3; kx++)
                        TT_UNROLL
                        for (int j = 0; j < TT_W16_WCOB; j++)
                            acc[j][ky][kx] = fma(d[j], x[kx], acc[j][ky][kx]);
                }
            }
        }
    }
    k16_store_taps(partial, acc, b, Cout, Cin, co0, ci, last);
}

/* ---- the input gradient of the stride-2 3x3 (padding 1, even planes) ----
 * Input pixel (2m + a, 2x + b) meets output pixel (m + i, x + j) through
 * tap (1 + a - 2i, 1 + b - 2j) (i, j in {0, 1}, taps inside 0..2): one tap
 * for the even-even pixels, two for even-odd and odd-even, four for
 * odd-odd, nine for the four.  A work-item takes TT_W16_DCIB input channels
 * and the four pixels of 16 neighbouring (m, x): output rows m and m + 1,
 * each at columns x0.. and x0 + 1.. (zero past the plane), and writes
 * rows 2m and 2m + 1 at columns 2 x0 .. 2 x0 + 31, even and odd
 * interleaved.  Needs H = 2 OH, W = 2 OW.
 * global (ceil(OW / 16), OH, N ceil(Cin / TT_W16_DCIB)). */

/* Floats x .. x + 15 of a row of `width`, zero past it. */
TT_INLINE float16 s2d_load(__global const float *row, const int x, const int width)
{
    if (x + 16 <= width) return vload16(0, row + x);
    float t[16];
    for (int l = 0; l < 16; l++) t[l] = x + l < width ? row[x + l] : 0.0f;
    return vload16(0, t);
}

/* Row `at` (+)= even and odd columns e, o interleaved from column 2 x0, up
 * to `width`. */
TT_INLINE void s2d_store(__global float *at, const float16 e, const float16 o, const int x0,
                      const int width, const int accumulate)
{
    const float16 lo = shuffle2(e, o, (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22,
                                               7, 23));
    const float16 hi = shuffle2(e, o, (uint16)(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29,
                                               14, 30, 15, 31));
    __global float *p = at + 2 * x0;
    if (2 * x0 + 32 <= width) {
        vstore16(accumulate ? vload16(0, p) + lo : lo, 0, p);
        vstore16(accumulate ? vload16(1, p) + hi : hi, 1, p);
        return;
    }
    float t[32];
    vstore16(lo, 0, t);
    vstore16(hi, 1, t);
    for (int l = 0; 2 * x0 + l < width; l++) p[l] = accumulate ? p[l] + t[l] : t[l];
}

__kernel void conv_direct_backward_data_k3s2p16(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                                TT_MEM(const float, weight),
                                                const int accumulate, TT_GEOMETRY)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int x0 = 16 * get_global_id(0), m = get_global_id(1);
    const int blocks = (Cin + TT_W16_DCIB - 1) / TT_W16_DCIB;
    const int n = get_global_id(2) / blocks, ci0 = TT_W16_DCIB * (get_global_id(2) % blocks);
    if (x0 >= OW || m >= OH || n >= N) return;
    const int next = m + 1 < OH; /* output row m + 1 inside the plane */
    /* ee, eo: row 2m at even and odd columns; oe, oo: row 2m + 1 */
    float16 ee[TT_W16_DCIB], eo[TT_W16_DCIB], oe[TT_W16_DCIB], oo[TT_W16_DCIB];
    TT_UNROLL
    for (int c = 0; c < TT_W16_DCIB; c++) ee[c] = eo[c] = oe[c] = oo[c] = (float16)(0.0f);
    __global const float *d = dout + ((size_t)n * Cout * OH + m) * OW;
    for (int co = 0; co < Cout; co++, d += (size_t)OH * OW) {
        const float16 a = s2d_load(d, x0, OW), an = s2d_load(d, x0 + 1, OW);
        const float16 b = next ? s2d_load(d + OW, x0, OW) : (float16)(0.0f);
        const float16 bn = next ? s2d_load(d + OW, x0 + 1, OW) : (float16)(0.0f);
        __global const float *w = weight + ((size_t)co * Cin + ci0) * 9;
        TT_UNROLL
        for (int c = 0; c < TT_W16_DCIB; c++) {
            __global const float *t = w + (ci0 + c < Cin ? c : 0) * 9;
            ee[c] = fma(a, (float16)(t[4]), ee[c]);
            eo[c] = fma(an, (float16)(t[3]), fma(a, (float16)(t[5]), eo[c]));
            oe[c] = fma(b, (float16)(t[1]), fma(a, (float16)(t[7]), oe[c]));
            oo[c] = fma(bn, (float16)(t[0]), fma(b, (float16)(t[2]), oo[c]));
            oo[c] = fma(an, (float16)(t[6]), fma(a, (float16)(t[8]), oo[c]));
        }
    }
    TT_UNROLL
    for (int c = 0; c < TT_W16_DCIB; c++) {
        if (ci0 + c < Cin) {
            __global float *row = dinp + (((size_t)n * Cin + ci0 + c) * H + 2 * m) * W;
            s2d_store(row, ee[c], eo[c], x0, W, accumulate);
            s2d_store(row + W, oe[c], oo[c], x0, W, accumulate);
        }
    }
}

/* ---- 7x7, stride 2, padding 3: the ResNet stem's forward ----------------
 * A copy of each image split into even and odd columns as for the 3x3
 * (conv_pad_k7s2_w16), both two columns further right: E[j] = in[2j - 4],
 * O[j] = in[2j - 3], so that output column x's tap kx is O[x + kx / 2]
 * (kx even) or E[x + (kx + 1) / 2] (kx odd), plain loads.  A padded row
 * is E (S16(OW) + 16 floats) then O (as many); padded row r is input row
 * r - 3, S7_ROWS(OH) of them, so that a work-item's last rows read inside
 * the plane. */
#define S7_HALF(OW) (S16(OW) + 16)
#define S7_PITCH(OW) (2 * S7_HALF(OW))
#define S7_ROWS(OH) (2 * (((OH) + TT_W16_ROWS - 1) / TT_W16_ROWS * TT_W16_ROWS) + 5)
#define S7_PLANE(OH, OW) (S7_ROWS(OH) * S7_PITCH(OW))

/* dst: `planes` planes (H, W) of src in the layout above.
 * global (S7_ROWS(OH), planes): a padded row a work-item. */
__kernel void conv_pad_k7s2_w16(TT_MEM(float, dst), TT_MEM(const float, src), const int planes,
                                const int H, const int W, const int OH, const int OW)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int r = get_global_id(0), plane = get_global_id(1);
    if (r >= S7_ROWS(OH) || plane >= planes) return;
    __global float *e = dst + (size_t)plane * S7_PLANE(OH, OW) + (size_t)r * S7_PITCH(OW);
    __global float *o = e + S7_HALF(OW);
    const int y = r - 3, inside = y >= 0 && y < H;
    __global const float *row = src + ((size_t)plane * H + (inside ? y : 0)) * W;
    for (int j = 0; j < S7_HALF(OW); j++) {
        const int xe = 2 * j - 4, xo = 2 * j - 3;
        e[j] = inside && xe >= 0 && xe < W ? row[xe] : 0.0f;
        o[j] = inside && xo >= 0 && xo < W ? row[xo] : 0.0f;
    }
}

/* out (+)= the 7x7 stride-2 correlation of one image's copy
 * (conv_pad_k7s2_w16; the host launches it per image) with weight (Cout,
 * Cin, 7, 7) (+ bias): TT_W16_COB channels, 16 columns and TT_W16_ROWS
 * rows a work-item; per input channel each of the 2 ROWS + 5 padded rows
 * from 2 y0 is loaded once at its seven shifts and meets every output row
 * r it reaches (ky = i - 2 r).
 * global (ceil(Cout / COB), ceil(OW / 16), ceil(OH / ROWS)). */
__kernel void conv_direct_forward_k7s2p16(TT_MEM(float, out), TT_MEM(const float, inp),
                                          TT_MEM(const float, weight), TT_MEM(const float, bias),
                                          const int has_bias, const int accumulate, TT_GEOMETRY,
                                          const int plane_rows)
{
    K16_FORWARD_BEGIN;
    TT_UNROLL
    for (int j = 0; j < TT_W16_COB; j++) /* 49 taps a channel pair, not 9 */
        wj[j] = weight + (size_t)(co0 + min(j, last)) * Cin * 49;
    const int S = S7_PITCH(OW), odd = S7_HALF(OW);
    for (int ci = 0; ci < Cin; ci++) {
        __global const float *rows =
            inp + (size_t)ci * S7_PLANE(OH, OW) + (size_t)(2 * y0) * S + x0;
        for (int i = 0; i < 2 * TT_W16_ROWS + 5; i++) {
            __global const float *e = rows + i * S, *o = e + odd;
            float16 x[7];
            TT_UNROLL
            for (int kx = 0; kx < 7; kx++)
                x[kx] = kx % 2 ? vload16(0, e + (kx + 1) / 2) : vload16(0, o + kx / 2);
            TT_UNROLL
            for (int r = 0; r < TT_W16_ROWS; r++) {
                const int ky = i - 2 * r;
                if (ky < 0 || ky > 6) continue;
                TT_UNROLL
                for (int kx = 0; kx < 7; kx++)
                    TT_UNROLL
                    for (int j = 0; j < TT_W16_COB; j++)
                        acc[j][r] = fma(x[kx], (float16)(wj[j][ci * 49 + ky * 7 + kx]), acc[j][r]);
            }
        }
    }
    k16_store_rows(out, acc, bias, has_bias, accumulate, co0, last, y0, x0, OH, OW, plane_rows);
}

/* dweight[i] += sum over the bands of partial[b count + i], i < count;
 * 8 consecutive i a work-item, so that each band's cache lines are read
 * whole (one float a work-item re-reads every line from L3 once per
 * float). */
__kernel void conv_direct_weight_bands_sum(TT_MEM(float, dweight), TT_MEM(const float, partial),
                                           const int bands, const int count)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, partial);
    const int i0 = get_global_id(0) * 8;
    if (i0 >= count) return;
    if (i0 + 8 <= count) {
        float8 sum = (float8)(0.0f);
        for (int b = 0; b < bands; b++) sum += vload8(0, partial + (size_t)b * count + i0);
        vstore8(vload8(0, dweight + i0) + sum, 0, dweight + i0);
        return;
    }
    for (int i = i0; i < count; i++) {
        float sum = 0.0f;
        for (int b = 0; b < bands; b++) sum += partial[(size_t)b * count + i];
        dweight[i] += sum;
    }
}
