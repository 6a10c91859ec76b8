/*
 * Implicit-GEMM convolution (src/ops/conv_igemm.c), NCHW, any kernel,
 * stride, padding, dilation and groups, no column buffer: each work-group
 * computes a tile of a GEMM whose B operand (the im2col columns) it gathers
 * straight from the image into local memory, a chunk of the K dimension at
 * a time.
 *
 *   forward          out[co, p] (+)= sum_k weight[co, k] cols(inp)[k, p]
 *   backward data    the same product over the input's pixels, gathered
 *                    from dout: dinp[ci, y, x] += sum over co and the taps
 *                    (ky, kx) that reach (y, x) of weight[co, ci, ky, kx]
 *                    dout[co, (y + pH - ky dH) / sH, ...].  With a stride,
 *                    the pixels of one phase (y mod sH, x mod sW) share
 *                    their taps: the host launches once per phase, so no
 *                    product is of a zero and nothing is written twice (no
 *                    atomics)
 *   backward weight  dweight[co, k] (+)= sum over n, p of dout[co, p]
 *                    cols(inp)[k, p]: the reduction over the pixels split
 *                    into slices, each a work-group's; with several slices
 *                    their sums go to a workspace and conv_igemm_sum_slices
 *                    adds them in slice order (deterministic: no float
 *                    atomics)
 *
 * Work-group (NT, MT): the tile is BM = MT * RM rows by BN = NT * RN
 * columns; work-item (tx, ty) keeps RM rows by RN neighbouring columns (a
 * vector) in registers.  Per chunk of BK: the work-group loads the A tile
 * (BK x BM) and the B tile (BK x BN) into local memory, one barrier, the
 * products, another barrier; loads outside the matrices are zeros, so the
 * products have no branches.  NT and MT come from the launch (powers of
 * two); the sizes below from the host as -D defines (no defaults here):
 *   TT_IG_RM  rows per work-item (1 .. 8)
 *   TT_IG_RN  columns per work-item: 4, 8 or 16 (a float4, float8 or float16)
 *   TT_IG_BK  K (or pixels, for the weight gradient) per chunk; a power of two,
 *             at least RN
 * The local arguments hold BK * BM (tile_a) and BK * BN (tile_b) floats.
 *
 * Only the hot loops are unrolled (the products, the vector gathers of a
 * run and the weight gradient's transposing store, whose private array
 * stays in registers only while every index into it is known); the
 * element-by-element gathers at the matrices' edges and the forward's and
 * input gradient's final stores are rolled ("#pragma unroll 1"):
 * unrolled, their RM x RN copies multiplied the time PoCL takes to
 * compile this program several times over.
 */
#if !defined(TT_IG_RM) || !defined(TT_IG_RN) || !defined(TT_IG_BK)
#error "conv_igemm.cl: TT_IG_RM, TT_IG_RN and TT_IG_BK come from the host (src/ops/conv_igemm.c)"
#endif
#if TT_IG_RN == 16
typedef float16 ig_vec;
#define IG_LOAD(p) vload16(0, (p))
#define IG_STORE(v, p) vstore16((v), 0, (p))
#define IG_LOAD_EVEN(p) (float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even)
#elif TT_IG_RN == 8
typedef float8 ig_vec;
#define IG_LOAD(p) vload8(0, (p))
#define IG_STORE(v, p) vstore8((v), 0, (p))
#define IG_LOAD_EVEN(p) vload16(0, (p)).even
#elif TT_IG_RN == 4
typedef float4 ig_vec;
#define IG_LOAD(p) vload4(0, (p))
#define IG_STORE(v, p) vstore4((v), 0, (p))
#define IG_LOAD_EVEN(p) vload8(0, (p)).even
#else
#error "conv_igemm.cl: TT_IG_RN is 4, 8 or 16"
#endif
/* IG_LOAD_EVEN(p): p[0], p[2], .. p[2 RN - 2], from 2 RN floats at p (stride 2) */
#define RM TT_IG_RM
#define RN TT_IG_RN
#define BK TT_IG_BK

/* common.cl's geometry and the groups */
#define TT_IG_GEOMETRY TT_GEOMETRY, const int G

