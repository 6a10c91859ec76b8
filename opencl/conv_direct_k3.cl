/*
 * The UNet's 3x3 convolution (stride 1, padding 1, dilation 1) for CPUs
 * through OpenCL, 8 columns a work-item as float8 (src/ops/conv_direct.c
 * launches them where the device's direct variant is w8): the forward
 * (also the input gradient, over dout with conv_weight_flip3's weights),
 * staged through local memory on large planes or from a padded copy
 * (conv_pad_k3) on narrow ones, and the weight gradient over bands of rows
 * (conv_direct_weight_bands_sum adds the bands; the 16-wide kernels of
 * conv_direct_w16.cl use it too).  OpenCL's alone: lavapipe, the CPU
 * device of Vulkan, runs conv_direct's scalar shaders 3.6 times faster
 * than these ported (docs/backend.md), and GPUs take the tiled ones.
 *
 * Sizes the host passes as -D defines (src/ops/conv_direct.c,
 * K3_OPTIONS); there are no defaults here:
 *   TT_DIRECT_ROWS   output rows per work-item
 *   TT_DIRECT_K3_COB output channels per work-item
 *   TT_DIRECT_K3_CHUNKS  column chunks of 8 per work-group (forward)
 */
#if !defined(TT_DIRECT_ROWS) || !defined(TT_DIRECT_K3_COB) || !defined(TT_DIRECT_K3_CHUNKS)
#error "conv_direct_k3.cl: every TT_DIRECT_* size comes from the host (src/ops/conv_direct.c)"
#endif

/* conv_direct_forward_w8 for the UNet's 3x3, stride 1, padding 1,
 * dilation 1 convolution, with the geometry compiled in: each work-item
 * takes 8 columns of TT_DIRECT_ROWS rows for TT_DIRECT_K3_COB output
 * channels.  Per input channel it walks the ROWS + 2 input rows it needs,
 * loads each row's three shifted vectors once and feeds them to every
 * output row and channel they meet: 8 accumulators + 3 inputs + 1 weight
 * with 2 rows and 4 channels.  (Walking kernel rows instead, with the two
 * output rows' six inputs live at once, let the compiler keep all 12 loads
 * of a channel and spill them.)
 * Every loop is unrolled (opencl_unroll_hint: PoCL's compiler kept them as
 * loops, the accumulators and inputs in memory).
 * global (ceil(Cout / K3_COB), ceil(OW / 8), N * ceil(OH / ROWS)): the
 * channel blocks of one place run one after the other (dimension 0 first),
 * while the input rows they all read are in cache; from 1024x1024 an
 * image's input no longer fits the cache, and reading it once per block
 * is slower per pixel (the staged variant below serves those planes). */
/* The three shifted vectors of a 3x3 kernel's row p around columns x0 ..
 * x0 + 7 (kx = 0, 1, 2: columns from x0 - 1 + kx): plain loads inside the
 * row; at its left (x0 = 0) or right (x0 + 8 = w) edge the vector that
 * would reach past it is the middle one shifted, with the padding's 0. */
#define K3_LOAD_MID(p, kx) vload8(0, (p) + x0 - 1 + (kx))
#define K3_LOAD_LEFT(p, kx) ((kx) == 0 ? tt_shift_in8(vload8(0, (p) + x0)) : K3_LOAD_MID(p, kx))
#define K3_LOAD_RIGHT(p, kx) ((kx) == 2 ? tt_shift_out8(vload8(0, (p) + x0)) : K3_LOAD_MID(p, kx))
/* Both 3x3 forward kernels: the accumulators of K3_COB channels from co0
 * by ROWS rows, and each channel's weights (the last real channel again
 * for channels past Cout, which are never stored). */
