/* lovasz/lovasz_count: chunk_offset[plane * chunks + chunk] = the positives
 * among the K TT_WG sorted slots of chunk x of plane y (opencl/lovasz.cl;
 * arguments chunk_offset, index, targets as bytes, HW, P, C, ignore,
 * softmax, K, chunks). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"
#include "lovasz_common.glsl"

TT_BUFFER(0, uint, chunk_offset);
TT_BUFFER(1, int, index);
TT_BUFFER(2, uint, targets);
layout(push_constant) uniform Args {
    uint offset_offset; uint index_offset; uint targets_offset;
    int HW; int P; int C; int ignore; int softmax; int K; int chunks;
} args;
shared uint scan[TT_WG];

/* 0/1, or -1 ignored, -2 invalid (lovasz_target) */
int target_of(int plane, int pixel)
{
    int HW = args.HW, C = args.C, n = plane / C;
    bool softmax = args.softmax != 0;
    int t = TT_BYTE(targets, args.targets_offset, softmax ? n * HW + pixel : plane * HW + pixel);
    return lovasz_target(t, args.ignore, C, softmax, plane - n * C);
}

void main()
{
    int plane = int(gl_GlobalInvocationID.y), chunk = int(gl_WorkGroupID.x);
    int lid = int(gl_LocalInvocationID.x), P = args.P, K = args.K;
    int first = chunk * TT_WG * K + lid * K, i0 = TT_AT(args.index_offset, 4) + plane * P;
    uint positives = 0u;
    for (int q = 0; q < K && first + q < P; q++) {
        int pixel = TT_B(index)[i0 + first + q];
        if (pixel < args.HW && target_of(plane, pixel) == 1) positives++;
    }
    scan[lid] = positives;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) scan[lid] += scan[lid + half_];
    }
    if (lid == 0) {
        int at = TT_AT(args.offset_offset, 4) + plane * args.chunks + chunk;
        TT_B(chunk_offset)[at] = scan[0];
    }
}
