/*
 * Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions, NCHW, groups = 1,
 * one image at a time (src/ops/conv_winograd.c):
 *   U[e][co][ci] = (G g Gᵀ)[e]       weights, g = weight[co, ci] (3x3)
 *   V[e][ci][t]  = (Bᵀ d B)[e]       d = the 4x4 input tile of output tile t
 *   M[e]         = U[e] . V[e]       16 GEMMs (CLBlast, strided batched)
 *   out tile     = Aᵀ M A            2x2 outputs per tile
 * e = 4 i + j indexes the 4x4 transformed tile.  Tiles run along the width
 * in dimension 0, so neighbouring work-items touch neighbouring addresses.
 */

/* U from the weights.  flip = 0: g = weight[co, ci] (weight is (Cout, Cin,
 * 3, 3)).  flip = 1 (backward data as a forward): g[a][b] = weight[ci, co,
 * 2 - a, 2 - b] (weight is (Cin, Cout, 3, 3) of this product's roles).
 * global (Cin, Cout). */
__kernel void winograd_weight(TT_MEM(float, u), TT_MEM(const float, weight), const int cout,
                              const int cin, const int flip)
{
    TT_PTR(float, u);
    TT_PTR(const float, weight);
    const int ci = get_global_id(0), co = get_global_id(1);
    if (ci >= cin || co >= cout) return;
    float g[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            g[a][b] = flip ? weight[((size_t)ci * cout + co) * 9 + (2 - a) * 3 + (2 - b)]
                           : weight[((size_t)co * cin + ci) * 9 + a * 3 + b];
    float t[4][3]; /* G g */
    for (int b = 0; b < 3; b++) {
        t[0][b] = g[0][b];
        t[1][b] = 0.5f * (g[0][b] + g[1][b] + g[2][b]);
        t[2][b] = 0.5f * (g[0][b] - g[1][b] + g[2][b]);
        t[3][b] = g[2][b];
    }
    const size_t stride = (size_t)cout * cin, at = (size_t)co * cin + ci;
    for (int i = 0; i < 4; i++) {
        float r[4]; /* (G g) Gᵀ, row i */
        r[0] = t[i][0];
        r[1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        r[2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        r[3] = t[i][2];
        for (int j = 0; j < 4; j++) u[(4 * i + j) * stride + at] = r[j];
    }
}

/* V from one image (C, H, W): tile t = ty * tiles_w + tx reads rows
 * 2 ty - pad_h .. + 3 and columns 2 tx - pad_w .. + 3 (zero outside).
 * global (tiles_w, tiles_h, C). */
__kernel void winograd_input(TT_MEM(float, v), TT_MEM(const float, image), const int channels,
                             const int h, const int w, const int pad_h, const int pad_w,
                             const int tiles_h, const int tiles_w)
{
    TT_PTR(float, v);
    TT_PTR(const float, image);
    const int tx = get_global_id(0), ty = get_global_id(1), c = get_global_id(2);
    if (tx >= tiles_w || ty >= tiles_h || c >= channels) return;
    __global const float *plane = image + (size_t)c * h * w;
    float d[4][4];
    for (int i = 0; i < 4; i++) {
        const int y = 2 * ty - pad_h + i;
        for (int j = 0; j < 4; j++) {
            const int x = 2 * tx - pad_w + j;
            d[i][j] = (y >= 0 && y < h && x >= 0 && x < w) ? plane[y * w + x] : 0.0f;
        }
    }
    float t[4][4]; /* Bᵀ d */
    for (int j = 0; j < 4; j++) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    const int tiles = tiles_h * tiles_w;
    const size_t stride = (size_t)channels * tiles, at = (size_t)c * tiles + ty * tiles_w + tx;
    for (int i = 0; i < 4; i++) {
        v[(4 * i + 0) * stride + at] = t[i][0] - t[i][2];
        v[(4 * i + 1) * stride + at] = t[i][1] + t[i][2];
        v[(4 * i + 2) * stride + at] = t[i][2] - t[i][1];
        v[(4 * i + 3) * stride + at] = t[i][1] - t[i][3];
    }
}

/* One image's output (C, OH, OW) from M: out = (accumulate ? out : bias or
 * 0) + Aᵀ M A for the 2x2 outputs of tile t inside the image.
 * global (tiles_w, tiles_h, C). */
__kernel void winograd_output(TT_MEM(float, out), TT_MEM(const float, m), TT_MEM(const float, bias),
                              const int has_bias, const int accumulate, const int channels,
                              const int oh, const int ow, const int tiles_h, const int tiles_w)
{
    TT_PTR(float, out);
    TT_PTR(const float, m);
    TT_PTR(const float, bias);
    const int tx = get_global_id(0), ty = get_global_id(1), c = get_global_id(2);
    if (tx >= tiles_w || ty >= tiles_h || c >= channels) return;
    const int tiles = tiles_h * tiles_w;
    const size_t stride = (size_t)channels * tiles, at = (size_t)c * tiles + ty * tiles_w + tx;
    float t[2][4]; /* Aᵀ M */
    for (int j = 0; j < 4; j++) {
        const float m0 = m[(0 + j) * stride + at], m1 = m[(4 + j) * stride + at];
        const float m2 = m[(8 + j) * stride + at], m3 = m[(12 + j) * stride + at];
        t[0][j] = m0 + m1 + m2;
        t[1][j] = m1 - m2 - m3;
    }
    const float b = has_bias ? bias[c] : 0.0f;
    __global float *plane = out + (size_t)c * oh * ow;
    for (int i = 0; i < 2; i++) {
        const int y = 2 * ty + i;
        if (y >= oh) break;
        const float r[2] = {t[i][0] + t[i][1] + t[i][2], t[i][1] - t[i][2] - t[i][3]};
        for (int j = 0; j < 2; j++) {
            const int x = 2 * tx + j;
            if (x >= ow) break;
            plane[y * ow + x] = (accumulate ? plane[y * ow + x] : b) + r[j];
        }
    }
}