#define K3_ACCUMULATORS                                                                    \
    const int last = clamp(Cout - co0, 1, TT_DIRECT_K3_COB) - 1;                           \
    float8 acc[TT_DIRECT_K3_COB][TT_DIRECT_ROWS];                                          \
    __attribute__((opencl_unroll_hint))                                                    \
    for (int j = 0; j < TT_DIRECT_K3_COB; j++)                                             \
        __attribute__((opencl_unroll_hint))                                                \
        for (int r = 0; r < TT_DIRECT_ROWS; r++) acc[j][r] = (float8)(0.0f);               \
    __global const float *wj[TT_DIRECT_K3_COB];                                            \
    __attribute__((opencl_unroll_hint))                                                    \
    for (int j = 0; j < TT_DIRECT_K3_COB; j++)                                             \
        wj[j] = weight + (size_t)min(co0 + min(j, last), Cout - 1) * Cin * 9
/* acc += input row i (of y0 - 1 .. y0 + ROWS) of channel ci, given as its
 * three shifted vectors x[3], times the weights of every output row and
 * channel it meets. */
#define K3_ROW(x, ci, i)                                                                   \
    __attribute__((opencl_unroll_hint))                                                    \
    for (int r = 0; r < TT_DIRECT_ROWS; r++) {                                             \
        const int ky = (i) - r;                                                            \
        if (ky < 0 || ky > 2) continue;                                                    \
        __attribute__((opencl_unroll_hint))                                                \
        for (int j = 0; j < TT_DIRECT_K3_COB; j++) {                                       \
            __global const float *w = wj[j] + (ci) * 9 + ky * 3;                           \
            __attribute__((opencl_unroll_hint))                                            \
            for (int kx = 0; kx < 3; kx++) acc[j][r] = fma(x[kx], (float8)(w[kx]), acc[j][r]); \
        }                                                                                  \
    }
/* out (+)= acc + bias, the rows and channels inside. */
#define K3_STORE                                                                           \
    for (int j = 0; j <= last; j++) {                                                      \
        const float8 b = (float8)(has_bias ? bias[co0 + j] : 0.0f);                        \
        for (int r = 0; r < TT_DIRECT_ROWS && y0 + r < OH; r++) {                          \
            __global float *orow = out + (((size_t)n * Cout + co0 + j) * OH + y0 + r) * OW; \
            tt_store8(orow, x0, OW, acc[j][r] + b, accumulate);                            \
        }                                                                                  \
    }
__kernel void conv_direct_forward_k3(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    const int co0 = get_global_id(0) * TT_DIRECT_K3_COB, x0 = get_global_id(1) * 8;
    const int row_blocks = (OH + TT_DIRECT_ROWS - 1) / TT_DIRECT_ROWS;
    const int n = get_global_id(2) / row_blocks;
    const int y0 = get_global_id(2) % row_blocks * TT_DIRECT_ROWS;
    if (co0 >= Cout || x0 >= OW || n >= N) return;
    K3_ACCUMULATORS;
    /* Input rows y0 - 1 .. y0 + ROWS, three shifts each: plain loads where
     * the work-item's whole window is inside the image (all but the border
     * ones), zero-padded ones otherwise. */
#define K3_CHANNELS(LOAD)                                                                  \
    for (int ci = 0; ci < Cin; ci++) {                                                     \
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;                \
        __attribute__((opencl_unroll_hint))                                                \
        for (int i = 0; i < TT_DIRECT_ROWS + 2; i++) {                                     \
            const int iy = y0 - 1 + i;                                                     \
            float8 x[3];                                                                   \
            __attribute__((opencl_unroll_hint))                                            \
            for (int kx = 0; kx < 3; kx++) x[kx] = LOAD;                                   \
            K3_ROW(x, ci, i)                                                               \
        }                                                                                  \
    }
    const int rows_inside = y0 >= 1 && y0 + TT_DIRECT_ROWS + 1 <= H;
    if (rows_inside && x0 >= 1 && x0 + 9 <= W) {
        K3_CHANNELS(K3_LOAD_MID(plane + iy * W, kx))
    } else if (rows_inside && x0 == 0 && W >= 9) {
        K3_CHANNELS(K3_LOAD_LEFT(plane + iy * W, kx))
    } else if (rows_inside && x0 >= 1 && x0 + 8 == W) {
        K3_CHANNELS(K3_LOAD_RIGHT(plane + iy * W, kx))
    } else {
        K3_CHANNELS(iy >= 0 && iy < H ? tt_load8(plane + iy * W, x0 - 1 + kx, W) : (float8)(0.0f))
    }
#undef K3_CHANNELS
    K3_STORE;
}

