/*
 * Losses of segmentation: softmax cross-entropy over classes, sigmoid binary
 * cross-entropy and sigmoid focal loss per class (the region losses are
 * tversky.cl's, the Lovász ones lovasz.cl's).
 *
 * Forward kernels reduce on the device.  Stage 1 runs a fixed number of
 * work-groups of exactly TT_WG items (a power of two) with a grid stride; each
 * group writes one partial (sum, valid count, invalid count); stage 2
 * (loss_finish, one work-group) ADDS the totals into the 4-word result block
 * (float sum, uint count, uint invalid, reserved; see src/ops/reduce.h).
 *
 * Backward kernels compute the gradient of the SUM (not the mean) times
 * `scale`, and ADD it into dlogits.  Items that are ignored or invalid get no
 * gradient.  Logits are (N, C, H, W) floats; labels are (N, H, W) uchar class
 * indices; binary targets are (N, C, H, W) uchar 0/1.  `ignore` is a label
 * value in [0, 255] or -1 for none.  Sizes fit an int (checked on the host).
 *
 * Class weights (C floats, `weights`) multiply the loss and gradient of
 * class k's terms by weights[k] in the *_weighted kernels and in those with
 * a `weighted` flag set; with the flag 0 `weights` is any buffer, not read.
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* Reduces s (float), c and b (uint) over the group into [0]. */
TT_INLINE void tt_loss_group_reduce(__local float *s, __local uint *c, __local uint *b)
{
    int lid = get_local_id(0);
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) {
            s[lid] += s[lid + stride];
            c[lid] += c[lid + stride];
            b[lid] += b[lid + stride];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Writes this group's partial: part_sum[g], part_count[g], part_invalid[g].
 * s, c, b are TT_WG-long __local scratch declared by the kernel. */
TT_INLINE void tt_loss_group_store(float sum, uint count, uint invalid, __local float *s,
                                __local uint *c, __local uint *b, __global float *part_sum,
                                __global uint *part_count, __global uint *part_invalid)
{
    int lid = get_local_id(0);
    s[lid] = sum;
    c[lid] = count;
    b[lid] = invalid;
    tt_loss_group_reduce(s, c, b);
    if (lid == 0) {
        int g = get_group_id(0);
        part_sum[g] = s[0];
        part_count[g] = c[0];
        part_invalid[g] = b[0];
    }
}

/* 1 / (1 + exp(-x)) without overflow for any finite x */
TT_INLINE float tt_sigmoid(float x)
{
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

/* result += (sum of partials, count, invalid); one work-group */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void loss_finish(TT_MEM(float, result), TT_MEM(const float, part_sum),
                 TT_MEM(const uint, part_count), TT_MEM(const uint, part_invalid),
                 const int groups)
{
    TT_PTR(float, result);
    TT_PTR(const float, part_sum);
    TT_PTR(const uint, part_count);
    TT_PTR(const uint, part_invalid);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    int lid = get_local_id(0);
    float sum = 0.0f;
    uint count = 0, invalid = 0;
    for (int g = lid; g < groups; g += TT_WG) {
        sum += part_sum[g];
        count += part_count[g];
        invalid += part_invalid[g];
    }
    s[lid] = sum;
    c[lid] = count;
    b[lid] = invalid;
    tt_loss_group_reduce(s, c, b);
    if (lid == 0) {
        __global uint *words = (__global uint *)result;
        result[0] += s[0];
        words[1] += c[0];
        words[2] += b[0];
    }
}

/* ---- softmax cross-entropy --------------------------------------------------
 * loss(pixel) = logsumexp_c(x_c) - x_label, over pixels whose label is not
 * `ignore`; a label >= C counts as invalid.  The _weighted kernels multiply
 * a pixel's loss and gradient by weights[label]; each kernel passes its own
 * constant `weighted` to the shared body, so the unweighted ones compile to
 * the code they had before class weights (the same bits, the same speed). */

/* sum, count and invalid of the pixels of this work-item */
TT_INLINE void tt_softmax_ce_partial(float *sum_out, uint *count_out, uint *invalid_out,
                                  __global const float *logits, __global const uchar *labels,
                                  __global const float *weights, const int N, const int C,
                                  const int HW, const int ignore, const int weighted)
{
    float sum = 0.0f;
    uint count = 0, invalid = 0;
    int pixels = N * HW;
    for (int p = get_global_id(0); p < pixels; p += get_global_size(0)) {
        int label = labels[p];
        if (label == ignore) continue;
        if (label >= C) {
            invalid++;
            continue;
        }
        int n = p / HW;
        __global const float *x = logits + (n * C) * HW + (p - n * HW); /* stride HW */
        float m = x[0];
        for (int c = 1; c < C; c++) m = fmax(m, x[c * HW]);
        float e = 0.0f;
        for (int c = 0; c < C; c++) e += exp(x[c * HW] - m);
        float loss = log(e) - (x[label * HW] - m);
        if (weighted) loss *= weights[label];
        sum += loss;
        count++;
    }
    *sum_out = sum, *count_out = count, *invalid_out = invalid;
}

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void softmax_ce_forward(TT_MEM(float, part_sum), TT_MEM(uint, part_count),
                        TT_MEM(uint, part_invalid), TT_MEM(const float, logits),
                        TT_MEM(const uchar, labels), const int N, const int C, const int HW,
                        const int ignore)
{
    TT_PTR(float, part_sum);
    TT_PTR(uint, part_count);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
    float sum;
    uint count, invalid;
    tt_softmax_ce_partial(&sum, &count, &invalid, logits, labels, logits, N, C, HW, ignore, 0);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void softmax_ce_forward_weighted(TT_MEM(float, part_sum), TT_MEM(uint, part_count),
                                 TT_MEM(uint, part_invalid), TT_MEM(const float, logits),
                                 TT_MEM(const uchar, labels), TT_MEM(const float, weights),
                                 const int N, const int C, const int HW, const int ignore)
{
    TT_PTR(float, part_sum);
    TT_PTR(uint, part_count);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
    TT_PTR(const float, weights);
    float sum;
    uint count, invalid;
    tt_softmax_ce_partial(&sum, &count, &invalid, logits, labels, weights, N, C, HW, ignore, 1);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

/* dlogits += scale * w * (softmax(x) - onehot(label)) at valid pixel p, w =
 * weights[label] when weighted, else 1 */
TT_INLINE void tt_softmax_ce_grad(__global float *dlogits, __global const float *logits,
                               __global const uchar *labels, __global const float *weights,
                               const int N, const int C, const int HW, const int ignore,
                               const int weighted, const float scale)
{
    int p = get_global_id(0);
    if (p >= N * HW) return;
    int label = labels[p];
    if (label == ignore || label >= C) return;
    int n = p / HW;
    int base = (n * C) * HW + (p - n * HW);
    __global const float *x = logits + base;
    __global float *dx = dlogits + base;
    float m = x[0];
    for (int c = 1; c < C; c++) m = fmax(m, x[c * HW]);
    float e = 0.0f;
    for (int c = 0; c < C; c++) e += exp(x[c * HW] - m);
    float pixel_scale = weighted ? scale * weights[label] : scale;
    float inv = pixel_scale / e;
    for (int c = 0; c < C; c++) {
        float g = exp(x[c * HW] - m) * inv;
        if (c == label) g -= pixel_scale;
        dx[c * HW] += g;
    }
}

__kernel void softmax_ce_backward(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                                  TT_MEM(const uchar, labels), const int N, const int C,
                                  const int HW, const int ignore, const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
    tt_softmax_ce_grad(dlogits, logits, labels, logits, N, C, HW, ignore, 0, scale);
}

__kernel void softmax_ce_backward_weighted(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                                           TT_MEM(const uchar, labels),
                                           TT_MEM(const float, weights), const int N,
                                           const int C, const int HW, const int ignore,
                                           const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
    TT_PTR(const float, weights);
    tt_softmax_ce_grad(dlogits, logits, labels, weights, N, C, HW, ignore, 1, scale);
}

/* ---- sigmoid binary cross-entropy with logits -------------------------------
 * loss(x, t) = max(x, 0) - x t + log1p(exp(-|x|)), t in {0, 1}; a target of
 * `ignore` is skipped, any other value > 1 counts as invalid.  The _weighted
 * kernels multiply the loss and gradient of element i by the weight of its
 * class plane, weights[(i / HW) % C]; as for softmax cross-entropy, each
 * kernel gives the shared body its own constant `weighted`. */

/* weights[(j / HW) % C] for the 8 elements j = i .. i + 7 */
TT_INLINE float8 tt_plane_weights8(__global const float *weights, int i, int C, int HW)
{
    int plane = i / HW, r = i - plane * HW, k = plane % C;
    float w[8];
    for (int l = 0; l < 8; l++) {
        w[l] = weights[k];
        if (++r == HW) {
            r = 0;
            if (++k == C) k = 0;
        }
    }
    return vload8(0, w);
}

/* sum, count and invalid of the elements of this work-item */
TT_INLINE void tt_bce_partial(float *sum_out, uint *count_out, uint *invalid_out,
                           __global const float *logits, __global const uchar *targets,
                           __global const float *weights, const int total, const int C,
                           const int HW, const int ignore, const int weighted)
{
    /* 8 elements a work-item a pass, in vector math (a scalar log1p(exp())
     * per element shows in a UNet step on PoCL); the last total % 8, one
     * each, by the first work-items */
    float8 sum8 = (float8)(0.0f);
    int8 count8 = (int8)(0), invalid8 = (int8)(0);
    const int whole = total / 8 * 8;
    for (int i = get_global_id(0) * 8; i < whole; i += get_global_size(0) * 8) {
        const int8 t = convert_int8(vload8(0, targets + i));
        const float8 x = vload8(0, logits + i);
        const int8 counted = t != (int8)(ignore); /* -1 where true */
        const int8 valid = counted & (t <= (int8)(1));
        float8 loss = select((float8)(0.0f), x, x > (float8)(0.0f)) -
                      select((float8)(0.0f), x, t == (int8)(1)) + log1p(exp(-fabs(x)));
        if (weighted) loss *= tt_plane_weights8(weights, i, C, HW);
        sum8 += select((float8)(0.0f), loss, valid);
        count8 -= valid;
        invalid8 -= counted & ~valid;
    }
    float sum = 0.0f;
    uint count = 0, invalid = 0;
    for (int i = whole + get_global_id(0); i < total; i += get_global_size(0)) {
        int t = targets[i];
        if (t == ignore) continue;
        if (t > 1) {
            invalid++;
            continue;
        }
        float x = logits[i];
        float loss = fmax(x, 0.0f) - (t ? x : 0.0f) + log1p(exp(-fabs(x)));
        if (weighted) loss *= weights[(i / HW) % C];
        sum += loss;
        count++;
    }
    const float4 s4 = sum8.lo + sum8.hi;
    const int4 c4 = count8.lo + count8.hi, b4 = invalid8.lo + invalid8.hi;
    sum += (s4.x + s4.y) + (s4.z + s4.w);
    count += (uint)(c4.x + c4.y + c4.z + c4.w);
    invalid += (uint)(b4.x + b4.y + b4.z + b4.w);
    *sum_out = sum, *count_out = count, *invalid_out = invalid;
}

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void bce_forward(TT_MEM(float, part_sum), TT_MEM(uint, part_count), TT_MEM(uint, part_invalid),
                 TT_MEM(const float, logits), TT_MEM(const uchar, targets), const int total,
                 const int ignore)
{
    TT_PTR(float, part_sum);
    TT_PTR(uint, part_count);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    float sum;
    uint count, invalid;
    tt_bce_partial(&sum, &count, &invalid, logits, targets, logits, total, 1, 1, ignore, 0);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void bce_forward_weighted(TT_MEM(float, part_sum), TT_MEM(uint, part_count),
                          TT_MEM(uint, part_invalid), TT_MEM(const float, logits),
                          TT_MEM(const uchar, targets), TT_MEM(const float, weights),
                          const int total, const int C, const int HW, const int ignore)
{
    TT_PTR(float, part_sum);
    TT_PTR(uint, part_count);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    float sum;
    uint count, invalid;
    tt_bce_partial(&sum, &count, &invalid, logits, targets, weights, total, C, HW, ignore, 1);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

/* dlogits[i] += scale * w * (sigmoid(x) - t) at a valid element, w the weight
 * of its plane when weighted, else 1 */
TT_INLINE void tt_bce_grad(__global float *dlogits, __global const float *logits,
                        __global const uchar *targets, __global const float *weights,
                        const int total, const int C, const int HW, const int ignore,
                        const int weighted, const float scale)
{
    int i = get_global_id(0);
    if (i >= total) return;
    int t = targets[i];
    if (t == ignore || t > 1) return;
    /* sigmoid(x) - 1 = -sigmoid(-x): no cancellation for large positive x */
    float x = logits[i];
    float g = t ? -tt_sigmoid(-x) : tt_sigmoid(x);
    if (weighted) g *= weights[(i / HW) % C];
    dlogits[i] += scale * g;
}

__kernel void bce_backward(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                           TT_MEM(const uchar, targets), const int total, const int ignore,
                           const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    tt_bce_grad(dlogits, logits, targets, logits, total, 1, 1, ignore, 0, scale);
}

__kernel void bce_backward_weighted(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                                    TT_MEM(const uchar, targets), TT_MEM(const float, weights),
                                    const int total, const int C, const int HW,
                                    const int ignore, const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    tt_bce_grad(dlogits, logits, targets, weights, total, C, HW, ignore, 1, scale);
}

/* ---- sigmoid focal loss ---------------------------------------------------------
 * Per class plane, for a logit x and a target t in {0, 1}, with s = 2 t - 1,
 * p = sigmoid(x), pt = sigmoid(s x) and q = 1 - pt = sigmoid(-s x) (each
 * computed directly, without cancellation), b = BCE(x, t) = -log(pt) as
 * bce_forward computes it, and a_t = alpha t + (1 - alpha)(1 - t), or 1 when
 * alpha < 0:
 *
 *   focal(x, t) = a_t q^gamma b
 *   d focal / dx = a_t (p - t) [gamma q^(gamma-1) pt b + q^gamma]
 *
 * from dq/dx = -s pt q and db/dx = p - t = -s q.  Since (p - t) q^(gamma-1)
 * = -s q^gamma, the kernels compute the same derivative as
 *
 *   d focal / dx = -s a_t q^gamma (gamma pt b + q)
 *
 * which never forms q^(gamma-1): where q is 0 (a confident right answer,
 * or q underflowed) it is 0 for every gamma > 0, gamma < 1 included,
 * instead of 0 * inf.  q^0 is 1 even at q = 0 (gamma = 0 is taken apart:
 * the term is b and the derivative a_t (p - t), BCE's bit for bit).
 *
 * class_index 0 (multi-label): targets (N, C, H, W), one item per element,
 * in plane (i / HW) % C.  class_index 1: labels (N, H, W), one item per
 * pixel, whose C terms, target (label == k) in plane k, are added; a label
 * >= C is invalid.  Weights multiply the terms of plane k by weights[k]. */

/* q^gamma for q in [0, 1] and gamma > 0 (0 at q = 0) */
TT_INLINE float tt_focal_pow(float q, float gamma)
{
    if (gamma == 1.0f) return q;
    if (gamma == 2.0f) return q * q;
    return q > 0.0f ? pow(q, gamma) : 0.0f;
}

/* a_t, or 1 when alpha < 0 */
TT_INLINE float tt_focal_alpha(int t, float alpha)
{
    return alpha < 0.0f ? 1.0f : (t ? alpha : 1.0f - alpha);
}

/* a_t q^gamma b for logit x and target t in {0, 1} */
TT_INLINE float tt_focal_term(float x, int t, float gamma, float alpha)
{
    float b = fmax(x, 0.0f) - (t ? x : 0.0f) + log1p(exp(-fabs(x)));
    float term = gamma == 0.0f ? b : tt_focal_pow(tt_sigmoid(t ? -x : x), gamma) * b;
    return alpha < 0.0f ? term : tt_focal_alpha(t, alpha) * term;
}

/* d focal / dx = -s a_t q^gamma (gamma pt b + q) */
TT_INLINE float tt_focal_grad(float x, int t, float gamma, float alpha)
{
    float sx = t ? x : -x;
    float q = tt_sigmoid(-sx);
    float g = q;
    if (gamma != 0.0f) {
        float b = fmax(x, 0.0f) - (t ? x : 0.0f) + log1p(exp(-fabs(x)));
        g = tt_focal_pow(q, gamma) * (gamma * tt_sigmoid(sx) * b + q);
    }
    if (alpha >= 0.0f) g *= tt_focal_alpha(t, alpha);
    return t ? -g : g;
}

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void focal_forward(TT_MEM(float, part_sum), TT_MEM(uint, part_count), TT_MEM(uint, part_invalid),
                   TT_MEM(const float, logits), TT_MEM(const uchar, targets),
                   TT_MEM(const float, weights), const int N, const int C, const int HW,
                   const int ignore, const int class_index, const int weighted,
                   const float gamma, const float alpha)
{
    TT_PTR(float, part_sum);
    TT_PTR(uint, part_count);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    float sum = 0.0f;
    uint count = 0, invalid = 0;
    const int items = class_index ? N * HW : N * C * HW, classes = class_index ? C : 2;
    for (int i = get_global_id(0); i < items; i += get_global_size(0)) {
        int t = targets[i];
        if (t == ignore) continue;
        if (t >= classes) {
            invalid++;
            continue;
        }
        if (class_index) {
            int n = i / HW;
            __global const float *x = logits + (n * C) * HW + (i - n * HW); /* stride HW */
            float pixel = 0.0f;
            for (int k = 0; k < C; k++) {
                float term = tt_focal_term(x[k * HW], k == t, gamma, alpha);
                pixel += weighted ? term * weights[k] : term;
            }
            sum += pixel;
        } else {
            float term = tt_focal_term(logits[i], t, gamma, alpha);
            sum += weighted ? term * weights[(i / HW) % C] : term;
        }
        count++;
    }
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

/* dlogits += scale * w_k * d focal / dx at the terms of valid items; one
 * work-item per item (element, or pixel and its C planes) */
__kernel void focal_backward(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                             TT_MEM(const uchar, targets), TT_MEM(const float, weights),
                             const int N, const int C, const int HW, const int ignore,
                             const int class_index, const int weighted, const float gamma,
                             const float alpha, const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    int i = get_global_id(0);
    if (i >= (class_index ? N * HW : N * C * HW)) return;
    int t = targets[i];
    if (t == ignore || t >= (class_index ? C : 2)) return;
    if (class_index) {
        int n = i / HW;
        int base = (n * C) * HW + (i - n * HW);
        for (int k = 0; k < C; k++) {
            float g = tt_focal_grad(logits[base + k * HW], k == t, gamma, alpha);
            if (weighted) g *= weights[k];
            dlogits[base + k * HW] += scale * g;
        }
    } else {
        float g = tt_focal_grad(logits[i], t, gamma, alpha);
        if (weighted) g *= weights[(i / HW) % C];
        dlogits[i] += scale * g;
    }
}
