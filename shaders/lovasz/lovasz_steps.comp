/* lovasz/lovasz_steps: walks the sorted slots of chunk x of plane y: cp_i
 * by a work-group prefix sum (plus the chunk's offset), cn_i = i - cp_i,
 * the Jaccard step J_i - J_{i-1}, then by mode: 0 chunk_loss = sum f(e)
 * step and chunk_invalid; 1 dest (dlogits) += scale w -s step where e > 0;
 * 2 dest (planes, HW) = dloss/dp, 0 out of the plane.  With one chunk, G
 * is the group's count and plane_positive gets it (opencl/lovasz.cl;
 * arguments chunk_loss, chunk_invalid, plane_positive, dest, keys, index,
 * chunk_offset, targets as bytes, weights, HW, P, C, K, chunks, ignore,
 * softmax, mode, has_weights, scale). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"
#include "lovasz_common.glsl"

TT_BUFFER(0, float, chunk_loss);
TT_BUFFER(1, uint, chunk_invalid);
TT_BUFFER(2, uint, plane_positive);
TT_BUFFER(3, float, dest);
TT_BUFFER(4, float, keys);
TT_BUFFER(5, int, index);
TT_BUFFER(6, uint, chunk_offset);
TT_BUFFER(7, uint, targets);
TT_BUFFER(8, float, weights);
layout(push_constant) uniform Args {
    uint loss_offset; uint invalid_offset; uint positive_offset; uint dest_offset;
    uint keys_offset; uint index_offset; uint chunk_offset_offset; uint targets_offset;
    uint weights_offset;
    int HW; int P; int C; int K; int chunks; int ignore; int softmax; int mode;
    int has_weights; float scale;
} args;
shared uint scan[TT_WG];
shared float s[TT_WG];

/* 0/1, or -1 ignored, -2 invalid (lovasz_target) */
int target_of(int plane, int pixel)
{
    int HW = args.HW, C = args.C, n = plane / C;
    bool softmax = args.softmax != 0;
    int t = TT_BYTE(targets, args.targets_offset, softmax ? n * HW + pixel : plane * HW + pixel);
    return lovasz_target(t, args.ignore, C, softmax, plane - n * C);
}

/* J_i - J_{i-1} (lovasz_step) */
float jaccard_step(int t, float G, float cp, float cn)
{
    if (t != 0) {
        precise float r = 1.0 / (G + cn);
        return r;
    }
    if (G + cn - 1.0 == 0.0) return 1.0;
    precise float r = (G - cp) / ((G + cn - 1.0) * (G + cn));
    return r;
}

void main()
{
    int plane = int(gl_GlobalInvocationID.y), chunk = int(gl_WorkGroupID.x);
    int lid = int(gl_LocalInvocationID.x), P = args.P, K = args.K, HW = args.HW, C = args.C;
    int n = plane / C, c = plane - n * C;
    int first = chunk * TT_WG * K + lid * K;
    int k0 = TT_AT(args.keys_offset, 4) + plane * P, i0 = TT_AT(args.index_offset, 4) + plane * P;
    int d0 = TT_AT(args.dest_offset, 4) + plane * HW;
    uint positives = 0u;
    for (int q = 0; q < K && first + q < P; q++) {
        int pixel = TT_B(index)[i0 + first + q];
        if (pixel < HW && target_of(plane, pixel) == 1) positives++;
    }
    scan[lid] = positives;
    for (int off = 1; off < TT_WG; off <<= 1) {
        barrier();
        uint add = lid >= off ? scan[lid - off] : 0u;
        barrier();
        scan[lid] += add;
    }
    barrier();
    uint cp = scan[lid] - positives, G = scan[TT_WG - 1];
    barrier();
    int pp = TT_AT(args.positive_offset, 4);
    if (args.chunks == 1) {
        if (lid == 0) TT_B(plane_positive)[pp + plane] = G;
    } else {
        G = TT_B(plane_positive)[pp + plane];
        cp += TT_B(chunk_offset)[TT_AT(args.chunk_offset_offset, 4) + plane * args.chunks + chunk];
    }
    float weight = 0.0;
    if (args.mode == 1) { /* hinge: over all C classes */
        precise float sum = 0.0;
        for (int k = 0; k < C; k++)
            sum += args.has_weights != 0 ? TT_B(weights)[TT_AT(args.weights_offset, 4) + k] : 1.0;
        float own = args.has_weights != 0 ? TT_B(weights)[TT_AT(args.weights_offset, 4) + c] : 1.0;
        precise float w = sum > 0.0 ? own / sum : 0.0;
        weight = args.scale * w;
    }
    precise float loss = 0.0;
    uint invalid = 0u;
    for (int q = 0; q < K && first + q < P; q++) {
        int slot = first + q;
        int pixel = TT_B(index)[i0 + slot];
        if (pixel >= HW) continue;
        int t = target_of(plane, pixel);
        if (t < 0) {
            if (t == -2 && (args.softmax == 0 || c == 0)) invalid++;
            if (args.mode == 2) TT_B(dest)[d0 + pixel] = 0.0;
            continue;
        }
        cp += uint(t);
        uint cn = uint(slot) + 1u - cp;
        float step = jaccard_step(t, float(G), float(cp), float(cn));
        float e = TT_B(keys)[k0 + slot];
        if (args.mode == 0) {
            loss += (args.softmax != 0 ? e : max(e, 0.0)) * step;
        } else if (args.mode == 1) {
            if (e > 0.0) {
                precise float g = TT_B(dest)[d0 + pixel] + weight * (t != 0 ? -step : step);
                TT_B(dest)[d0 + pixel] = g;
            }
        } else {
            TT_B(dest)[d0 + pixel] = t != 0 ? -step : step;
        }
    }
    if (args.mode != 0) return;
    s[lid] = loss;
    scan[lid] = invalid;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) {
            s[lid] += s[lid + half_];
            scan[lid] += scan[lid + half_];
        }
    }
    if (lid == 0) {
        TT_B(chunk_loss)[TT_AT(args.loss_offset, 4) + plane * args.chunks + chunk] = s[0];
        TT_B(chunk_invalid)[TT_AT(args.invalid_offset, 4) + plane * args.chunks + chunk] = scan[0];
    }
}