/* conv_direct_forward_k3 with the work-group's input staged in local
 * memory: work-group (blocks of K3_COB output channels, K3S_CHUNKS column
 * chunks of 8, one row block).  Per K3S_CH input channels it copies the
 * ROWS + 2 input rows around the row block, columns x - 1 .. x + 8 chunks,
 * with the padding's zeros, into one contiguous tile, then every
 * work-item computes from it with plain loads and no edge cases.  On a
 * CPU, planes whose size is a multiple of 64 KiB put the same column of
 * every channel and row in the same cache set: the blocks of a work-group
 * re-read their inputs from L3; the tile does not alias.  Launched as conv_direct_forward_k3, with
 * work-groups of (up to 4, K3S_CHUNKS, 1); every work-item reaches the
 * barriers, those past the edges store nothing. */
#define K3S_CHUNKS TT_DIRECT_K3_CHUNKS
#define K3S_CH 16
#define K3S_COLS (K3S_CHUNKS * 8 + 2)
#define K3S_ROWS (TT_DIRECT_ROWS + 2)
__kernel void conv_direct_forward_k3_staged(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    __local float tile[K3S_CH * K3S_ROWS * K3S_COLS];
    const int co0 = get_global_id(0) * TT_DIRECT_K3_COB, chunk = get_local_id(1);
    const int xs = get_group_id(1) * K3S_CHUNKS * 8, x0 = xs + chunk * 8;
    const int row_blocks = (OH + TT_DIRECT_ROWS - 1) / TT_DIRECT_ROWS;
    const int n = get_global_id(2) / row_blocks;
    const int y0 = get_global_id(2) % row_blocks * TT_DIRECT_ROWS;
    const int items = get_local_size(0) * K3S_CHUNKS;
    const int me = get_local_id(1) * get_local_size(0) + get_local_id(0);
    K3_ACCUMULATORS;
    for (int c0 = 0; c0 < Cin; c0 += K3S_CH) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last chunk's reads are done */
        for (int seg = me; seg < K3S_CH * K3S_ROWS; seg += items) {
            const int c = c0 + seg / K3S_ROWS, iy = y0 - 1 + seg % K3S_ROWS;
            __local float *t = tile + seg * K3S_COLS;
            if (c >= Cin || iy < 0 || iy >= H) {
                for (int k = 0; k < K3S_COLS; k++) t[k] = 0.0f;
                continue;
            }
            __global const float *row = inp + (((size_t)n * Cin + c) * H + iy) * W;
            t[0] = xs >= 1 ? row[xs - 1] : 0.0f;
            for (int k = 0; k < K3S_CHUNKS; k++) vstore8(tt_load8(row, xs + 8 * k, W), 0, t + 1 + 8 * k);
            t[K3S_COLS - 1] = xs + 8 * K3S_CHUNKS < W ? row[xs + 8 * K3S_CHUNKS] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(K3S_CH, Cin - c0);
        for (int c = 0; c < count; c++) {
            __local const float *t = tile + c * K3S_ROWS * K3S_COLS + chunk * 8;
            const int ci = c0 + c;
            __attribute__((opencl_unroll_hint))
            for (int i = 0; i < K3S_ROWS; i++) {
                float8 x[3];
                __attribute__((opencl_unroll_hint))
                for (int kx = 0; kx < 3; kx++) x[kx] = vload8(0, t + i * K3S_COLS + kx);
                K3_ROW(x, ci, i)
            }
        }
    }
    if (co0 >= Cout || x0 >= OW || n >= N) return;
    K3_STORE;
}