/* One product of forward or backward data, in the terms of the gather:
 *   rows m < M of a group (output channels of the product),
 *   K = C * taps_y * taps_x: k = (c, jy, jx), c a source channel of the group,
 *   pixels (n, py, px) of a grid_h x grid_w grid per image,
 *   source src[(n src_c + g C + c) src_h src_w + y src_w + x] with
 *     y = py pix_sy + pix_oy + jy tap_sy (x likewise), zero outside,
 *   destination dst[(n dst_c + g M + m) dst_h dst_w + (py dst_sy + dst_oy)
 *     dst_w + px dst_sx + dst_ox],
 *   weight[g w_group + m wm + c wc + (ty0 + jy tsy) kw + tx0 + jx tsx]. */
typedef struct ig_product {
    int batch, M, C, taps_y, taps_x, grid_h, grid_w;
    int src_c, src_h, src_w, dst_c, dst_h, dst_w;
    int pix_sy, pix_sx, pix_oy, pix_ox, tap_sy, tap_sx;
    int dst_sy, dst_sx, dst_oy, dst_ox;
    int w_group, wm, wc, kw, ty0, tx0, tsy, tsx;
} ig_product;

/* An index split in mixed radix: v = (c ny + y) nx + x, 0 <= y < ny, 0 <= x < nx. */
typedef struct ig_idx3 {
    int c, y, x;
} ig_idx3;

TT_INLINE ig_idx3 ig_split(const int v, const int ny, const int nx)
{
    const int c = v / (ny * nx), r = v - c * ny * nx, y = r / nx;
    const ig_idx3 s = {c, y, r - y * nx};
    return s;
}

/* The split of a + d (both split), without a division: the loops below
 * advance their indices by a fixed step this way. */
TT_INLINE ig_idx3 ig_add(ig_idx3 a, const ig_idx3 d, const int ny, const int nx)
{
    a.x += d.x;
    if (a.x >= nx) a.x -= nx, a.y++;
    a.y += d.y;
    if (a.y >= ny) a.y -= ny, a.c++;
    a.c += d.c;
    return a;
}

/* acc[i] += tile_a[kk][ty RM + i] * tile_b[kk][tx RN ..] over the chunk.
 * The sums run in a private copy: PoCL does not inline this, and through
 * acc's pointer (which might alias the tiles) it stored every sum back to
 * memory after each multiply-add. */
TT_INLINE void ig_multiply(ig_vec acc[RM], __local const float *tile_a, __local const float *tile_b,
                        const int bm, const int bn, const int tx, const int ty)
{
    ig_vec sum[RM];
#pragma unroll
    for (int i = 0; i < RM; i++) sum[i] = acc[i];
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
        const ig_vec b = IG_LOAD(tile_b + kk * bn + tx * RN);
        __local const float *a = tile_a + kk * bm + ty * RM;
#pragma unroll
        for (int i = 0; i < RM; i++) sum[i] += a[i] * b;
    }
#pragma unroll
    for (int i = 0; i < RM; i++) acc[i] = sum[i];
}

/* Impossible source row of a column past the matrix: every tap misses. */
#define IG_OUTSIDE (-(1 << 29))

/* The product of `p` over K in [k_from, k_to) (multiples of BK; the host
 * splits a long K into launches) for this work-group's tile (global
 * (ceil(P / BN) NT, ceil(M / BM) MT, groups), P = batch grid_h grid_w). */
