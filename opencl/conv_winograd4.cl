/*
 * Winograd F(4x4, 3x3) for 3x3 stride-1 convolutions, NCHW, groups = 1, with
 * channel counts a multiple of 16 (src/ops/conv_winograd4.c).  Every
 * transformed array keeps channels innermost, so a work-item handles 16
 * channels (or 32) as float16 lanes:
 *   U[e][ci][co] = (G g Gᵀ)[e]        g = the 3x3 weight of (co, ci)
 *   V[e][t][ci]  = (Bᵀ d B)[e]        d = the 6x6 input patch of tile t
 *   M[e][t][co]  = sum_ci V[e][t][ci] U[e][ci][co]     (wino4_product)
 *   out tile     = Aᵀ M A             4x4 outputs (wino4_output)
 * and for the weight gradient, with dM = A dY Aᵀ of the output gradient's
 * tile (wino4_dout):
 *   dU[e][co][ci] = sum_t dM[e][t][co] V[e][t][ci]     (wino4_weight_product)
 *   dweight[co, ci] += Gᵀ dU G                          (wino4_weight_finish)
 * e = 6 i + j indexes the 6x6 transformed tile.  Tile t of a chunk is tile
 * t0 + t of the batch, tiles running along the width, then the rows, then
 * the images; a chunk is whole rows of tiles, and its tiles past the
 * batch's last are zeros.  The transforms read their images packed
 * (wino4_pack: 16 channels of a pixel side by side), and the output's
 * transform writes 16 columns of a row a store; both turn 16 x 16 blocks
 * around in registers (w4_transpose), where a lane-by-lane gather or
 * scatter cost more than the products.
 *
 * The host's -D defines (src/ops/conv_winograd4.c) size the products'
 * work-items: TT_W4_VECTORS float16 vectors of channels (TT_W4_LANES =
 * 16 TT_W4_VECTORS of them) by TT_W4_TILES tiles (wino4_product) or by
 * TT_W4_WCO output channels (wino4_weight_product).
 */
#if !defined(TT_W4_VECTORS) || !defined(TT_W4_TILES) || !defined(TT_W4_WCO)
#error "conv_winograd4.cl: TT_W4_VECTORS, TT_W4_TILES and TT_W4_WCO come from the host"
#endif
#define TT_W4_LANES (16 * TT_W4_VECTORS)

/* Bᵀ x of one column x0..x5 of the patch, into y0..y5. */
#define W4_BT(x0, x1, x2, x3, x4, x5, y0, y1, y2, y3, y4, y5) \
    do {                                                    \
        y0 = 4.0f * x0 - 5.0f * x2 + x4;                    \
        y1 = x3 + x4 - 4.0f * (x1 + x2);                    \
        y2 = 4.0f * (x1 - x2) + x4 - x3;                    \
        y3 = 2.0f * (x3 - x1) + x4 - x2;                    \
        y4 = 2.0f * (x1 - x3) + x4 - x2;                    \
        y5 = 4.0f * x1 - 5.0f * x3 + x5;                    \
    } while (0)

/* The 6 transformed rows from the 4 output rows (A y: the adjoint of Aᵀ). */
#define W4_A(x0, x1, x2, x3, y0, y1, y2, y3, y4, y5) \
    do {                                             \
        y0 = x0;                                     \
        y1 = x0 + x1 + x2 + x3;                      \
        y2 = x0 - x1 + x2 - x3;                      \
        y3 = x0 + 2.0f * x1 + 4.0f * x2 + 8.0f * x3; \
        y4 = x0 - 2.0f * x1 + 4.0f * x2 - 8.0f * x3; \
        y5 = x3;                                     \
    } while (0)

/* Aᵀ x: 4 outputs from 6 transformed values. */
#define W4_AT(x0, x1, x2, x3, x4, x5, y0, y1, y2, y3) \
    do {                                              \
        y0 = x0 + x1 + x2 + x3 + x4;                  \
        y1 = x1 - x2 + 2.0f * (x3 - x4);              \
        y2 = x1 + x2 + 4.0f * (x3 + x4);              \
        y3 = x1 - x2 + 8.0f * (x3 - x4) + x5;         \
    } while (0)

/* Where tile t of the batch lies: image n, output rows y0.., columns x0... */
typedef struct w4_tile {
    int n, y0, x0;
} w4_tile;

TT_INLINE w4_tile w4_tile_at(const int t, const int tiles_h, const int tiles_w)
{
    const int per_image = tiles_h * tiles_w, r = t % per_image;
    w4_tile tile = {t / per_image, 4 * (r / tiles_w), 4 * (r % tiles_w)};
    return tile;
}

#define W4_LO (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define W4_HI (uint16)(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)

/* a[r].x becomes a[x].r: four rounds of interleaving rows r and r + 8. */
TT_INLINE void w4_transpose(float16 a[16])
{
    TT_UNROLL
    for (int round = 0; round < 4; round++) {
        float16 b[16];
        TT_UNROLL
        for (int i = 0; i < 8; i++) {
            b[2 * i] = shuffle2(a[i], a[i + 8], W4_LO);
            b[2 * i + 1] = shuffle2(a[i], a[i + 8], W4_HI);
        }
        TT_UNROLL
        for (int i = 0; i < 16; i++) a[i] = b[i];
    }
}