/* Both 3x3 weight-gradient kernels: work-item (pair, b) of the pair's
 * channels (co, ci), band b's images n0 .. n1 - 1 and rows r0 .. r1 - 1, and
 * the nine taps' accumulators; then their sums into partial. */
#define K3W_BAND                                                                             \
    const int pair = get_global_id(0), b = get_global_id(1), pairs = Cout * Cin;             \
    if (pair >= pairs) return;                                                               \
    const int ci = pair % Cin, co = pair / Cin;                                              \
    const int n0 = b / bands_per_image * images_per_band, n1 = min(N, n0 + images_per_band); \
    const int r0 = b % bands_per_image * band_rows, r1 = min(OH, r0 + band_rows);            \
    float8 acc[3][3];                                                                        \
    __attribute__((opencl_unroll_hint))                                                      \
    for (int ky = 0; ky < 3; ky++)                                                           \
        __attribute__((opencl_unroll_hint))                                                  \
        for (int kx = 0; kx < 3; kx++) acc[ky][kx] = (float8)(0.0f)
#define K3W_STORE                                                                            \
    __global float *out = partial + ((size_t)b * pairs + pair) * 9;                          \
    for (int ky = 0; ky < 3; ky++)                                                           \
        for (int kx = 0; kx < 3; kx++) {                                                     \
            const float4 h = acc[ky][kx].lo + acc[ky][kx].hi;                                \
            out[ky * 3 + kx] = h.x + h.y + h.z + h.w;                                        \
        }

/* conv_direct_backward_weight_w8 for the 3x3, stride 1, padding 1,
 * dilation 1 convolution, in two steps.  First the partial sums of bands:
 * work-item (pair, b) sums the nine taps of pair = co Cin + ci over band b
 * (images n0 .. n1 - 1, output rows r0 .. r1 - 1) into
 * partial[(b pairs + pair) 9 + tap]; then conv_direct_weight_bands_sum
 * adds the bands into dweight.  A band's dout and input rows fit in half an
 * L2 (the host sizes it), and the pairs run first (dimension 0), so every
 * pair reads the band from cache: summing each pair over whole planes
 * streamed 2 MB per pair from L3 at 256x256 and was bound by it.  Each
 * work-item holds all nine taps (9 float8 accumulators), so a dout vector
 * is loaded once and meets the three input rows around it.  Plain loads
 * away from the left and right edges; rows outside the image are skipped. */
__kernel void conv_direct_backward_weight_k3(TT_MEM(float, partial), TT_MEM(const float, dout),
                                             TT_MEM(const float, inp), const int images_per_band,
                                             const int bands_per_image, const int band_rows,
                                             TT_GEOMETRY)
{
    TT_PTR(float, partial);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    K3W_BAND;
    for (int n = n0; n < n1; n++) {
        __global const float *plane = inp + ((size_t)n * Cin + ci) * H * W;
        __global const float *dplane = dout + ((size_t)n * Cout + co) * OH * OW;
        for (int oy = r0; oy < r1; oy++) {
            __global const float *drow = dplane + (size_t)oy * OW;
            __global const float *row = plane + (size_t)(oy - 1) * W; /* input row oy - 1 + ky */
            const int ky0 = oy == 0 ? 1 : 0, ky1 = oy + 1 >= H ? 1 : 2;
#define K3W_COLUMNS(DOUT, LOAD, ALL_ROWS)                                                  \
    {                                                                                      \
        const float8 d = DOUT;                                                             \
        __attribute__((opencl_unroll_hint))                                                \
        for (int ky = 0; ky < 3; ky++) {                                                   \
            if (!ALL_ROWS && (ky < ky0 || ky > ky1)) continue;                             \
            __attribute__((opencl_unroll_hint))                                            \
            for (int kx = 0; kx < 3; kx++)                                                 \
                acc[ky][kx] = fma(d, LOAD(row + ky * W, kx), acc[ky][kx]);                 \
        }                                                                                  \
    }
#define K3W_LOAD_ANY(p, kx) tt_load8(p, x0 - 1 + (kx), W)
            int x0 = 0;
            if (ky0 == 0 && ky1 == 2 && W % 8 == 0 && W >= 16) {
                /* the three input rows inside the image, whole vectors */
                K3W_COLUMNS(vload8(0, drow + x0), K3_LOAD_LEFT, 1)
                for (x0 = 8; x0 + 8 < W; x0 += 8) K3W_COLUMNS(vload8(0, drow + x0), K3_LOAD_MID, 1)
                K3W_COLUMNS(vload8(0, drow + x0), K3_LOAD_RIGHT, 1)
            } else {
                for (; x0 < OW; x0 += 8) K3W_COLUMNS(tt_load8(drow, x0, OW), K3W_LOAD_ANY, 0)
            }
#undef K3W_LOAD_ANY
#undef K3W_COLUMNS
        }
    }
    K3W_STORE;
}

