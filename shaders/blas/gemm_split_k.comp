/* blas/gemm_split_k: row-major SGEMM whose work-group splits k among its
 * invocations: for a C of few elements and a long k (a convolution's
 * weight gradient: Cout x Cin*9 over the pixels), and on CPU devices for
 * C = A B^T, whose operands both run along k.  The host
 * (src/backend/vulkan/vk_blas.c) picks the variant and its constants.
 *
 * C = alpha op(A) op(B) + beta C for each of the batch (global z).
 * Arguments as blas/gemm.  Each work-group computes one TM x TN block of C
 * (global x counts work-groups' invocations, one work-group per TN
 * columns; global y counts blocks of TM rows): invocation l sums k = l,
 * l + W, l + 2 W, ... (W the work-group size; with VEC, 4 of k at a time
 * from k = 4 l), then the work-group adds its W partial sums in shared
 * memory, after one barrier.  Constants (-DNAME=value):
 *   TRANS_A, TRANS_B  op(A) = A^T, op(B) = B^T;
 *   TM, TN            the block;
 *   VEC               read A and B as vec4 along k (only not TRANS_A and
 *                     TRANS_B: the host sets it where the starts and
 *                     leading dimensions are multiples of 4);
 *   PARTIALS          floats of shared memory: at least (W + 1) TM TN.
 * beta == 0 never reads C.
 */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TRANS_A = 0;
layout(constant_id = 4) const int TRANS_B = 0;
layout(constant_id = 5) const int TM = 8;
layout(constant_id = 6) const int TN = 8;
layout(constant_id = 7) const int VEC = 0;
layout(constant_id = 8) const int PARTIALS = 4160;

TT_BUFFER(0, float, a);
TT_BUFFER(0, vec4, a4);
TT_BUFFER(1, float, b);
TT_BUFFER(1, vec4, b4);
TT_BUFFER(2, float, c);
layout(push_constant) uniform Args {
    uint a_offset; uint b_offset; uint c_offset;
    int m; int n; int k; int lda; int ldb; int ldc;
    int stride_a; int stride_b; int stride_c;
    float alpha; float beta;
} args;

/* partial sum o (= s TN + t) of invocation l at o (W + 1) + l: the padding
 * keeps both the writes and the reads on distinct banks */
shared float partial[PARTIALS];

void main()
{
    int w = int(gl_WorkGroupSize.x), l = int(gl_LocalInvocationID.x);
    int i0 = int(gl_WorkGroupID.y) * TM, j0 = int(gl_WorkGroupID.x) * TN;
    int batch = int(gl_GlobalInvocationID.z);
    int a0 = TT_AT(args.a_offset, 4) + batch * args.stride_a;
    int b0 = TT_AT(args.b_offset, 4) + batch * args.stride_b;
    int c0 = TT_AT(args.c_offset, 4) + batch * args.stride_c;
    /* where row s of op(A) and column t of op(B) start (clamped) */
    int a_row[TM], b_col[TN];
    for (int s = 0; s < TM; s++) {
        int i = min(i0 + s, args.m - 1);
        a_row[s] = a0 + (TRANS_A != 0 ? i : i * args.lda);
    }
    for (int t = 0; t < TN; t++) {
        int j = min(j0 + t, args.n - 1);
        b_col[t] = b0 + (TRANS_B != 0 ? j * args.ldb : j);
    }
    int a_step = TRANS_A != 0 ? args.lda : 1, b_step = TRANS_B != 0 ? 1 : args.ldb;

    float acc[TM][TN];
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TN; t++) acc[s][t] = 0.0;
    int scalar_from = 0;
    if (VEC != 0) {
        scalar_from = args.k - args.k % 4;
        for (int p = 4 * l; p < scalar_from; p += 4 * w) {
            vec4 av[TM];
            for (int s = 0; s < TM; s++) av[s] = TT_B(a4)[(a_row[s] + p) / 4];
            for (int t = 0; t < TN; t++) {
                vec4 bv = TT_B(b4)[(b_col[t] + p) / 4];
                for (int s = 0; s < TM; s++) acc[s][t] += dot(av[s], bv);
            }
        }
    }
    for (int p = scalar_from + l; p < args.k; p += w) {
        float av[TM];
        for (int s = 0; s < TM; s++) av[s] = TT_B(a)[a_row[s] + p * a_step];
        for (int t = 0; t < TN; t++) {
            float bv = TT_B(b)[b_col[t] + p * b_step];
            for (int s = 0; s < TM; s++) acc[s][t] += av[s] * bv;
        }
    }
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TN; t++) partial[(s * TN + t) * (w + 1) + l] = acc[s][t];
    barrier();
    for (int o = l; o < TM * TN; o += w) {
        float sum = 0.0;
        for (int q = 0; q < w; q++) sum += partial[o * (w + 1) + q];
        int i = i0 + o / TN, j = j0 + o % TN;
        if (i >= args.m || j >= args.n) continue;
        int at = c0 + i * args.ldc + j;
        float r = args.alpha * sum;
        TT_B(c)[at] = args.beta == 0.0 ? r : r + args.beta * TT_B(c)[at];
    }
}
