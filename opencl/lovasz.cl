/*
 * The Lovász losses (src/ops/lovasz.h): per (image, class) plane, a bitonic
 * sort of (error, pixel index) pairs, a scan of the sorted targets, the
 * Jaccard steps, the loss and the gradient.  Host side: src/ops/lovasz.c.
 *
 * A plane is padded to P (a power of two) sort slots.  Slot order: error
 * decreasing, then pixel index increasing.  Ignored and invalid pixels and
 * the padding get the key -INFINITY, so the valid pixels fill the first
 * slots (rank = slot + 1) and the padding (index >= HW) comes last.
 *
 * Every launch is 2-D: dimension 1 is the plane (n*C + c).  `softmax` picks
 * the mode: 0 hinge, targets (N, C, H, W) 0/1; 1 softmax, labels (N, H, W).
 * After the sort the plane is cut in `chunks` chunks of TT_WG * K slots,
 * work-item l of a chunk taking K consecutive slots.
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* 1 when slot a = (ka, ia) goes before slot b = (kb, ib) */
TT_INLINE int lovasz_before(float ka, int ia, float kb, int ib)
{
    return ka > kb || (ka == kb && ia < ib);
}

/* The sort key of pixel `pos` of plane (n, c), -INFINITY when it is out of
 * the plane (pos >= HW, ignored, invalid). */
TT_INLINE float lovasz_key(__global const float *logits, __global const uchar *targets, int plane,
                        int pos, int HW, int C, int ignore, int softmax)
{
    if (pos >= HW) return -INFINITY;
    if (!softmax) {
        int t = targets[plane * HW + pos];
        if (t == ignore || t > 1) return -INFINITY;
        return 1.0f - logits[plane * HW + pos] * (t ? 1.0f : -1.0f);
    }
    int n = plane / C, c = plane - n * C;
    int label = targets[n * HW + pos];
    if (label == ignore || label >= C) return -INFINITY;
    __global const float *x = logits + n * C * HW + pos;
    float m = x[0];
    for (int k = 1; k < C; k++) m = fmax(m, x[k * HW]);
    float e = 0.0f;
    for (int k = 0; k < C; k++) e += exp(x[k * HW] - m);
    float p = exp(x[c * HW] - m) / e;
    return label == c ? 1.0f - p : p;
}