/* The input of conv_direct_forward_k3p and conv_direct_backward_weight_k3p
 * (src/ops/conv_direct.c says which planes): each plane (H, W), W a
 * multiple of 8, with its padding written out, rows of P = W + 8 floats:
 * 8 zeros, then the row (so that the right neighbour of the last column is
 * the next row's first zero), a row of zeros above and below, and 8 zeros
 * after the last (K3P_PLANE floats a plane, a multiple of 8).
 * global (H + 3, planes): row r of the padded plane, a work-item each (r =
 * H + 2: the 8 zeros at the end). */
#define K3P_PITCH(W) ((W) + 8)
#define K3P_PLANE(H, W) (((H) + 2) * K3P_PITCH(W) + 8)
__kernel void conv_pad_k3(TT_MEM(float, dst), TT_MEM(const float, src), const int planes,
                          const int H, const int W)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int r = get_global_id(0), plane = get_global_id(1);
    if (r > H + 2 || plane >= planes) return;
    __global float *d = dst + (size_t)plane * K3P_PLANE(H, W) + r * K3P_PITCH(W);
    vstore8((float8)(0.0f), 0, d);
    if (r == H + 2) return;
    if (r == 0 || r == H + 1) {
        for (int x0 = 0; x0 < W; x0 += 8) vstore8((float8)(0.0f), 0, d + 8 + x0);
        return;
    }
    __global const float *row = src + ((size_t)plane * H + r - 1) * W;
    for (int x0 = 0; x0 < W; x0 += 8) vstore8(vload8(0, row + x0), 0, d + 8 + x0);
}

/* conv_direct_forward_k3 reading one image's input padded by conv_pad_k3
 * (N = 1; the host launches it per image): every load is a plain one, and
 * the four kinds of work-item (inside, left edge, right edge, top or
 * bottom row), which dominate small planes, are one.  W % 8 == 0 and OH % ROWS == 0 (the rows read stay in the
 * padded plane). */
__kernel void conv_direct_forward_k3p(TT_FORWARD_ARGS)
{
    TT_FORWARD_PTRS;
    const int co0 = get_global_id(0) * TT_DIRECT_K3_COB, x0 = get_global_id(1) * 8;
    const int y0 = get_global_id(2) * TT_DIRECT_ROWS, n = 0, P = K3P_PITCH(W);
    if (co0 >= Cout || x0 >= OW || y0 >= OH) return;
    K3_ACCUMULATORS;
    for (int ci = 0; ci < Cin; ci++) {
        /* padded row y0 + i is input row y0 - 1 + i; columns from -1 */
        __global const float *rows = inp + (size_t)ci * K3P_PLANE(H, W) + (size_t)y0 * P + 7 + x0;
        __attribute__((opencl_unroll_hint))
        for (int i = 0; i < TT_DIRECT_ROWS + 2; i++) {
            float8 x[3];
            __attribute__((opencl_unroll_hint))
            for (int kx = 0; kx < 3; kx++) x[kx] = vload8(0, rows + i * P + kx);
            K3_ROW(x, ci, i)
        }
    }
    K3_STORE;
}