/* The images (N, C, H, W) packed as (N, C / 16, H, W, 16): 16 columns of
 * 16 channels a work-item.  global (ceil(W / 16), H, N C / 16). */
__kernel void wino4_pack(TT_MEM(float, packed), TT_MEM(const float, image), const int h,
                         const int w)
{
    TT_PTR(float, packed);
    TT_PTR(const float, image);
    const int x0 = 16 * get_global_id(0), y = get_global_id(1), block = get_global_id(2);
    if (x0 >= w || y >= h) return;
    const size_t plane = (size_t)h * w;
    __global const float *row = image + (size_t)block * 16 * plane + (size_t)y * w;
    float16 a[16];
    TT_UNROLL
    for (int l = 0; l < 16; l++) a[l] = tt_load16(row + l * plane, x0, w);
    w4_transpose(a);
    __global float *to = packed + ((size_t)block * plane + (size_t)y * w + x0) * 16;
    TT_UNROLL
    for (int q = 0; q < 16; q++)
        if (x0 + q < w) vstore16(a[q], q, to);
}

/* Pixel (y, x) of a packed block of (h, w), 0 outside. */
TT_INLINE float16 w4_pixel(__global const float *block, const int y, const int x, const int h,
                        const int w)
{
    if (y < 0 || y >= h || x < 0 || x >= w) return (float16)(0.0f);
    return vload16(0, block + ((size_t)y * w + x) * 16);
}

/* G x Gᵀ's rows: the 6 values of G x from one column x0..x2 of the kernel
 * (also the 6 of a row of G x, times Gᵀ). */
#define W4_G(x0, x1, x2, y0, y1, y2, y3, y4, y5)        \
    do {                                                \
        y0 = x0 / 4.0f;                                 \
        y1 = -(x0 + x1 + x2) / 6.0f;                    \
        y2 = -(x0 - x1 + x2) / 6.0f;                    \
        y3 = x0 / 24.0f + x1 / 12.0f + x2 / 6.0f;       \
        y4 = x0 / 24.0f - x1 / 12.0f + x2 / 6.0f;       \
        y5 = x2;                                        \
    } while (0)

/* Gᵀ x: 3 values from 6 (the adjoint of W4_G). */
#define W4_GT(x0, x1, x2, x3, x4, x5, y0, y1, y2)                     \
    do {                                                              \
        y0 = x0 / 4.0f - (x1 + x2) / 6.0f + (x3 + x4) / 24.0f;        \
        y1 = (x2 - x1) / 6.0f + (x3 - x4) / 12.0f;                    \
        y2 = (x3 + x4 - x1 - x2) / 6.0f + x5;                         \
    } while (0)

/* U from the weights, 16 output channels of the product a work-item,
 * global (cout / 16, cin).  flip = 0: g = weight[co, ci] (weight (Cout,
 * Cin, 3, 3)).  flip = 1 (the input gradient as a forward): g[a][b] =
 * weight[ci, co, 2 - a, 2 - b] (weight (Cin, Cout, 3, 3) of this product's
 * roles). */
