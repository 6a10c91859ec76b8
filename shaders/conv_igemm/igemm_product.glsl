/* conv_igemm: the product of the forward and of the input gradient (see
 * ig_product in opencl/conv_igemm.cl), over buffers the including shader
 * names: IG_DST, IG_SRC, IG_WEIGHT and IG_BIAS (macros taking an index). */

/* One product in the terms of the gather: rows m < M of a group; K = C
 * taps_y taps_x, k = (c, jy, jx); pixels (n, py, px) of a grid_h x grid_w
 * grid per image; source rows py pix_sy + pix_oy + jy tap_sy (columns
 * likewise); destination rows py dst_sy + dst_oy; weight at g w_group +
 * m wm + c wc + (ty0 + jy tsy) kw + tx0 + jx tsx. */
struct ig_product {
    int batch, M, C, taps_y, taps_x, grid_h, grid_w;
    int src_c, src_h, src_w, dst_c, dst_h, dst_w;
    int pix_sy, pix_sx, pix_oy, pix_ox, tap_sy, tap_sx;
    int dst_sy, dst_sx, dst_oy, dst_ox;
    int w_group, wm, wc, kw, ty0, tx0, tsy, tsx;
};

/* This work-group's tile of the product over K in [k_from, k_to) (global
 * (ceil(P / BN) NT, ceil(M / BM) MT, groups)); dst0 .. bias0: the
 * tensors' first elements. */
void ig_product_tile(ig_product p, int dst0, int src0, int w0, int bias0, bool has_bias,
                     bool accumulate, int k_from, int k_to)
{
    ig_group w = ig_group_of();
    int g = int(gl_WorkGroupID.z), m0 = int(gl_WorkGroupID.y) * w.bm;
    int taps = p.taps_y * p.taps_x, K = p.C * taps;
    int grid = p.grid_h * p.grid_w, P = p.batch * grid;
    int src_plane = p.src_h * p.src_w, dst_plane = p.dst_h * p.dst_w;
    /* this invocation's columns: where each reads and writes */
    int src_at[IG_MAX_RN], src_y[IG_MAX_RN], src_x[IG_MAX_RN], dst_at[IG_MAX_RN];
    {
        int first = int(gl_WorkGroupID.x) * w.bn + w.tx * TT_IG_RN;
        int n = first / grid, r = first - n * grid;
        int py = r / p.grid_w, px = r - py * p.grid_w;
        for (int j = 0; j < TT_IG_RN; j++) {
            bool inside = first + j < P;
            src_at[j] = inside ? src0 + (n * p.src_c + g * p.C) * src_plane : src0;
            src_y[j] = inside ? py * p.pix_sy + p.pix_oy : IG_OUTSIDE;
            src_x[j] = px * p.pix_sx + p.pix_ox;
            dst_at[j] = inside ? dst0 + (n * p.dst_c + g * p.M) * dst_plane +
                                     (py * p.dst_sy + p.dst_oy) * p.dst_w + px * p.dst_sx +
                                     p.dst_ox
                               : -1;
            if (++px == p.grid_w) {
                px = 0;
                if (++py == p.grid_h) py = 0, n++;
            }
        }
    }
    float acc[IG_MAX_RM][IG_MAX_RN];
    for (int i = 0; i < IG_MAX_RM; i++)
        for (int j = 0; j < IG_MAX_RN; j++) acc[i][j] = 0.0;
    int ny = p.taps_y, nx = p.taps_x, a_step = w.wg >= TT_IG_BK ? w.wg / TT_IG_BK : 1;
    ig_idx3 a_next = ig_split(w.wg, ny, nx), b_next = ig_split(w.mt, ny, nx);
    for (int k0 = k_from; k0 < K && k0 < k_to; k0 += TT_IG_BK) {
        ig_idx3 t = ig_split(k0 + w.lid % TT_IG_BK, ny, nx);
        for (int kk = w.lid % TT_IG_BK; kk < TT_IG_BK; kk += w.wg) {
            int at = w0 + g * p.w_group + t.c * p.wc + (p.ty0 + t.y * p.tsy) * p.kw + p.tx0 +
                     t.x * p.tsx;
            bool inside = k0 + kk < K;
            for (int mm = w.lid / TT_IG_BK; mm < w.bm; mm += a_step)
                tile_a[kk * w.bm + mm] =
                    inside && m0 + mm < p.M ? IG_WEIGHT(at + (m0 + mm) * p.wm) : 0.0;
            t = ig_add(t, a_next, ny, nx);
        }
        t = ig_split(k0 + w.ty, ny, nx);
        for (int kk = w.ty; kk < TT_IG_BK; kk += w.mt) {
            int dy = k0 + kk < K ? t.y * p.tap_sy : IG_OUTSIDE, dx = t.x * p.tap_sx;
            int c_at = t.c * src_plane, row = kk * w.bn + w.tx * TT_IG_RN;
            for (int j = 0; j < TT_IG_RN; j++) {
                int y = src_y[j] + dy, x = src_x[j] + dx;
                tile_b[row + j] = y >= 0 && y < p.src_h && x >= 0 && x < p.src_w
                                      ? IG_SRC(src_at[j] + c_at + y * p.src_w + x)
                                      : 0.0;
            }
            t = ig_add(t, b_next, ny, nx);
        }
        barrier();
        ig_multiply(acc, w);
        barrier();
    }
    for (int i = 0; i < TT_IG_RM; i++) {
        int m = m0 + w.ty * TT_IG_RM + i;
        if (m >= p.M) break;
        float b = has_bias ? IG_BIAS(bias0 + g * p.M + m) : 0.0;
        for (int j = 0; j < TT_IG_RN; j++)
            if (dst_at[j] >= 0) {
                int o = dst_at[j] + m * dst_plane;
                IG_DST(o) = (accumulate ? IG_DST(o) : b) + acc[i][j];
            }
    }
}
