/* blas/gemm_tiled: row-major SGEMM through shared memory with register
 * blocking: the variant for GPUs.  The host (src/backend/vulkan/vk_blas.c)
 * picks the variant and its constants.
 *
 * C = alpha op(A) op(B) + beta C for each of the batch (global z).
 * Arguments as blas/gemm.  A work-group of (BN / TN) x (BM / TM)
 * invocations computes a BM x BN block of C (global x, y count its
 * invocations); for each BK-wide slice of k it copies op(A)'s BM x BK and
 * op(B)'s BK x BN into shared memory, reading along each matrix's
 * contiguous dimension whatever the transposition, and each invocation
 * then adds TM x TN products per k from there: rows ty + s (BM / TM),
 * columns tx + t (BN / TN), so that neighbouring invocations read
 * neighbouring words.  Elements outside the matrices load as 0; only the
 * stores are guarded.  Constants (-DNAME=value): TRANS_A, TRANS_B, BM, BN,
 * BK, TM, TN (the work-group size must be (BN / TN, BM / TM)).  beta == 0
 * never reads C.
 */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TRANS_A = 0;
layout(constant_id = 4) const int TRANS_B = 0;
layout(constant_id = 5) const int BM = 64;
layout(constant_id = 6) const int BN = 64;
layout(constant_id = 7) const int BK = 16;
layout(constant_id = 8) const int TM = 4;
layout(constant_id = 9) const int TN = 4;

TT_BUFFER(0, float, a);
TT_BUFFER(1, float, b);
TT_BUFFER(2, float, c);
layout(push_constant) uniform Args {
    uint a_offset; uint b_offset; uint c_offset;
    int m; int n; int k; int lda; int ldb; int ldc;
    int stride_a; int stride_b; int stride_c;
    float alpha; float beta;
} args;

/* op(A)[i][p] at tile_a[p (BM + 1) + i], op(B)[p][j] at tile_b[p (BN + 1)
 * + j]: the padding keeps the copies along k on distinct banks */
const int SA = BM + 1, SB = BN + 1;
shared float tile_a[BK * SA];
shared float tile_b[BK * SB];

void main()
{
    const int WX = BN / TN, WY = BM / TM;
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    int id = ty * WX + tx;
    int i_base = int(gl_WorkGroupID.y) * BM, j_base = int(gl_WorkGroupID.x) * BN;
    int batch = int(gl_GlobalInvocationID.z);
    int a0 = TT_AT(args.a_offset, 4) + batch * args.stride_a;
    int b0 = TT_AT(args.b_offset, 4) + batch * args.stride_b;
    int c0 = TT_AT(args.c_offset, 4) + batch * args.stride_c;

    float acc[TM][TN];
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TN; t++) acc[s][t] = 0.0;
    for (int p0 = 0; p0 < args.k; p0 += BK) {
        /* element e of the slice, taken along the stored rows */
        for (int e = id; e < BM * BK; e += WX * WY) {
            int ii = TRANS_A != 0 ? e % BM : e / BK, pp = TRANS_A != 0 ? e / BM : e % BK;
            int i = i_base + ii, p = p0 + pp;
            float v = 0.0;
            if (i < args.m && p < args.k)
                v = TT_B(a)[a0 + (TRANS_A != 0 ? p * args.lda + i : i * args.lda + p)];
            tile_a[pp * SA + ii] = v;
        }
        for (int e = id; e < BK * BN; e += WX * WY) {
            int jj = TRANS_B != 0 ? e / BK : e % BN, pp = TRANS_B != 0 ? e % BK : e / BN;
            int j = j_base + jj, p = p0 + pp;
            float v = 0.0;
            if (j < args.n && p < args.k)
                v = TT_B(b)[b0 + (TRANS_B != 0 ? j * args.ldb + p : p * args.ldb + j)];
            tile_b[pp * SB + jj] = v;
        }
        barrier();
        for (int pp = 0; pp < BK; pp++) {
            float av[TM], bv[TN];
            for (int s = 0; s < TM; s++) av[s] = tile_a[pp * SA + ty + s * WY];
            for (int t = 0; t < TN; t++) bv[t] = tile_b[pp * SB + tx + t * WX];
            for (int s = 0; s < TM; s++)
                for (int t = 0; t < TN; t++) acc[s][t] += av[s] * bv[t];
        }
        barrier();
    }
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TN; t++) {
            int i = i_base + ty + s * WY, j = j_base + tx + t * WX;
            if (i >= args.m || j >= args.n) continue;
            int at = c0 + i * args.ldc + j;
            float r = args.alpha * acc[s][t];
            TT_B(c)[at] = args.beta == 0.0 ? r : r + args.beta * TT_B(c)[at];
        }
}