__kernel void wino4_weight(TT_MEM(float, u), TT_MEM(const float, weight), const int cout,
                           const int cin, const int flip)
{
    TT_PTR(float, u);
    TT_PTR(const float, weight);
    const int co = 16 * get_global_id(0), ci = get_global_id(1);
    if (co >= cout || ci >= cin) return;
    /* lane l's nine taps are side by side: a row each, turned into a
     * vector of the 16 lanes a tap (flipped: tap 8 - t) */
    const size_t lane = flip ? 9 : (size_t)cin * 9;
    __global const float *first =
        flip ? weight + ((size_t)ci * cout + co) * 9 : weight + ((size_t)co * cin + ci) * 9;
    float16 taps[16];
    TT_UNROLL
    for (int l = 0; l < 16; l++) {
        __global const float *at = first + l * lane;
        taps[l] = (float16)(vload8(0, at), at[8], 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    }
    w4_transpose(taps);
    float16 g[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) g[a][b] = taps[flip ? 8 - (3 * a + b) : 3 * a + b];
    float16 t[6][3]; /* G g */
    for (int b = 0; b < 3; b++)
        W4_G(g[0][b], g[1][b], g[2][b], t[0][b], t[1][b], t[2][b], t[3][b], t[4][b], t[5][b]);
    const size_t stride = (size_t)cin * cout;
    __global float *to = u + (size_t)ci * cout + co;
    for (int i = 0; i < 6; i++) {
        float16 o[6];
        W4_G(t[i][0], t[i][1], t[i][2], o[0], o[1], o[2], o[3], o[4], o[5]);
        for (int j = 0; j < 6; j++) vstore16(o[j], 0, to + (6 * i + j) * stride);
    }
}

/* V of `tiles` tiles (a chunk, from tile t0 of `total`) of the images
 * (N, C, H, W) packed (wino4_pack): tile t reads rows y0 - pad_h .. + 5 and
 * columns x0 - pad_w .. + 5, zero outside.  global (C / 16, tiles). */
__kernel void wino4_input(TT_MEM(float, v), TT_MEM(const float, image), const int channels,
                          const int h, const int w, const int pad_h, const int pad_w,
                          const int tiles_h, const int tiles_w, const int t0, const int total,
                          const int tiles)
{
    TT_PTR(float, v);
    TT_PTR(const float, image);
    const int c0 = 16 * get_global_id(0), t = get_global_id(1);
    if (c0 >= channels || t >= tiles) return;
    const size_t plane = (size_t)h * w, stride = (size_t)tiles * channels;
    __global float *to = v + (size_t)t * channels + c0;
    if (t0 + t >= total) {
        for (int e = 0; e < 36; e++) vstore16((float16)(0.0f), 0, to + e * stride);
        return;
    }
    const w4_tile tile = w4_tile_at(t0 + t, tiles_h, tiles_w);
    __global const float *block = image + ((size_t)tile.n * channels + c0) * plane;
    float16 r[6][6]; /* Bᵀ d, row by row */
    for (int j = 0; j < 6; j++) {
        const int x = tile.x0 - pad_w + j;
        float16 d[6];
        for (int i = 0; i < 6; i++) d[i] = w4_pixel(block, tile.y0 - pad_h + i, x, h, w);
        W4_BT(d[0], d[1], d[2], d[3], d[4], d[5], r[0][j], r[1][j], r[2][j], r[3][j], r[4][j],
              r[5][j]);
    }
    for (int i = 0; i < 6; i++) {
        float16 o[6];
        W4_BT(r[i][0], r[i][1], r[i][2], r[i][3], r[i][4], r[i][5], o[0], o[1], o[2], o[3], o[4],
              o[5]);
        for (int j = 0; j < 6; j++) vstore16(o[j], 0, to + (6 * i + j) * stride);
    }
}

/* dM of a chunk of tiles of the output gradient (N, C, OH, OW), packed
 * (wino4_pack): A dY Aᵀ of each 4x4 tile, zero past the plane.
 * global (C / 16, tiles). */
__kernel void wino4_dout(TT_MEM(float, dm), TT_MEM(const float, dout), const int channels,
                         const int oh, const int ow, const int tiles_h, const int tiles_w,
                         const int t0, const int total, const int tiles)
{
    TT_PTR(float, dm);
    TT_PTR(const float, dout);
    const int c0 = 16 * get_global_id(0), t = get_global_id(1);
    if (c0 >= channels || t >= tiles) return;
    const size_t plane = (size_t)oh * ow, stride = (size_t)tiles * channels;
    __global float *to = dm + (size_t)t * channels + c0;
    if (t0 + t >= total) {
        for (int e = 0; e < 36; e++) vstore16((float16)(0.0f), 0, to + e * stride);
        return;
    }
    const w4_tile tile = w4_tile_at(t0 + t, tiles_h, tiles_w);
    __global const float *block = dout + ((size_t)tile.n * channels + c0) * plane;
    float16 r[6][4]; /* A dY, column by column */
    for (int j = 0; j < 4; j++) {
        float16 d[4];
        for (int i = 0; i < 4; i++) d[i] = w4_pixel(block, tile.y0 + i, tile.x0 + j, oh, ow);
        W4_A(d[0], d[1], d[2], d[3], r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j]);
    }
    for (int i = 0; i < 6; i++) {
        float16 o[6];
        W4_A(r[i][0], r[i][1], r[i][2], r[i][3], o[0], o[1], o[2], o[3], o[4], o[5]);
        for (int j = 0; j < 6; j++) vstore16(o[j], 0, to + (6 * i + j) * stride);
    }
}

/* M = V U for each e: TT_W4_TILES tiles and TT_W4_LANES output channels
 * (TT_W4_VECTORS float16 vectors) a work-item.  global (tiles /
 * TT_W4_TILES, cout / TT_W4_LANES, 36): the work-items in a row share their
 * columns of U. */
__kernel void wino4_product(TT_MEM(float, m), TT_MEM(const float, v), TT_MEM(const float, u),
                            const int cin, const int cout, const int tiles)
{
    TT_PTR(float, m);
    TT_PTR(const float, v);
    TT_PTR(const float, u);
    const int t = TT_W4_TILES * get_global_id(0), co = TT_W4_LANES * get_global_id(1);
    const int e = get_global_id(2);
    if (co >= cout || t >= tiles) return;
    __global const float *vt = v + ((size_t)e * tiles + t) * cin;
    __global const float *ue = u + (size_t)e * cin * cout + co;
    float16 acc[TT_W4_TILES][TT_W4_VECTORS];
    TT_UNROLL
    for (int i = 0; i < TT_W4_TILES; i++)
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) acc[i][k] = (float16)(0.0f);
    for (int ci = 0; ci < cin; ci++) {
        float16 w[TT_W4_VECTORS];
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) w[k] = vload16(k, ue + (size_t)ci * cout);
        TT_UNROLL
        for (int i = 0; i < TT_W4_TILES; i++) {
            const float16 x = (float16)(vt[(size_t)i * cin + ci]);
            TT_UNROLL
            for (int k = 0; k < TT_W4_VECTORS; k++) acc[i][k] = fma(x, w[k], acc[i][k]);
        }
    }
    __global float *mt = m + ((size_t)e * tiles + t) * cout + co;
    TT_UNROLL
    for (int i = 0; i < TT_W4_TILES; i++)
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) vstore16(acc[i][k], k, mt + (size_t)i * cout);
}