/* conv_direct_backward_weight_k3 reading the padded input of conv_pad_k3:
 * no edge cases, so every row is the same loop of plain loads (the edge
 * vectors' shuffles and the first and last rows' lane-by-lane loads
 * dominate small planes).  W % 8 == 0. */
__kernel void conv_direct_backward_weight_k3p(TT_MEM(float, partial), TT_MEM(const float, dout),
                                              TT_MEM(const float, padded),
                                              const int images_per_band, const int bands_per_image,
                                              const int band_rows, TT_GEOMETRY)
{
    TT_PTR(float, partial);
    TT_PTR(const float, dout);
    TT_PTR(const float, padded);
    K3W_BAND;
    const int P = K3P_PITCH(W);
    for (int n = n0; n < n1; n++) {
        /* padded row oy + ky is input row oy - 1 + ky; columns from -1 */
        __global const float *plane = padded + ((size_t)n * Cin + ci) * K3P_PLANE(H, W) + 7;
        __global const float *dplane = dout + ((size_t)n * Cout + co) * OH * OW;
        int oy = r0;
        /* two output rows at a time: each of the four input rows' vectors
         * is loaded once for both (12 loads, 18 FMAs, not 18 and 18) */
        for (; oy + 1 < r1; oy += 2) {
            __global const float *drow = dplane + (size_t)oy * OW;
            __global const float *row = plane + (size_t)oy * P;
            for (int x0 = 0; x0 < OW; x0 += 8) {
                const float8 d0 = vload8(0, drow + x0), d1 = vload8(0, drow + OW + x0);
                __attribute__((opencl_unroll_hint))
                for (int i = 0; i < 4; i++)
                    __attribute__((opencl_unroll_hint))
                    for (int kx = 0; kx < 3; kx++) {
                        const float8 x = vload8(0, row + i * P + x0 + kx);
                        if (i < 3) acc[i][kx] = fma(d0, x, acc[i][kx]);
                        if (i > 0) acc[i - 1][kx] = fma(d1, x, acc[i - 1][kx]);
                    }
            }
        }
        if (oy < r1) {
            __global const float *drow = dplane + (size_t)oy * OW;
            __global const float *row = plane + (size_t)oy * P;
            for (int x0 = 0; x0 < OW; x0 += 8) {
                const float8 d = vload8(0, drow + x0);
                __attribute__((opencl_unroll_hint))
                for (int ky = 0; ky < 3; ky++)
                    __attribute__((opencl_unroll_hint))
                    for (int kx = 0; kx < 3; kx++)
                        acc[ky][kx] = fma(d, vload8(0, row + ky * P + x0 + kx), acc[ky][kx]);
            }
        }
    }
    K3W_STORE;
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

/* dst (Cin, Cout, 3, 3) = src (Cout, Cin, 3, 3) with ci and co swapped and
 * the taps reversed: the weights of the 3x3 convolution whose output is
 * conv_direct_forward_k3's input gradient (stride 1, padding 1). */
__kernel void conv_weight_flip3(TT_MEM(float, dst), TT_MEM(const float, src), const int Cout,
                                const int Cin)
{
    TT_PTR(float, dst);
    TT_PTR(const float, src);
    const int i = get_global_id(0);
    if (i >= Cout * Cin * 9) return;
    const int t = i % 9, co = (i / 9) % Cout, ci = i / 9 / Cout;
    dst[i] = src[((size_t)co * Cin + ci) * 9 + 8 - t];
}
