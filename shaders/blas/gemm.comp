/* blas/gemm: row-major SGEMM for the Vulkan backend's `gemm` member
 * (src/backend/vulkan/vk_blas.c): C = alpha op(A) op(B) + beta C for each
 * of the batch (global z).  Arguments a, b, c, m, n, k, lda, ldb, ldc,
 * stride_a, stride_b, stride_c, alpha, beta; -DTRANS_A=1 / -DTRANS_B=1
 * transpose.  Register tiling, no shared memory and no barriers: each
 * invocation computes TM rows by TN columns of C, the columns a work-group
 * width apart (global x counts groups of TN columns, global y of TM rows;
 * TM and TN are also in vk_blas.c).  Loads clamp their indices to the
 * matrix, so the inner loop has no branches; only the stores are guarded.
 * beta == 0 never reads C (a NaN there is ignored, as in BLAS). */
#version 450
#include "common.glsl"

#define TM 8
#define TN 8 /* two vec4 of accumulators per row: the arithmetic below needs 8 */
#if TN != 8
#error "blas/gemm: its accumulators are written for TN 8"
#endif

layout(constant_id = 3) const int TRANS_A = 0;
layout(constant_id = 4) const int TRANS_B = 0;

TT_BUFFER(0, float, a);
TT_BUFFER(1, float, b);
TT_BUFFER(2, float, c);
layout(push_constant) uniform Args {
    uint a_offset; uint b_offset; uint c_offset;
    int m; int n; int k; int lda; int ldb; int ldc;
    int stride_a; int stride_b; int stride_c;
    float alpha; float beta;
} args;

void main()
{
    /* columns j0 + t * WG: neighbouring invocations read neighbouring B and
     * write neighbouring C (vector loads and stores on a CPU) */
    int wg = int(gl_WorkGroupSize.x);
    int j0 = int(gl_WorkGroupID.x) * wg * TN + int(gl_LocalInvocationID.x);
    int i0 = int(gl_GlobalInvocationID.y) * TM;
    int batch = int(gl_GlobalInvocationID.z);
    if (i0 >= args.m || j0 >= args.n) return;
    int a0 = TT_AT(args.a_offset, 4) + batch * args.stride_a;
    int b0 = TT_AT(args.b_offset, 4) + batch * args.stride_b;
    int c0 = TT_AT(args.c_offset, 4) + batch * args.stride_c;
    /* where row i of op(A) and column j of op(B) start (clamped) */
    int a_row[TM], b_col[TN];
    for (int s = 0; s < TM; s++) {
        int i = min(i0 + s, args.m - 1);
        a_row[s] = a0 + (TRANS_A != 0 ? i : i * args.lda);
    }
    for (int t = 0; t < TN; t++) {
        int j = min(j0 + t * wg, args.n - 1);
        b_col[t] = b0 + (TRANS_B != 0 ? j * args.ldb : j);
    }
    int a_step = TRANS_A != 0 ? args.lda : 1, b_step = TRANS_B != 0 ? 1 : args.ldb;
    /* row s's columns t < 4 and t >= 4, as vec4 (lavapipe runs these
     * faster than a float acc[TM][TN]) */
    vec4 lo[TM], hi[TM];
    for (int s = 0; s < TM; s++) lo[s] = hi[s] = vec4(0.0);
    for (int p = 0; p < args.k; p++) {
        float av[TM];
        for (int s = 0; s < TM; s++) av[s] = TT_B(a)[a_row[s] + p * a_step];
        vec4 bl = vec4(TT_B(b)[b_col[0] + p * b_step], TT_B(b)[b_col[1] + p * b_step],
                       TT_B(b)[b_col[2] + p * b_step], TT_B(b)[b_col[3] + p * b_step]);
        vec4 bh = vec4(TT_B(b)[b_col[4] + p * b_step], TT_B(b)[b_col[5] + p * b_step],
                       TT_B(b)[b_col[6] + p * b_step], TT_B(b)[b_col[7] + p * b_step]);
        for (int s = 0; s < TM; s++) {
            lo[s] += av[s] * bl;
            hi[s] += av[s] * bh;
        }
    }
    float acc[TM][TN];
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < 4; t++) acc[s][t] = lo[s][t], acc[s][t + 4] = hi[s][t];
    for (int s = 0; s < TM && i0 + s < args.m; s++)
        for (int t = 0; t < TN && j0 + t * wg < args.n; t++) {
            int at = c0 + (i0 + s) * args.ldc + j0 + t * wg;
            TT_B(c)[at] = args.beta == 0.0 ? args.alpha * acc[s][t]
                                     : args.alpha * acc[s][t] + args.beta * TT_B(c)[at];
        }
}