/* out (N, C, OH, OW) of a chunk's rows of tiles: (accumulate ? out : bias
 * or 0) + Aᵀ M A, the 4x4 outputs of each tile inside the plane; 16
 * channels of 4 tiles side by side (16 columns) a work-item, their rows
 * turned around (w4_transpose) into 16 columns of each channel.
 * global (C / 16, rows of tiles of the chunk, ceil(tiles_w / 4)). */
__kernel void wino4_output(TT_MEM(float, out), TT_MEM(const float, m), TT_MEM(const float, bias),
                           const int has_bias, const int accumulate, const int channels,
                           const int oh, const int ow, const int tiles_h, const int tiles_w,
                           const int t0, const int tiles, const int rows)
{
    TT_PTR(float, out);
    TT_PTR(const float, m);
    TT_PTR(const float, bias);
    const int c0 = 16 * get_global_id(0), row = get_global_id(1), g = get_global_id(2);
    if (c0 >= channels || row >= rows || 4 * g >= tiles_w) return;
    const size_t stride = (size_t)tiles * channels;
    float16 o[4][16]; /* output row i, column 4 q + j of the 4 tiles */
    for (int q = 0; q < 4; q++) {
        if (4 * g + q >= tiles_w) {
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) o[i][4 * q + j] = (float16)(0.0f);
            continue;
        }
        const int t = row * tiles_w + 4 * g + q;
        __global const float *from = m + (size_t)t * channels + c0;
        float16 r[4][6]; /* Aᵀ M, column by column */
        for (int j = 0; j < 6; j++) {
            float16 x[6];
            for (int i = 0; i < 6; i++) x[i] = vload16(0, from + (6 * i + j) * stride);
            W4_AT(x[0], x[1], x[2], x[3], x[4], x[5], r[0][j], r[1][j], r[2][j], r[3][j]);
        }
        for (int i = 0; i < 4; i++)
            W4_AT(r[i][0], r[i][1], r[i][2], r[i][3], r[i][4], r[i][5], o[i][4 * q],
                  o[i][4 * q + 1], o[i][4 * q + 2], o[i][4 * q + 3]);
    }
    const w4_tile tile = w4_tile_at(t0 + row * tiles_w, tiles_h, tiles_w);
    const size_t plane = (size_t)oh * ow;
    __global float *first = out + ((size_t)tile.n * channels + c0) * plane;
    const int x0 = 16 * g;
    for (int i = 0; i < 4; i++) {
        const int y = tile.y0 + i;
        if (y >= oh) break;
        w4_transpose(o[i]);
        for (int l = 0; l < 16; l++) {
            __global float *at = first + l * plane + (size_t)y * ow;
            const float16 base = accumulate ? tt_load16(at, x0, ow)
                                 : has_bias ? (float16)(bias[c0 + l])
                                            : (float16)(0.0f);
            tt_store16(at, x0, ow, base + o[i][l]);
        }
    }
}

/* acc = dU[e] of a work-item's TT_W4_WCO output channels from co and
 * TT_W4_LANES input channels from ci: dMᵀ V summed over the chunk's tiles. */
TT_INLINE void w4_weight_dot(float16 acc[TT_W4_WCO][TT_W4_VECTORS], __global const float *dm,
                          __global const float *v, const int e, const int ci, const int co,
                          const int cin, const int cout, const int tiles)
{
    __global const float *ve = v + (size_t)e * tiles * cin + ci;
    __global const float *me = dm + (size_t)e * tiles * cout + co;
    TT_UNROLL
    for (int j = 0; j < TT_W4_WCO; j++)
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) acc[j][k] = (float16)(0.0f);
    for (int t = 0; t < tiles; t++) {
        float16 x[TT_W4_VECTORS];
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) x[k] = vload16(k, ve + (size_t)t * cin);
        TT_UNROLL
        for (int j = 0; j < TT_W4_WCO; j++) {
            const float16 g = (float16)(me[(size_t)t * cout + j]);
            TT_UNROLL
            for (int k = 0; k < TT_W4_VECTORS; k++) acc[j][k] = fma(g, x[k], acc[j][k]);
        }
    }
}

/* dU = dMᵀ V for each e: TT_W4_WCO output channels and TT_W4_LANES input
 * channels (TT_W4_VECTORS vectors) a work-item, summed over the chunk's
 * tiles.  global (cin / TT_W4_LANES, cout / TT_W4_WCO, 36). */
__kernel void wino4_weight_product(TT_MEM(float, du), TT_MEM(const float, dm),
                                   TT_MEM(const float, v), const int cin, const int cout,
                                   const int tiles)
{
    TT_PTR(float, du);
    TT_PTR(const float, dm);
    TT_PTR(const float, v);
    const int ci = TT_W4_LANES * get_global_id(0), co = TT_W4_WCO * get_global_id(1);
    const int e = get_global_id(2);
    if (ci >= cin || co >= cout) return;
    float16 acc[TT_W4_WCO][TT_W4_VECTORS];
    w4_weight_dot(acc, dm, v, e, ci, co, cin, cout, tiles);
    __global float *to = du + ((size_t)e * cout + co) * cin + ci;
    TT_UNROLL
    for (int j = 0; j < TT_W4_WCO; j++)
        TT_UNROLL
        for (int k = 0; k < TT_W4_VECTORS; k++) vstore16(acc[j][k], k, to + (size_t)j * cin);
}

