/* lovasz/lovasz_finish: result += (sum over images of the weighted class
 * mean of the plane losses, softmax: over present classes only; N;
 * invalid); one work-group, a work-item per image (opencl/lovasz.cl;
 * arguments result, chunk_loss, chunk_invalid, plane_positive, weights, N,
 * C, chunks, softmax, has_weights). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, uint, result);
TT_BUFFER(1, float, chunk_loss);
TT_BUFFER(2, uint, chunk_invalid);
TT_BUFFER(3, uint, plane_positive);
TT_BUFFER(4, float, weights);
layout(push_constant) uniform Args {
    uint result_offset; uint loss_offset; uint invalid_offset; uint positive_offset;
    uint weights_offset;
    int N; int C; int chunks; int softmax; int has_weights;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x), C = args.C, chunks = args.chunks;
    int l0 = TT_AT(args.loss_offset, 4), b0 = TT_AT(args.invalid_offset, 4);
    precise float total = 0.0;
    uint invalid = 0u;
    for (int n = lid; n < args.N; n += TT_WG) {
        precise float sum = 0.0, wsum = 0.0;
        for (int k = 0; k < C; k++) {
            int plane = n * C + k;
            precise float loss = 0.0;
            for (int q = 0; q < chunks; q++) {
                loss += TT_B(chunk_loss)[l0 + plane * chunks + q];
                invalid += TT_B(chunk_invalid)[b0 + plane * chunks + q];
            }
            int at = TT_AT(args.positive_offset, 4) + plane;
            if (args.softmax != 0 && TT_B(plane_positive)[at] == 0u) continue;
            int wk = TT_AT(args.weights_offset, 4) + k;
            float w = args.has_weights != 0 ? TT_B(weights)[wk] : 1.0;
            sum += w * loss;
            wsum += w;
        }
        if (wsum > 0.0) total += sum / wsum;
    }
    s[lid] = total;
    c[lid] = 0u;
    b[lid] = invalid;
    TT_LOSS_GROUP_REDUCE(lid);
    if (lid == 0) {
        int r = TT_AT(args.result_offset, 4);
        precise float value = uintBitsToFloat(TT_B(result)[r]) + s[0];
        TT_B(result)[r] = floatBitsToUint(value);
        TT_B(result)[r + 1] += uint(args.N);
        TT_B(result)[r + 2] += b[0];
    }
}