/* stage_k 0: fills the tile's keys and indices from logits and sorts each
 * tile of T = min(P, 2 TT_WG) slots; stage_k > T: the bitonic merge steps
 * j < T of stage k on the sorted arrays.  Global (P / T * TT_WG, planes). */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void lovasz_sort_local(TT_MEM(float, keys), TT_MEM(int, index), TT_MEM(const float, logits),
                       TT_MEM(const uchar, targets), const int HW, const int P, const int C,
                       const int ignore, const int softmax, const int stage_k)
{
    TT_PTR(float, keys);
    TT_PTR(int, index);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    __local float key[2 * TT_WG];
    __local int idx[2 * TT_WG];
    const int T = min(P, 2 * TT_WG);
    int plane = get_global_id(1), lid = get_local_id(0);
    int base = get_group_id(0) * T;
    for (int h = 0; h < 2; h++) {
        int s = lid + h * TT_WG;
        if (s >= T) continue;
        int pos = base + s;
        if (stage_k == 0) {
            key[s] = lovasz_key(logits, targets, plane, pos, HW, C, ignore, softmax);
            idx[s] = pos;
        } else {
            key[s] = keys[plane * P + pos];
            idx[s] = index[plane * P + pos];
        }
    }
    int k = stage_k == 0 ? 2 : stage_k;
    int k_end = stage_k == 0 ? T : stage_k;
    for (; k <= k_end; k <<= 1) {
        for (int j = min(k, T) >> 1; j > 0; j >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < T / 2) {
                int i = ((lid & ~(j - 1)) << 1) | (lid & (j - 1)), l = i + j;
                int ascending = ((base + i) & k) == 0;
                if (ascending == lovasz_before(key[l], idx[l], key[i], idx[i])) {
                    float kt = key[i];
                    int it = idx[i];
                    key[i] = key[l], idx[i] = idx[l];
                    key[l] = kt, idx[l] = it;
                }
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 0; h < 2; h++) {
        int s = lid + h * TT_WG;
        if (s >= T) continue;
        keys[plane * P + base + s] = key[s];
        index[plane * P + base + s] = idx[s];
    }
}

/* One bitonic compare-exchange step (stage k, distance j >= 2 TT_WG) over
 * the whole plane.  Global (P / 2, planes). */
__kernel void lovasz_sort_global(TT_MEM(float, keys), TT_MEM(int, index), const int P,
                                 const int k, const int j)
{
    TT_PTR(float, keys);
    TT_PTR(int, index);
    int pair = get_global_id(0), plane = get_global_id(1);
    if (pair >= P / 2) return;
    int i = ((pair & ~(j - 1)) << 1) | (pair & (j - 1)), l = i + j;
    __global float *key = keys + plane * P;
    __global int *idx = index + plane * P;
    float ki = key[i], kl = key[l];
    int ii = idx[i], il = idx[l];
    int ascending = (i & k) == 0;
    if (ascending == lovasz_before(kl, il, ki, ii)) {
        key[i] = kl, idx[i] = il;
        key[l] = ki, idx[l] = ii;
    }
}

/* The target (0/1) of pixel `pixel` in plane (n, c), -1 when it is out of
 * the plane (ignored: -1; invalid: -2). */
TT_INLINE int lovasz_target(__global const uchar *targets, int plane, int pixel, int HW, int C,
                         int ignore, int softmax)
{
    int n = plane / C;
    int t = softmax ? targets[n * HW + pixel] : targets[plane * HW + pixel];
    if (t == ignore) return -1;
    if (t >= (softmax ? C : 2)) return -2;
    return softmax ? (t == plane - n * C) : t;
}

/* Inclusive prefix sum of v over the group, *total the group's sum; scan
 * is TT_WG __local uints, free again on return. */
TT_INLINE uint lovasz_group_scan(uint v, __local uint *scan, uint *total)
{
    int lid = get_local_id(0);
    scan[lid] = v;
    for (int off = 1; off < TT_WG; off <<= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        uint add = lid >= off ? scan[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[lid] += add;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = scan[lid];
    *total = scan[TT_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* chunk_offset[plane * chunks + chunk] = positives among the chunk's
 * slots.  Global (chunks * TT_WG, planes). */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void lovasz_count(TT_MEM(uint, chunk_offset), TT_MEM(const int, index),
                  TT_MEM(const uchar, targets), const int HW, const int P, const int C,
                  const int ignore, const int softmax, const int K, const int chunks)
{
    TT_PTR(uint, chunk_offset);
    TT_PTR(const int, index);
    TT_PTR(const uchar, targets);
    __local uint scan[TT_WG];
    int plane = get_global_id(1), chunk = get_group_id(0), lid = get_local_id(0);
    int first = chunk * TT_WG * K + lid * K;
    uint positives = 0;
    for (int q = 0; q < K && first + q < P; q++) {
        int pixel = index[plane * P + first + q];
        if (pixel < HW)
            positives += lovasz_target(targets, plane, pixel, HW, C, ignore, softmax) == 1;
    }
    uint total;
    lovasz_group_scan(positives, scan, &total);
    if (lid == 0) chunk_offset[plane * chunks + chunk] = total;
}

/* chunk_offset (counts in, exclusive prefix sums out) and plane_positive =
 * the plane's positives G.  Global (TT_WG, planes). */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void lovasz_offsets(TT_MEM(uint, chunk_offset), TT_MEM(uint, plane_positive), const int chunks)
{
    TT_PTR(uint, chunk_offset);
    TT_PTR(uint, plane_positive);
    __local uint scan[TT_WG];
    int plane = get_global_id(1), lid = get_local_id(0);
    uint running = 0;
    for (int first = 0; first < chunks; first += TT_WG) {
        int at = plane * chunks + first + lid;
        uint v = first + lid < chunks ? chunk_offset[at] : 0u;
        uint total;
        uint inclusive = lovasz_group_scan(v, scan, &total);
        if (first + lid < chunks) chunk_offset[at] = running + inclusive - v;
        running += total;
    }
    if (lid == 0) plane_positive[plane] = running;
}

/* J_i - J_{i-1} at rank i, cp, cn counted up to rank i inclusive, G the
 * plane's positives; t the target at rank i. */
TT_INLINE float lovasz_step(int t, float G, float cp, float cn)
{
    if (t) return 1.0f / (G + cn);
    if (G + cn - 1.0f == 0.0f) return 1.0f; /* J_{i-1} = 0: G = 0, first rank */
    return (G - cp) / ((G + cn - 1.0f) * (G + cn));
}

/* The weight of class c over the sum of weights of all C classes (hinge),
 * or of the image's present classes (softmax, G of plane n*C + k > 0); 0
 * when that sum is 0. */
TT_INLINE float lovasz_weight(__global const float *weights, int has_weights,
                           __global const uint *plane_positive, int n, int c, int C,
                           int softmax)
{
    float sum = 0.0f, own = 0.0f;
    for (int k = 0; k < C; k++) {
        if (softmax && plane_positive[n * C + k] == 0) continue;
        float w = has_weights ? weights[k] : 1.0f;
        sum += w;
        if (k == c) own = w;
    }
    return sum > 0.0f ? own / sum : 0.0f;
}

/* Walks the sorted slots of chunk (get_group_id(0)) of each plane.
 *  mode 0: chunk_loss = sum of f(e) step, chunk_invalid = invalid targets
 *          (softmax: counted in class 0's planes only);
 *  mode 1 (hinge backward): dest (dlogits) += scale w -s step where e > 0;
 *  mode 2 (softmax backward): dest (planes, HW) = dloss/dp unweighted at
 *          every pixel of the plane, 0 out of it.
 * With one chunk, G is the group's own count and plane_positive gets it;
 * otherwise G and the chunk's offset come from lovasz_offsets.  Global
 * (chunks * TT_WG, planes). */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void lovasz_steps(TT_MEM(float, chunk_loss), TT_MEM(uint, chunk_invalid),
                  TT_MEM(uint, plane_positive), TT_MEM(float, dest), TT_MEM(const float, keys),
                  TT_MEM(const int, index), TT_MEM(const uint, chunk_offset),
                  TT_MEM(const uchar, targets), TT_MEM(const float, weights), const int HW,
                  const int P, const int C, const int K, const int chunks, const int ignore,
                  const int softmax, const int mode, const int has_weights, const float scale)
{
    TT_PTR(float, chunk_loss);
    TT_PTR(uint, chunk_invalid);
    TT_PTR(uint, plane_positive);
    TT_PTR(float, dest);
    TT_PTR(const float, keys);
    TT_PTR(const int, index);
    TT_PTR(const uint, chunk_offset);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    __local uint scan[TT_WG];
    __local float s[TT_WG];
    int plane = get_global_id(1), chunk = get_group_id(0), lid = get_local_id(0);
    int n = plane / C, c = plane - n * C;
    int first = chunk * TT_WG * K + lid * K;
    uint positives = 0;
    for (int q = 0; q < K && first + q < P; q++) {
        int pixel = index[plane * P + first + q];
        if (pixel < HW)
            positives += lovasz_target(targets, plane, pixel, HW, C, ignore, softmax) == 1;
    }
    uint G;
    uint cp = lovasz_group_scan(positives, scan, &G) - positives;
    if (chunks == 1) {
        if (lid == 0) plane_positive[plane] = G;
    } else {
        G = plane_positive[plane];
        cp += chunk_offset[plane * chunks + chunk];
    }
    float weight = 0.0f;
    if (mode == 1) weight = scale * lovasz_weight(weights, has_weights, plane_positive, n, c, C, 0);
    float loss = 0.0f;
    uint invalid = 0;
    for (int q = 0; q < K && first + q < P; q++) {
        int slot = first + q;
        int pixel = index[plane * P + slot];
        if (pixel >= HW) continue;
        int t = lovasz_target(targets, plane, pixel, HW, C, ignore, softmax);
        if (t < 0) {
            if (t == -2 && (!softmax || c == 0)) invalid++;
            if (mode == 2) dest[plane * HW + pixel] = 0.0f;
            continue;
        }
        cp += (uint)t;
        uint cn = (uint)slot + 1u - cp;
        float step = lovasz_step(t, (float)G, (float)cp, (float)cn);
        float e = keys[plane * P + slot];
        if (mode == 0) loss += (softmax ? e : fmax(e, 0.0f)) * step;
        else if (mode == 1 && e > 0.0f) dest[plane * HW + pixel] += weight * (t ? -step : step);
        else if (mode == 2) dest[plane * HW + pixel] = t ? -step : step;
    }
    if (mode != 0) return;
    s[lid] = loss;
    scan[lid] = invalid;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) {
            s[lid] += s[lid + stride];
            scan[lid] += scan[lid + stride];
        }
    }
    if (lid == 0) {
        chunk_loss[plane * chunks + chunk] = s[0];
        chunk_invalid[plane * chunks + chunk] = scan[0];
    }
}

/* result += (sum over images of the weighted class mean of the plane
 * losses, N, invalid).  One work-group, a work-item per image. */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void lovasz_finish(TT_MEM(float, result), TT_MEM(const float, chunk_loss),
                   TT_MEM(const uint, chunk_invalid), TT_MEM(const uint, plane_positive),
                   TT_MEM(const float, weights), const int N, const int C, const int chunks,
                   const int softmax, const int has_weights)
{
    TT_PTR(float, result);
    TT_PTR(const float, chunk_loss);
    TT_PTR(const uint, chunk_invalid);
    TT_PTR(const uint, plane_positive);
    TT_PTR(const float, weights);
    __local float s[TT_WG];
    __local uint b[TT_WG];
    int lid = get_local_id(0);
    float total = 0.0f;
    uint invalid = 0;
    for (int n = lid; n < N; n += TT_WG) {
        float sum = 0.0f, wsum = 0.0f;
        for (int c = 0; c < C; c++) {
            int plane = n * C + c;
            float loss = 0.0f;
            for (int k = 0; k < chunks; k++) {
                loss += chunk_loss[plane * chunks + k];
                invalid += chunk_invalid[plane * chunks + k];
            }
            if (softmax && plane_positive[plane] == 0) continue;
            float w = has_weights ? weights[c] : 1.0f;
            sum += w * loss;
            wsum += w;
        }
        if (wsum > 0.0f) total += sum / wsum;
    }
    s[lid] = total;
    b[lid] = invalid;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) {
            s[lid] += s[lid + stride];
            b[lid] += b[lid + stride];
        }
    }
    if (lid == 0) {
        __global uint *words = (__global uint *)result;
        result[0] += s[0];
        words[1] += (uint)N;
        words[2] += b[0];
    }
}

/* dlogits += scale * p_j (g_j - sum_k g_k p_k) at valid pixels, g_k the
 * weighted dloss/dp of class k (grad, (N*C, HW), from lovasz_steps mode 2),
 * 0 for absent classes.  Global N * HW (1-D). */
__kernel void lovasz_softmax_backward(TT_MEM(float, dlogits), TT_MEM(const float, grad),
                                      TT_MEM(const float, logits), TT_MEM(const uchar, labels),
                                      TT_MEM(const uint, plane_positive),
                                      TT_MEM(const float, weights), const int N, const int C,
                                      const int HW, const int ignore, const int has_weights,
                                      const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, grad);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
    TT_PTR(const uint, plane_positive);
    TT_PTR(const float, weights);
    int p = get_global_id(0);
    if (p >= N * HW) return;
    int label = labels[p];
    if (label == ignore || label >= C) return;
    int n = p / HW, pixel = p - n * HW;
    float wsum = 0.0f;
    for (int k = 0; k < C; k++)
        if (plane_positive[n * C + k] > 0) wsum += has_weights ? weights[k] : 1.0f;
    if (!(wsum > 0.0f)) return;
    int base = n * C * HW + pixel;
    __global const float *x = logits + base;
    float m = x[0];
    for (int k = 1; k < C; k++) m = fmax(m, x[k * HW]);
    float e = 0.0f;
    for (int k = 0; k < C; k++) e += exp(x[k * HW] - m);
    float dot = 0.0f;
    for (int k = 0; k < C; k++) {
        if (plane_positive[n * C + k] == 0) continue;
        float w = has_weights ? weights[k] : 1.0f;
        dot += w / wsum * grad[base + k * HW] * (exp(x[k * HW] - m) / e);
    }
    for (int k = 0; k < C; k++) {
        float g = 0.0f;
        if (plane_positive[n * C + k] > 0)
            g = (has_weights ? weights[k] : 1.0f) / wsum * grad[base + k * HW];
        dlogits[base + k * HW] += scale * (exp(x[k * HW] - m) / e) * (g - dot);
    }
}