/* dweight's 16 rows of 9 taps from `to` (16 input channels of one output
 * channel) += taps: taps[t] is tap t (t < 9) of the 16 lanes; taps[9 ..
 * 15] are overwritten, the block turned around so that each lane's 9 taps
 * are one row. */
TT_INLINE void w4_add_taps(__global float *to, float16 taps[16])
{
    TT_UNROLL
    for (int t = 9; t < 16; t++) taps[t] = (float16)(0.0f);
    w4_transpose(taps);
    TT_UNROLL
    for (int l = 0; l < 16; l++) {
        __global float *at = to + l * 9;
        vstore8(vload8(0, at) + taps[l].lo, 0, at);
        at[8] += taps[l].s8;
    }
}

/* dweight (Cout, Cin, 3, 3) += Gᵀ dU G, 16 input channels a work-item, dU
 * the sum of `parts` arrays of 36 Cout Cin side by side (one for the
 * chunked product, one a work-item's share for the fused kernel's).
 * global (Cin / 16, Cout). */
__kernel void wino4_weight_finish(TT_MEM(float, dweight), TT_MEM(const float, du), const int cin,
                                  const int cout, const int parts)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, du);
    const int ci = 16 * get_global_id(0), co = get_global_id(1);
    if (ci >= cin || co >= cout) return;
    const size_t stride = (size_t)cout * cin;
    __global const float *from = du + (size_t)co * cin + ci;
    float16 r[3][6]; /* Gᵀ dU, column by column */
    for (int j = 0; j < 6; j++) {
        float16 x[6];
        for (int i = 0; i < 6; i++) {
            __global const float *at = from + (6 * i + j) * stride;
            x[i] = vload16(0, at);
            for (int p = 1; p < parts; p++) x[i] += vload16(0, at + p * 36 * stride);
        }
        W4_GT(x[0], x[1], x[2], x[3], x[4], x[5], r[0][j], r[1][j], r[2][j]);
    }
    float16 taps[16];
    for (int a = 0; a < 3; a++)
        W4_GT(r[a][0], r[a][1], r[a][2], r[a][3], r[a][4], r[a][5], taps[3 * a],
              taps[3 * a + 1], taps[3 * a + 2]);
    w4_add_taps(dweight + ((size_t)co * cin + ci) * 9, taps);
}

/* G, row by row: the weights' transform (W4_G) as numbers, for the fold. */
__constant float w4_g[6][3] = {{0.25f, 0.0f, 0.0f},
                               {-1.0f / 6.0f, -1.0f / 6.0f, -1.0f / 6.0f},
                               {-1.0f / 6.0f, 1.0f / 6.0f, -1.0f / 6.0f},
                               {1.0f / 24.0f, 1.0f / 12.0f, 1.0f / 6.0f},
                               {1.0f / 24.0f, -1.0f / 12.0f, 1.0f / 6.0f},
                               {0.0f, 0.0f, 1.0f}};

/* dweight (Cout, Cin, 3, 3) += Gᵀ dU G with dU[e] = dMᵀ V summed over the
 * chunk's tiles, never stored: TT_W4_WCO output channels and TT_W4_LANES
 * input channels a work-item, e row by row (i), each product folded into
 * its row's three columns of dU G as it ends, each row into the taps.
 * global (cin / TT_W4_LANES, cout / TT_W4_WCO). */
__kernel void wino4_weight_sum(TT_MEM(float, dweight), TT_MEM(const float, dm),
                               TT_MEM(const float, v), const int cin, const int cout,
                               const int tiles)
{
    TT_PTR(float, dweight);
    TT_PTR(const float, dm);
    TT_PTR(const float, v);
    const int ci = TT_W4_LANES * get_global_id(0), co = TT_W4_WCO * get_global_id(1);
    if (ci >= cin || co >= cout) return;
    float16 taps[9][TT_W4_WCO][TT_W4_VECTORS];
    for (int a = 0; a < 9; a++)
        for (int j = 0; j < TT_W4_WCO; j++)
            for (int k = 0; k < TT_W4_VECTORS; k++) taps[a][j][k] = (float16)(0.0f);
    for (int i = 0; i < 6; i++) {
        float16 cols[3][TT_W4_WCO][TT_W4_VECTORS]; /* (dU G)[i][b] */
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < TT_W4_WCO; j++)
                for (int k = 0; k < TT_W4_VECTORS; k++) cols[b][j][k] = (float16)(0.0f);
        for (int c = 0; c < 6; c++) {
            float16 acc[TT_W4_WCO][TT_W4_VECTORS];
            w4_weight_dot(acc, dm, v, 6 * i + c, ci, co, cin, cout, tiles);
            for (int b = 0; b < 3; b++) {
                const float g = w4_g[c][b];
                if (g == 0.0f) continue;
                for (int j = 0; j < TT_W4_WCO; j++)
                    for (int k = 0; k < TT_W4_VECTORS; k++)
                        cols[b][j][k] = fma((float16)(g), acc[j][k], cols[b][j][k]);
            }
        }
        for (int a = 0; a < 3; a++) {
            const float g = w4_g[i][a];
            if (g == 0.0f) continue;
            for (int b = 0; b < 3; b++)
                for (int j = 0; j < TT_W4_WCO; j++)
                    for (int k = 0; k < TT_W4_VECTORS; k++)
                        taps[3 * a + b][j][k] =
                            fma((float16)(g), cols[b][j][k], taps[3 * a + b][j][k]);
        }
    }
    for (int j = 0; j < TT_W4_WCO; j++)
        for (int k = 0; k < TT_W4_VECTORS; k++) {
            float16 rows[16];
            for (int t = 0; t < 9; t++) rows[t] = taps[t][j][k];
            w4_add_taps(dweight + ((size_t)(co + j) * cin + ci + 16 * k) * 9, rows);
        }
}