TT_INLINE void ig_product_tile(__global float *dst, __global const float *src,
                            __global const float *weight, __global const float *bias,
                            const int has_bias, const int accumulate, const ig_product p,
                            const int k_from, const int k_to, __local float *tile_a,
                            __local float *tile_b)
{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int nt = get_local_size(0), mt = get_local_size(1);
    const int wg = nt * mt, lid = ty * nt + tx;
    const int bm = mt * RM, bn = nt * RN;
    const int g = get_group_id(2), m0 = get_group_id(1) * bm;
    const int taps = p.taps_y * p.taps_x, K = p.C * taps;
    const int grid = p.grid_h * p.grid_w, P = p.batch * grid;
    const int src_plane = p.src_h * p.src_w, dst_plane = p.dst_h * p.dst_w;
    /* this work-item's columns: where each reads and writes */
    int src_at[RN], src_y[RN], src_x[RN], dst_at[RN];
    /* the RN columns are one run of a grid row, read (and written) as a
     * vector: of neighbouring source places, or (pix_sx 2) every other */
    int run;
    {
        const int first = get_group_id(0) * bn + tx * RN;
        int n = first / grid, r = first - n * grid;
        int py = r / p.grid_w, px = r - py * p.grid_w;
        run = (p.pix_sx == 1 || p.pix_sx == 2) && first + RN <= P && px + RN <= p.grid_w;
#pragma unroll
        for (int j = 0; j < RN; j++) {
            const int inside = first + j < P;
            src_at[j] = inside ? (n * p.src_c + g * p.C) * src_plane : 0;
            src_y[j] = inside ? py * p.pix_sy + p.pix_oy : IG_OUTSIDE;
            src_x[j] = px * p.pix_sx + p.pix_ox;
            dst_at[j] = inside ? (n * p.dst_c + g * p.M) * dst_plane +
                                     (py * p.dst_sy + p.dst_oy) * p.dst_w + px * p.dst_sx +
                                     p.dst_ox
                               : -1;
            if (++px == p.grid_w) {
                px = 0;
                if (++py == p.grid_h) py = 0, n++;
            }
        }
    }
    ig_vec acc[RM];
#pragma unroll
    for (int i = 0; i < RM; i++) acc[i] = (ig_vec)(0.0f);
    /* the K indices (c, jy, jx) of the chunk rows this work-item loads:
     * the A tile's from lid % BK (one row when the work-group has at least
     * BK items), the B tile's from ty in steps of MT; the first of each
     * split once a chunk, the others advanced from it.  (Carrying split
     * indices across the barriers from chunk to chunk breaks PoCL 3.1's
     * work-group compiler on work-groups one item wide.) */
    const int ny = p.taps_y, nx = p.taps_x, a_step = wg >= BK ? wg / BK : 1;
    const ig_idx3 a_next = ig_split(wg, ny, nx), b_next = ig_split(mt, ny, nx);
    for (int k0 = k_from; k0 < K && k0 < k_to; k0 += BK) {
        ig_idx3 t = ig_split(k0 + lid % BK, ny, nx);
        for (int kk = lid % BK; kk < BK; kk += wg) {
            const int at = g * p.w_group + t.c * p.wc + (p.ty0 + t.y * p.tsy) * p.kw + p.tx0 +
                           t.x * p.tsx;
            const int inside = k0 + kk < K;
            for (int mm = lid / BK; mm < bm; mm += a_step)
                tile_a[kk * bm + mm] = inside && m0 + mm < p.M ? weight[at + (m0 + mm) * p.wm] : 0.0f;
            t = ig_add(t, a_next, ny, nx);
        }
        t = ig_split(k0 + ty, ny, nx);
        for (int kk = ty; kk < BK; kk += mt) {
            const int dy = k0 + kk < K ? t.y * p.tap_sy : IG_OUTSIDE, dx = t.x * p.tap_sx;
            const int c_at = t.c * src_plane;
            __local float *row = tile_b + kk * bn + tx * RN;
            if (run) {
                const int y = src_y[0] + dy, x = src_x[0] + dx;
                const int at = src_at[0] + c_at + y * p.src_w;
                const int sx = p.pix_sx;
                if (y < 0 || y >= p.src_h) IG_STORE((ig_vec)(0.0f), row);
                else if (sx == 1 && x >= 0 && x + RN <= p.src_w)
                    IG_STORE(IG_LOAD(src + at + x), row);
                else if (sx == 2 && x >= 0 && x + 2 * RN <= p.src_w)
                    IG_STORE(IG_LOAD_EVEN(src + at + x), row);
                else
                    for (int j = 0; j < RN; j++)
                        row[j] = x + j * sx >= 0 && x + j * sx < p.src_w ? src[at + x + j * sx]
                                                                          : 0.0f;
            } else {
#pragma unroll 1
                for (int j = 0; j < RN; j++) {
                    const int y = src_y[j] + dy, x = src_x[j] + dx;
                    row[j] = y >= 0 && y < p.src_h && x >= 0 && x < p.src_w
                                 ? src[src_at[j] + c_at + y * p.src_w + x]
                                 : 0.0f;
                }
            }
            t = ig_add(t, b_next, ny, nx);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        ig_multiply(acc, tile_a, tile_b, bm, bn, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll 1
    for (int i = 0; i < RM; i++) {
        const int m = m0 + ty * RM + i;
        if (m >= p.M) break;
        float v[RN];
        IG_STORE(acc[i], v);
        const float b = has_bias ? bias[g * p.M + m] : 0.0f;
#pragma unroll 1
        for (int j = 0; j < RN; j++)
            if (dst_at[j] >= 0) {
                __global float *o = dst + dst_at[j] + m * dst_plane;
                *o = (accumulate ? *o : b) + v[j];
            }
    }
}

/* out (N, Cout, OH, OW) = conv(inp, weight) + bias (has_bias), or out +=
 * conv (accumulate; no bias), the sums over K = Cin/G KH KW in [k_from,
 * k_to) only.  global (ceil(N OH OW / BN) NT, ceil(Cout/G / BM) MT, G). */
__kernel void conv_igemm_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                 TT_MEM(const float, weight), TT_MEM(const float, bias),
                                 const int has_bias, const int accumulate, TT_IG_GEOMETRY,
                                 const int k_from, const int k_to, __local float *tile_a,
                                 __local float *tile_b)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int cin_g = Cin / G, cout_g = Cout / G, khw = KH * KW;
    const ig_product p = {
        .batch = N, .M = cout_g, .C = cin_g, .taps_y = KH, .taps_x = KW,
        .grid_h = OH, .grid_w = OW,
        .src_c = Cin, .src_h = H, .src_w = W, .dst_c = Cout, .dst_h = OH, .dst_w = OW,
        .pix_sy = SH, .pix_sx = SW, .pix_oy = -PH, .pix_ox = -PW, .tap_sy = DH, .tap_sx = DW,
        .dst_sy = 1, .dst_sx = 1, .dst_oy = 0, .dst_ox = 0,
        .w_group = cout_g * cin_g * khw, .wm = cin_g * khw, .wc = khw, .kw = KW,
        .ty0 = 0, .tx0 = 0, .tsy = 1, .tsx = 1};
    ig_product_tile(out, inp, weight, bias, has_bias, accumulate, p, k_from, k_to, tile_a,
                    tile_b);
}

TT_INLINE int ig_abs(const int v) { return v < 0 ? -v : v; }

/* The taps of one phase along one axis of a kernel of `size` taps: the
 * first that reaches pixel phase r (*first), their step, and their count
 * (0: none). */
TT_INLINE int ig_phase_taps(const int r, const int stride, const int pad, const int dilation,
                         const int size, int *first, int *step)
{
    *first = 0;
    while (*first < size && ig_abs(r + pad - *first * dilation) % stride != 0) ++*first;
    *step = 1;
    while ((*step * dilation) % stride != 0) ++*step;
    return *first < size ? (size - 1 - *first) / *step + 1 : 0;
}

/* a / b for b > 0 that divides a, of either sign. */
TT_INLINE int ig_exact_div(const int a, const int b) { return a >= 0 ? a / b : -(-a / b); }

/* dinp (N, Cin, H, W) += conv2d's input gradient of dout (N, Cout, OH, OW)
 * at the pixels (ry + qy SH, rx + qx SW) of one phase (ry < SH, rx < SW)
 * that some tap reaches (the host skips phases no tap reaches), the sums
 * over the phase's K = Cout/G taps in [k_from, k_to) only.  global
 * (ceil(N QH QW / BN) NT, ceil(Cin/G / BM) MT, G), QH = ceil((H - ry) / SH),
 * QW likewise. */
__kernel void conv_igemm_backward_data(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                       TT_MEM(const float, weight), TT_IG_GEOMETRY, const int ry,
                                       const int rx, const int k_from, const int k_to,
                                       __local float *tile_a, __local float *tile_b)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, weight);
    const int cin_g = Cin / G, cout_g = Cout / G, khw = KH * KW;
    int ky0, kx0, sy, sx;
    const int taps_y = ig_phase_taps(ry, SH, PH, DH, KH, &ky0, &sy);
    const int taps_x = ig_phase_taps(rx, SW, PW, DW, KW, &kx0, &sx);
    const ig_product p = {
        .batch = N, .M = cin_g, .C = cout_g, .taps_y = taps_y, .taps_x = taps_x,
        .grid_h = (H - ry + SH - 1) / SH, .grid_w = (W - rx + SW - 1) / SW,
        .src_c = Cout, .src_h = OH, .src_w = OW, .dst_c = Cin, .dst_h = H, .dst_w = W,
        /* dout row (ry + qy SH + PH - (ky0 + jy sy) DH) / SH */
        .pix_sy = 1, .pix_sx = 1, .pix_oy = ig_exact_div(ry + PH - ky0 * DH, SH),
        .pix_ox = ig_exact_div(rx + PW - kx0 * DW, SW), .tap_sy = -(sy * DH / SH),
        .tap_sx = -(sx * DW / SW),
        .dst_sy = SH, .dst_sx = SW, .dst_oy = ry, .dst_ox = rx,
        .w_group = cout_g * cin_g * khw, .wm = khw, .wc = cin_g * khw, .kw = KW,
        .ty0 = ky0, .tx0 = kx0, .tsy = sy, .tsx = sx};
    ig_product_tile(dinp, dout, weight, weight, 0, 1, p, k_from, k_to, tile_a, tile_b);
}

