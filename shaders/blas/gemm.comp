/* blas/gemm: row-major SGEMM by register tiling, without shared memory or
 * barriers: the variant for CPU devices (lavapipe), where a barrier is
 * expensive and every load is paid per invocation.  The host
 * (src/backend/vulkan/vk_blas.c) picks the variant and its constants.
 *
 * C = alpha op(A) op(B) + beta C for each of the batch (global z).
 * Arguments a, b, c, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c,
 * alpha, beta.  Constants (-DNAME=value):
 *   TRANS_A, TRANS_B  op(A) = A^T, op(B) = B^T;
 *   TRANS_C           C is stored transposed (element (i, j) at j ldc + i):
 *                     the host computes C = A^T B^T as C^T = B A this way,
 *                     so that neighbouring invocations read neighbouring
 *                     floats of A;
 *   TM, TNV           each invocation computes TM rows by TNV groups of 4
 *                     adjacent columns, the groups a work-group width apart
 *                     (global x counts groups of 4 TNV columns, global y
 *                     groups of TM rows);
 *   VEC_A             read op(A) as vec4 along its rows (TRANS_A only),
 *   VEC_B             read op(B) as vec4 along its columns (not TRANS_B):
 *                     the host sets them only where the matrix's start,
 *                     leading dimension and row (column) count are
 *                     multiples of 4, so that no vec4 leaves the matrix.
 *                     On a CPU device a vec4 costs little more than a float;
 *   VEC_C             write C as vec4 (not TRANS_C; C's start, ldc and n
 *                     multiples of 4).
 * Row and column indices are clamped into the matrix, so that the loop over
 * k has no branch; only the stores are guarded.  beta == 0 never reads C
 * (a NaN there is ignored, as in BLAS).
 */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TRANS_A = 0;
layout(constant_id = 4) const int TRANS_B = 0;
layout(constant_id = 5) const int TRANS_C = 0;
layout(constant_id = 6) const int TM = 16;
layout(constant_id = 7) const int TNV = 4;
layout(constant_id = 8) const int VEC_A = 0;
layout(constant_id = 9) const int VEC_B = 0;
layout(constant_id = 10) const int VEC_C = 0;

/* A and B as floats and, for aligned reads, as vec4 */
TT_BUFFER(0, float, a);
TT_BUFFER(0, vec4, a4);
TT_BUFFER(1, float, b);
TT_BUFFER(1, vec4, b4);
TT_BUFFER(2, float, c);
TT_BUFFER(2, vec4, c4);
layout(push_constant) uniform Args {
    uint a_offset; uint b_offset; uint c_offset;
    int m; int n; int k; int lda; int ldb; int ldc;
    int stride_a; int stride_b; int stride_c;
    float alpha; float beta;
} args;

const int TN = 4 * TNV;

/* alpha acc (+ beta C, with read_c) into C; the block's rows from i0, its
 * column groups from j0 a work-group width apart */
void store(int i0, int j0, int c0, vec4 acc[TM][TNV], bool read_c)
{
    int wg = int(gl_WorkGroupSize.x);
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TNV; t++) {
            int i = i0 + s, j = j0 + 4 * t * wg;
            if (i >= args.m || j >= args.n) continue;
            vec4 r = args.alpha * acc[s][t];
            if (VEC_C != 0) {
                int at = (c0 + i * args.ldc + j) / 4;
                TT_B(c4)[at] = read_c ? r + args.beta * TT_B(c4)[at] : r;
                continue;
            }
            for (int q = 0; q < 4 && j + q < args.n; q++) {
                int at = c0 + (TRANS_C != 0 ? (j + q) * args.ldc + i : i * args.ldc + j + q);
                TT_B(c)[at] = read_c ? r[q] + args.beta * TT_B(c)[at] : r[q];
            }
        }
}

void main()
{
    int wg = int(gl_WorkGroupSize.x);
    /* column group t: columns j0 + 4 t wg .. + 3 */
    int j0 = 4 * (int(gl_WorkGroupID.x) * wg * TNV + int(gl_LocalInvocationID.x));
    int i0 = int(gl_GlobalInvocationID.y) * TM;
    int batch = int(gl_GlobalInvocationID.z);
    if (i0 >= args.m || j0 >= args.n) return;
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
        int j = min(j0 + (t / 4) * 4 * wg + t % 4, args.n - 1);
        b_col[t] = b0 + (TRANS_B != 0 ? j * args.ldb : j);
    }
    /* the vec4 paths: the vec4 holding 4 rows (columns) from row 4 u (group
     * t), the last whole one at the edge */
    int a_quad[TM / 4 + 1], b_quad[TNV];
    for (int u = 0; u < TM / 4; u++) a_quad[u] = (a0 + min(i0 + 4 * u, args.m - 4)) / 4;
    for (int t = 0; t < TNV; t++) b_quad[t] = (b0 + min(j0 + 4 * t * wg, args.n - 4)) / 4;
    int a_step = TRANS_A != 0 ? args.lda : 1, b_step = TRANS_B != 0 ? 1 : args.ldb;

    vec4 acc[TM][TNV];
    for (int s = 0; s < TM; s++)
        for (int t = 0; t < TNV; t++) acc[s][t] = vec4(0.0);
    for (int p = 0; p < args.k; p++) {
        vec4 bv[TNV];
        if (VEC_B != 0) {
            for (int t = 0; t < TNV; t++) bv[t] = TT_B(b4)[b_quad[t] + p * (args.ldb / 4)];
        } else {
            for (int t = 0; t < TN; t++) bv[t / 4][t % 4] = TT_B(b)[b_col[t] + p * b_step];
        }
        if (VEC_A != 0) {
            for (int u = 0; u < TM / 4; u++) {
                vec4 av = TT_B(a4)[a_quad[u] + p * (args.lda / 4)];
                for (int r = 0; r < 4; r++)
                    for (int t = 0; t < TNV; t++) acc[4 * u + r][t] += av[r] * bv[t];
            }
        } else {
            for (int s = 0; s < TM; s++) {
                float av = TT_B(a)[a_row[s] + p * a_step];
                for (int t = 0; t < TNV; t++) acc[s][t] += av * bv[t];
            }
        }
    }
    if (args.beta == 0.0) store(i0, j0, c0, acc, false);
    else store(i0, j0, c0, acc, true);
}