/* ---- winograd4x4_fused: narrow layers, tiles in the lanes ---------------
 * One work-item computes a row of 16 tiles (64 output columns, 4 rows) of
 * one image for every output channel, with the transforms and the products
 * in one kernel (src/ops/conv_winograd4_fused.c): the lanes of a float16
 * are the 16 tiles, so that the transforms are whole-vector arithmetic and
 * only the input, U and the output pass through memory.  Padding 1, any
 * H and W (the lanes past the plane read zeros and are not stored).  The
 * channel counts are arguments (cin input channels, cout output channels,
 * a multiple of 16); the host's bounds TT_W4F_MAX_CIN and
 * TT_W4F_MAX_WEIGHT (src/ops/conv_winograd4.h) size the private arrays V
 * (every e of every input channel) and dU.  V and M keep a channel's 36
 * vectors side by side: with e outermost, 36 rows 1 KiB apart met in four
 * cache sets and thrashed them. */
#if !defined(TT_W4F_MAX_CIN) || !defined(TT_W4F_MAX_WEIGHT)
#error "conv_winograd4.cl: the fused kernels' bounds come from the host (src/ops/conv_winograd4.h)"
#endif

#define W4_EVEN (uint16)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#define W4_ODD (uint16)(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)
#define W4_RIGHT1 (uint16)(0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30)
#define W4_LEFT1 (uint16)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)

/* The 64 columns from x0 of a row w wide dealt out to 4 vectors of 16
 * tiles: d[c] lane i = column x0 + 4 i + c, 0 past w; two rounds of
 * even/odd splits.  Whole rows of 64 take plain loads (the bounded ones
 * alone were slower). */
TT_INLINE void w4f_split(float16 d[4], __global const float *row, const int x0, const int w)
{
    float16 v0, v1, v2, v3;
    if (x0 + 64 <= w) {
        v0 = vload16(0, row + x0), v1 = vload16(1, row + x0);
        v2 = vload16(2, row + x0), v3 = vload16(3, row + x0);
    } else {
        v0 = tt_load16(row, x0, w), v1 = tt_load16(row, x0 + 16, w);
        v2 = tt_load16(row, x0 + 32, w), v3 = tt_load16(row, x0 + 48, w);
    }
    const float16 a0 = shuffle2(v0, v1, W4_EVEN), b0 = shuffle2(v0, v1, W4_ODD);
    const float16 a1 = shuffle2(v2, v3, W4_EVEN), b1 = shuffle2(v2, v3, W4_ODD);
    d[0] = shuffle2(a0, a1, W4_EVEN);
    d[1] = shuffle2(b0, b1, W4_EVEN);
    d[2] = shuffle2(a0, a1, W4_ODD);
    d[3] = shuffle2(b0, b1, W4_ODD);
}

/* The six patch columns of 16 tiles in one input row w wide: d[c] lane i
 * = the row's column x0 + 4 i + c - 1, 0 past its ends: w4f_split's four
 * and columns x0 - 1 and x0 + 64 shifted in as a lane. */
TT_INLINE void w4f_row(float16 d[6], __global const float *row, const int x0, const int w)
{
    w4f_split(d + 1, row, x0, w);
    const float left = x0 > 0 ? row[x0 - 1] : 0.0f, right = x0 + 64 < w ? row[x0 + 64] : 0.0f;
    d[0] = shuffle2((float16)(left), d[4], W4_RIGHT1);
    d[5] = shuffle2(d[1], (float16)(right), W4_LEFT1);
}

/* V[ci][e] (36 vectors a channel, lanes the tiles) of the 16 tiles from
 * column x0 of tile row y0 / 4 of one image (cin channels of (h, w)),
 * padding 1. */
