/* lovasz/lovasz_sort_local: stage_k 0: the keys (errors; -INFINITY out of
 * the plane) and indices of tile (group x) of plane y, sorted; stage_k > T:
 * the bitonic merge steps j < T of stage k on keys and index, T = min(P,
 * 2 TT_WG) (opencl/lovasz.cl; arguments keys, index, logits, targets as
 * bytes, HW, P, C, ignore, softmax, stage_k). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, keys);
TT_BUFFER(1, int, index);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, targets);
layout(push_constant) uniform Args {
    uint keys_offset; uint index_offset; uint logits_offset; uint targets_offset;
    int HW; int P; int C; int ignore; int softmax; int stage_k;
} args;
shared float key[2 * TT_WG];
shared int idx[2 * TT_WG];

bool before(float ka, int ia, float kb, int ib)
{
    return ka > kb || (ka == kb && ia < ib);
}

float error_of(int plane, int pos)
{
    const float minus_infinity = uintBitsToFloat(0xff800000u);
    int HW = args.HW, C = args.C;
    if (pos >= HW) return minus_infinity;
    int x0 = TT_AT(args.logits_offset, 4);
    if (args.softmax == 0) {
        int t = TT_BYTE(targets, args.targets_offset, plane * HW + pos);
        if (t == args.ignore || t > 1) return minus_infinity;
        precise float e = 1.0 - TT_B(logits)[x0 + plane * HW + pos] * (t != 0 ? 1.0 : -1.0);
        return e;
    }
    int n = plane / C, c = plane - n * C;
    int label = TT_BYTE(targets, args.targets_offset, n * HW + pos);
    if (label == args.ignore || label >= C) return minus_infinity;
    int x = x0 + n * C * HW + pos;
    float m = TT_B(logits)[x];
    for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x + k * HW]);
    precise float e = 0.0;
    for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x + k * HW] - m);
    precise float p = exp(TT_B(logits)[x + c * HW] - m) / e;
    precise float r = label == c ? 1.0 - p : p;
    return r;
}

void main()
{
    int P = args.P, T = min(P, 2 * TT_WG);
    int plane = int(gl_GlobalInvocationID.y), lid = int(gl_LocalInvocationID.x);
    int base = int(gl_WorkGroupID.x) * T;
    int k0 = TT_AT(args.keys_offset, 4) + plane * P, i0 = TT_AT(args.index_offset, 4) + plane * P;
    for (int h = 0; h < 2; h++) {
        int s = lid + h * TT_WG;
        if (s >= T) continue;
        int pos = base + s;
        if (args.stage_k == 0) {
            key[s] = error_of(plane, pos);
            idx[s] = pos;
        } else {
            key[s] = TT_B(keys)[k0 + pos];
            idx[s] = TT_B(index)[i0 + pos];
        }
    }
    int k_end = args.stage_k == 0 ? T : args.stage_k;
    for (int k = args.stage_k == 0 ? 2 : args.stage_k; k <= k_end; k <<= 1) {
        for (int j = min(k, T) >> 1; j > 0; j >>= 1) {
            barrier();
            if (lid < T / 2) {
                int i = ((lid & ~(j - 1)) << 1) | (lid & (j - 1)), l = i + j;
                bool ascending = ((base + i) & k) == 0;
                if (ascending == before(key[l], idx[l], key[i], idx[i])) {
                    float kt = key[i];
                    int it = idx[i];
                    key[i] = key[l];
                    idx[i] = idx[l];
                    key[l] = kt;
                    idx[l] = it;
                }
            }
        }
    }
    barrier();
    for (int h = 0; h < 2; h++) {
        int s = lid + h * TT_WG;
        if (s >= T) continue;
        TT_B(keys)[k0 + base + s] = key[s];
        TT_B(index)[i0 + base + s] = idx[s];
    }
}
