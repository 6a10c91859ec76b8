/* conv_igemm: what the kernels of the implicit-GEMM convolution share
 * (opencl/conv_igemm.cl has the algorithm; src/ops/conv_igemm.c launches
 * it).  The tile sizes are specialization constants set by name from the
 * launch's -D options; the two local tiles are the launch's TT_ARG_LOCALs.
 * Each invocation keeps TT_IG_RM rows by TT_IG_RN columns in registers
 * (arrays of the largest sizes; the loops run to the constants, so a
 * driver keeps only those).  Loads are scalar here: the products, in the
 * same order as the OpenCL kernels', are what count. */
layout(constant_id = 3) const int TT_IG_RM = 4;  /* rows per invocation, 1 .. 8 */
layout(constant_id = 4) const int TT_IG_RN = 4;  /* columns per invocation, 4, 8 or 16 */
layout(constant_id = 5) const int TT_IG_BK = 8;  /* K (pixels) per chunk, a power of two >= RN */
layout(constant_id = 6) const uint TT_LOCAL0 = 1; /* BK * BM floats */
layout(constant_id = 7) const uint TT_LOCAL1 = 1; /* BK * BN floats */

shared float tile_a[TT_LOCAL0];
shared float tile_b[TT_LOCAL1];

#define IG_MAX_RM 8
#define IG_MAX_RN 16
/* Impossible source row of a column past the matrix: every tap misses. */
#define IG_OUTSIDE (-(1 << 29))

/* An index split in mixed radix: v = (c ny + y) nx + x. */
struct ig_idx3 {
    int c;
    int y;
    int x;
};

ig_idx3 ig_split(int v, int ny, int nx)
{
    int c = v / (ny * nx), r = v - c * ny * nx, y = r / nx;
    return ig_idx3(c, y, r - y * nx);
}

/* The split of a + d, both split, without a division. */
ig_idx3 ig_add(ig_idx3 a, ig_idx3 d, int ny, int nx)
{
    a.x += d.x;
    if (a.x >= nx) a.x -= nx, a.y++;
    a.y += d.y;
    if (a.y >= ny) a.y -= ny, a.c++;
    a.c += d.c;
    return a;
}

/* The tile's work-group, as in the OpenCL kernels. */
struct ig_group {
    int tx, ty, nt, mt, wg, lid, bm, bn;
};

ig_group ig_group_of()
{
    ig_group w;
    w.tx = int(gl_LocalInvocationID.x), w.ty = int(gl_LocalInvocationID.y);
    w.nt = int(gl_WorkGroupSize.x), w.mt = int(gl_WorkGroupSize.y);
    w.wg = w.nt * w.mt, w.lid = w.ty * w.nt + w.tx;
    w.bm = w.mt * TT_IG_RM, w.bn = w.nt * TT_IG_RN;
    return w;
}

/* acc[i][j] += tile_a[kk][ty RM + i] * tile_b[kk][tx RN + j] over a chunk. */
void ig_multiply(inout float acc[IG_MAX_RM][IG_MAX_RN], ig_group w)
{
    for (int kk = 0; kk < TT_IG_BK; kk++) {
        float b[IG_MAX_RN];
        for (int j = 0; j < TT_IG_RN; j++) b[j] = tile_b[kk * w.bn + w.tx * TT_IG_RN + j];
        for (int i = 0; i < TT_IG_RM; i++) {
            float a = tile_a[kk * w.bm + w.ty * TT_IG_RM + i];
            for (int j = 0; j < TT_IG_RN; j++) acc[i][j] += a * b[j];
        }
    }
}