TT_INLINE void w4f_input(float16 *V, __global const float *image, const int cin, const int x0,
                      const int y0, const int h, const int w)
{
    const size_t plane = (size_t)h * w;
    for (int ci = 0; ci < cin; ci++) {
        float16 *v = V + ci * 36;
        __global const float *channel = image + ci * plane;
        float16 s[6][6]; /* d B, row by row */
        TT_UNROLL
        for (int r = 0; r < 6; r++) {
            const int y = y0 - 1 + r;
            float16 d[6];
            if (y >= 0 && y < h) {
                w4f_row(d, channel + (size_t)y * w, x0, w);
            } else {
                TT_UNROLL
                for (int c = 0; c < 6; c++) d[c] = (float16)(0.0f);
            }
            W4_BT(d[0], d[1], d[2], d[3], d[4], d[5], s[r][0], s[r][1], s[r][2], s[r][3],
                  s[r][4], s[r][5]);
        }
        TT_UNROLL
        for (int j = 0; j < 6; j++)
            W4_BT(s[0][j], s[1][j], s[2][j], s[3][j], s[4][j], s[5][j], v[j], v[6 + j],
                  v[12 + j], v[18 + j], v[24 + j], v[30 + j]);
    }
}

/* The 64 columns from x0 of an output row w wide from its 4 columns of 16
 * tiles: o[c] lane i is column x0 + 4 i + c (two rounds of interleaving);
 * stored up to the row's end after the bias and, when accumulating, what
 * is there (whole rows of 64: plain loads and stores, faster than the
 * bounded ones). */
TT_INLINE void w4f_store_row(__global float *row, const int x0, const int w, const float16 o[4],
                          const float bias, const int accumulate)
{
    const float16 p0 = shuffle2(o[0], o[2], W4_LO), p1 = shuffle2(o[0], o[2], W4_HI);
    const float16 q0 = shuffle2(o[1], o[3], W4_LO), q1 = shuffle2(o[1], o[3], W4_HI);
    float16 r[4] = {shuffle2(p0, q0, W4_LO), shuffle2(p0, q0, W4_HI), shuffle2(p1, q1, W4_LO),
                    shuffle2(p1, q1, W4_HI)};
    if (x0 + 64 <= w) {
        TT_UNROLL
        for (int k = 0; k < 4; k++) {
            const float16 was = accumulate ? vload16(k, row + x0) : (float16)(0.0f);
            vstore16(was + r[k] + (float16)(bias), k, row + x0);
        }
        return;
    }
    TT_UNROLL
    for (int k = 0; k < 4; k++) {
        const int x = x0 + 16 * k;
        if (x >= w) continue;
        const float16 was = accumulate ? tt_load16(row, x, w) : (float16)(0.0f);
        tt_store16(row, x, w, was + r[k] + (float16)(bias));
    }
}

/* out[n, co, y, x] = (accumulate ? out : 0) + (has_bias ? bias[co] : 0) +
 * the 3x3 cross-correlation, padding 1, of inp (N, cin, H, W) whose
 * weights U = G g Gᵀ (wino4_weight, U[e][ci][co]) hold.  Work-item
 * (g, row, n): tiles 16 g .. 16 g + 15 of tile row `row` of image n.
 * global (ceil(W / 64), ceil(H / 4), N). */
__kernel void wino4_fused(TT_MEM(float, out), TT_MEM(const float, inp), TT_MEM(const float, u),
                          TT_MEM(const float, bias), const int has_bias, const int accumulate,
                          const int cin, const int cout, const int h, const int w)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    TT_PTR(const float, u);
    TT_PTR(const float, bias);
    const int x0 = 64 * get_global_id(0), y0 = 4 * get_global_id(1), n = get_global_id(2);
    if (x0 >= w || y0 >= h) return;
    const size_t plane = (size_t)h * w;
    float16 V[TT_W4F_MAX_CIN * 36]; /* V[ci][e], lanes the tiles */
    w4f_input(V, inp + (size_t)n * cin * plane, cin, x0, y0, h, w);
    for (int co0 = 0; co0 < cout; co0 += 16) {
        float16 M[16 * 36]; /* M[k][e] of output channel co0 + k */
        for (int e = 0; e < 36; e++) {
            float16 acc[16];
            TT_UNROLL
            for (int k = 0; k < 16; k++) acc[k] = (float16)(0.0f);
            __global const float *ue = u + (size_t)e * cin * cout + co0;
            for (int ci = 0; ci < cin; ci++) {
                const float16 v = V[ci * 36 + e];
                TT_UNROLL
                for (int k = 0; k < 16; k++)
                    acc[k] = fma(v, (float16)(ue[ci * cout + k]), acc[k]);
            }
            TT_UNROLL
            for (int k = 0; k < 16; k++) M[k * 36 + e] = acc[k];
        }
        for (int k = 0; k < 16; k++) {
            const int co = co0 + k;
            const float16 *m = M + k * 36;
            float16 t[4][6]; /* Aᵀ M, column by column */
            TT_UNROLL
            for (int j = 0; j < 6; j++)
                W4_AT(m[j], m[6 + j], m[12 + j], m[18 + j], m[24 + j], m[30 + j], t[0][j],
                      t[1][j], t[2][j], t[3][j]);
            const float b = has_bias ? bias[co] : 0.0f;
            __global float *to = out + ((size_t)n * cout + co) * plane + (size_t)y0 * w;
            TT_UNROLL
            for (int r = 0; r < 4; r++) {
                if (y0 + r >= h) continue;
                float16 o[4];
                W4_AT(t[r][0], t[r][1], t[r][2], t[r][3], t[r][4], t[r][5], o[0], o[1], o[2], o[3]);
                w4f_store_row(to + (size_t)r * w, x0, w, o, b, accumulate);
            }
        }
    }
}