/* The weight gradient's slice s (group id 2 = s G + g) of the pixels q =
 * (n, oy, ox) in [s slice_len, (s + 1) slice_len), of those its part
 * [q_from, q_to) (the host splits a long slice into launches, which
 * accumulate after the first): rows co of the group,
 * columns k = (ci, ky, kx):
 *   part[s Cout K + (g Cout/G + co) K + k] (+= when accumulate, else =)
 *       sum over q of dout[n, g Cout/G + co, oy, ox] inp[n, g Cin/G + ci,
 *       oy SH - PH + ky DH, ox SW - PW + kx DW]
 * (part is dweight itself when there is one slice).  global
 * (ceil(K / BN) NT, ceil(Cout/G / BM) MT, slices G). */
__kernel void conv_igemm_backward_weight(TT_MEM(float, part), TT_MEM(const float, dout),
                                         TT_MEM(const float, inp), const int slice_len,
                                         const int accumulate, TT_IG_GEOMETRY, const int q_from,
                                         const int q_to, __local float *tile_a,
                                         __local float *tile_b)
{
    TT_PTR(float, part);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int nt = get_local_size(0), mt = get_local_size(1);
    const int wg = nt * mt, lid = ty * nt + tx;
    const int bm = mt * RM, bn = nt * RN;
    const int g = get_group_id(2) % G, s = get_group_id(2) / G, m0 = get_group_id(1) * bm;
    const int cin_g = Cin / G, cout_g = Cout / G, khw = KH * KW, K = cin_g * khw;
    const int in_plane = H * W, out_plane = OH * OW;
    const int q_begin = s * slice_len + q_from;
    const int q_end = min(s * slice_len + min(q_to, slice_len), N * out_plane);
    /* this work-item's columns k = (ci, ky, kx) */
    int col_at[RN], col_y[RN], col_x[RN];
    {
        const int first = get_group_id(0) * bn + tx * RN;
#pragma unroll
        for (int j = 0; j < RN; j++) {
            const int k = first + j, ci = k / khw, t = k - ci * khw, ky = t / KW, kx = t - ky * KW;
            col_at[j] = (g * cin_g + ci) * in_plane;
            col_y[j] = k < K ? ky * DH - PH : IG_OUTSIDE;
            col_x[j] = kx * DW - PW;
        }
    }
    ig_vec acc[RM];
#pragma unroll
    for (int i = 0; i < RM; i++) acc[i] = (ig_vec)(0.0f);
    /* the pixels (n, oy, ox) of the chunk rows this work-item loads: the A
     * tile's from lid % BK, the B tile's runs from ty RN in steps of MT RN;
     * the first of each split once a chunk, the others advanced from it */
    const int a_step = wg >= BK ? wg / BK : 1;
    const ig_idx3 a_next = ig_split(wg, OH, OW), b_next = ig_split(mt * RN, OH, OW);
    for (int q0 = q_begin; q0 < q_end; q0 += BK) {
        /* A: dout rows of the group at the chunk's pixels */
        ig_idx3 u = ig_split(q0 + lid % BK, OH, OW);
        for (int qq = lid % BK; qq < BK; qq += wg) {
            const int at = (u.c * Cout + g * cout_g) * out_plane + u.y * OW + u.x;
            const int inside = q0 + qq < q_end;
            for (int mm = lid / BK; mm < bm; mm += a_step)
                tile_a[qq * bm + mm] =
                    inside && m0 + mm < cout_g ? dout[at + (m0 + mm) * out_plane] : 0.0f;
            u = ig_add(u, a_next, OH, OW);
        }
        /* B: the columns gathered from the input at the chunk's pixels, a
         * run of RN pixels a work-item: a vector load where the run is one
         * stretch of an input row (stride 2: every other place of one),
         * stored transposed */
        u = ig_split(q0 + ty * RN, OH, OW);
        for (int r = ty; r < BK / RN; r += mt) {
            const int q = q0 + r * RN;
            int n = u.c, oy = u.y, ox = u.x;
            __local float *rows = tile_b + r * RN * bn + tx * RN; /* [pixel l][column j] */
            if ((SW == 1 || SW == 2) && q + RN <= q_end && ox + RN <= OW) {
                float t[RN][RN]; /* [column j][pixel l]: every index known, so in registers */
#pragma unroll
                for (int j = 0; j < RN; j++) {
                    const int y = oy * SH + col_y[j], x = ox * SW + col_x[j];
                    const int at = n * Cin * in_plane + col_at[j] + y * W;
                    if (y < 0 || y >= H) IG_STORE((ig_vec)(0.0f), t[j]);
                    else if (SW == 1 && x >= 0 && x + RN <= W)
                        IG_STORE(IG_LOAD(inp + at + x), t[j]);
                    else if (SW == 2 && x >= 0 && x + 2 * RN <= W)
                        IG_STORE(IG_LOAD_EVEN(inp + at + x), t[j]);
                    else
#pragma unroll
                        for (int l = 0; l < RN; l++)
                            t[j][l] = x + l * SW >= 0 && x + l * SW < W ? inp[at + x + l * SW]
                                                                          : 0.0f;
                }
#pragma unroll
                for (int l = 0; l < RN; l++)
#pragma unroll
                    for (int j = 0; j < RN; j++) rows[l * bn + j] = t[j][l];
            } else { /* the chunk's or a row's end: element by element, into the tile */
#pragma unroll 1
                for (int l = 0; l < RN; l++) {
                    const int y0 = q + l < q_end ? oy * SH : IG_OUTSIDE, x0 = ox * SW;
#pragma unroll 1
                    for (int j = 0; j < RN; j++) {
                        const int y = y0 + col_y[j], x = x0 + col_x[j];
                        rows[l * bn + j] = y >= 0 && y < H && x >= 0 && x < W
                                               ? inp[n * Cin * in_plane + col_at[j] + y * W + x]
                                               : 0.0f;
                    }
                    if (++ox == OW) {
                        ox = 0;
                        if (++oy == OH) oy = 0, n++;
                    }
                }
            }
            u = ig_add(u, b_next, OH, OW);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        ig_multiply(acc, tile_a, tile_b, bm, bn, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int k_first = get_group_id(0) * bn + tx * RN;
    __global float *base = part + (size_t)s * Cout * K;
#pragma unroll
    for (int i = 0; i < RM; i++) {
        const int m = m0 + ty * RM + i;
        if (m >= cout_g) break;
        float v[RN];
        IG_STORE(acc[i], v);
        __global float *row = base + (g * cout_g + m) * K;
#pragma unroll
        for (int j = 0; j < RN; j++)
            if (k_first + j < K) row[k_first + j] = (accumulate ? row[k_first + j] : 0.0f) + v[j];
    }
}

/* dweight[i] += the sum over s < slices of part[s count + i], in slice
 * order.  global (count). */
__kernel void conv_igemm_sum_slices(TT_MEM(float, dweight), TT_MEM(const float, part),
                                    const int slices, const int count)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, part);
    const int i = get_global_id(0);
    if (i >= count) return;
    float sum = 0.0f;
    for (int s = 0; s < slices; s++) sum += part[(size_t)s * count + i];
    dweight[i] += sum;
}