/* dM[e] (36 vectors, lanes the tiles) of one output gradient channel (h,
 * w): A dY Aᵀ of the 4x4 tiles of the 16 tiles from column x0 of tile row
 * y0 / 4, 0 past the plane; stored as floats (16 a vector) for the
 * product to broadcast lane by lane. */
TT_INLINE void w4f_dout(float *dm, __global const float *channel, const int x0, const int y0,
                     const int h, const int w)
{
    float16 s[4][6]; /* dY Aᵀ, row by row */
    TT_UNROLL
    for (int r = 0; r < 4; r++) {
        float16 d[4];
        if (y0 + r < h) {
            w4f_split(d, channel + (size_t)(y0 + r) * w, x0, w);
        } else {
            TT_UNROLL
            for (int c = 0; c < 4; c++) d[c] = (float16)(0.0f);
        }
        W4_A(d[0], d[1], d[2], d[3], s[r][0], s[r][1], s[r][2], s[r][3], s[r][4], s[r][5]);
    }
    TT_UNROLL
    for (int j = 0; j < 6; j++) {
        float16 o[6];
        W4_A(s[0][j], s[1][j], s[2][j], s[3][j], o[0], o[1], o[2], o[3], o[4], o[5]);
        TT_UNROLL
        for (int i = 0; i < 6; i++) vstore16(o[i], 6 * i + j, dm);
    }
}

/* The weight gradient's dU = sum over tiles of dM[e]ᵀ V[e], a work-item's
 * share: its column of 16 tiles (64 columns from 64 g) in `rows` tile
 * rows from row rows s of the batch's (images one after another, ceil(H /
 * 4) each), into du part s G + g (36 Cout Cin floats, [e][co][ci]; the
 * parts summed by wino4_weight_finish).  Each tile row's V and dM are
 * made in private memory with the tiles in the lanes; a product turns 16
 * input channels of V around (w4_transpose) so that the channels are the
 * lanes, and broadcasts dM tile by tile.  Padding 1, output the input's
 * size.  global (G = ceil(W / 64), ceil(total rows / rows)). */
__kernel void wino4_fused_weight(TT_MEM(float, du), TT_MEM(const float, inp),
                                 TT_MEM(const float, dout), const int cin, const int cout,
                                 const int h, const int w, const int total_rows, const int rows)
{
    TT_PTR(float, du);
    TT_PTR(const float, inp);
    TT_PTR(const float, dout);
    const int g = get_global_id(0), s = get_global_id(1), x0 = 64 * g;
    if (x0 >= w) return;
    const int tiles_h = (h + 3) / 4, first = s * rows;
    const int last = first + rows < total_rows ? first + rows : total_rows;
    const size_t plane = (size_t)h * w;
    const int cinv = cin / 16;
    float16 acc[36 * TT_W4F_MAX_WEIGHT / 16]; /* dU[e][co][16 ci] */
    for (int i = 0; i < 36 * cout * cinv; i++) acc[i] = (float16)(0.0f);
    for (int row = first; row < last; row++) {
        const int n = row / tiles_h, y0 = 4 * (row % tiles_h);
        float16 V[TT_W4F_MAX_WEIGHT / 16 * 36];
        w4f_input(V, inp + (size_t)n * cin * plane, cin, x0, y0, h, w);
        float dm[TT_W4F_MAX_WEIGHT / 16 * 36 * 16]; /* dM[co][e], 16 tiles each */
        for (int co = 0; co < cout; co++)
            w4f_dout(dm + co * 576, dout + ((size_t)n * cout + co) * plane, x0, y0, h, w);
        for (int e = 0; e < 36; e++) {
            for (int cb = 0; cb < cinv; cb++) {
                float16 vt[16]; /* vt[t] lane l: V[16 cb + l][e] of tile t */
                TT_UNROLL
                for (int l = 0; l < 16; l++) vt[l] = V[(16 * cb + l) * 36 + e];
                w4_transpose(vt);
                for (int co = 0; co < cout; co += 8) {
                    /* 8 output channels side by side: 8 chains of
                     * dependent products rather than one */
                    const float *d = dm + co * 576 + e * 16;
                    float16 *at = acc + (e * cout + co) * cinv + cb;
                    float16 a[8];
                    TT_UNROLL
                    for (int k = 0; k < 8; k++) a[k] = at[k * cinv];
                    TT_UNROLL
                    for (int t = 0; t < 16; t++)
                        TT_UNROLL
                        for (int k = 0; k < 8; k++)
                            a[k] = fma((float16)(d[k * 576 + t]), vt[t], a[k]);
                    TT_UNROLL
                    for (int k = 0; k < 8; k++) at[k * cinv] = a[k];
                }
            }
        }
    }
    __global float *to = du + (size_t)(s * get_global_size(0) + g) * 36 * cout * cin;
    for (int i = 0; i < 36 * cout; i++)
        for (int cb = 0; cb < cinv; cb++)
            vstore16(acc[i * cinv + cb], 0, to + (size_t)i * cin + 16 * cb);
}
