/*
 * Losses of segmentation: softmax cross-entropy over classes, sigmoid binary
 * cross-entropy per class, soft Dice per image and class.
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
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* Reduces s (float), c and b (uint) over the group into [0]. */
inline void tt_loss_group_reduce(__local float *s, __local uint *c, __local uint *b)
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
inline void tt_loss_group_store(float sum, uint count, uint invalid, __local float *s,
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
inline float tt_sigmoid(float x)
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
 * `ignore`; a label >= C counts as invalid. */

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
        sum += log(e) - (x[label * HW] - m);
        count++;
    }
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

/* dlogits += scale * (softmax(x) - onehot(label)) at valid pixels */
__kernel void softmax_ce_backward(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                                  TT_MEM(const uchar, labels), const int N, const int C,
                                  const int HW, const int ignore, const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, labels);
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
    float inv = scale / e;
    for (int c = 0; c < C; c++) {
        float g = exp(x[c * HW] - m) * inv;
        if (c == label) g -= scale;
        dx[c * HW] += g;
    }
}

/* ---- sigmoid binary cross-entropy with logits -------------------------------
 * loss(x, t) = max(x, 0) - x t + log1p(exp(-|x|)), t in {0, 1}; a target of
 * `ignore` is skipped, any other value > 1 counts as invalid. */

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
        const float8 loss = select((float8)(0.0f), x, x > (float8)(0.0f)) -
                            select((float8)(0.0f), x, t == (int8)(1)) + log1p(exp(-fabs(x)));
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
        sum += fmax(x, 0.0f) - (t ? x : 0.0f) + log1p(exp(-fabs(x)));
        count++;
    }
    const float4 s4 = sum8.lo + sum8.hi;
    const int4 c4 = count8.lo + count8.hi, b4 = invalid8.lo + invalid8.hi;
    sum += (s4.x + s4.y) + (s4.z + s4.w);
    count += (uint)(c4.x + c4.y + c4.z + c4.w);
    invalid += (uint)(b4.x + b4.y + b4.z + b4.w);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    tt_loss_group_store(sum, count, invalid, s, c, b, part_sum, part_count, part_invalid);
}

/* dlogits += scale * (sigmoid(x) - t) at valid elements */
__kernel void bce_backward(TT_MEM(float, dlogits), TT_MEM(const float, logits),
                           TT_MEM(const uchar, targets), const int total, const int ignore,
                           const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    int i = get_global_id(0);
    if (i >= total) return;
    int t = targets[i];
    if (t == ignore || t > 1) return;
    /* sigmoid(x) - 1 = -sigmoid(-x): no cancellation for large positive x */
    float x = logits[i];
    float g = t ? -tt_sigmoid(-x) : tt_sigmoid(x);
    dlogits[i] += scale * g;
}

/* ---- soft Dice ----------------------------------------------------------------
 * For each image n and class c, over the valid pixels of plane (n, c):
 *   I = sum p t, P = sum p, T = sum t, p = sigmoid(x),
 *   dice = (2 I + smooth) / (P + T + smooth).
 * The loss block gets sum_n mean_c (1 - dice) and count N.
 *
 * dice_partial: 2-D launch, dimension 0 = `chunks` groups per plane,
 * dimension 1 = plane (n*C + c).  part is (planes, chunks, 3): I, P, T. */

__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void dice_partial(TT_MEM(float, part), TT_MEM(uint, part_invalid), TT_MEM(const float, logits),
                  TT_MEM(const uchar, targets), const int HW, const int chunks, const int ignore)
{
    TT_PTR(float, part);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    int plane = get_global_id(1);
    int chunk = get_group_id(0);
    int lid = get_local_id(0);
    __global const float *x = logits + plane * HW;
    __global const uchar *tp = targets + plane * HW;
    float inter = 0.0f, psum = 0.0f;
    uint tsum = 0, invalid = 0;
    for (int i = chunk * TT_WG + lid; i < HW; i += chunks * TT_WG) {
        int t = tp[i];
        if (t == ignore) continue;
        if (t > 1) {
            invalid++;
            continue;
        }
        float p = tt_sigmoid(x[i]);
        psum += p;
        if (t) {
            inter += p;
            tsum++;
        }
    }
    __local float s_i[TT_WG], s_p[TT_WG];
    __local uint s_t[TT_WG], s_b[TT_WG];
    s_i[lid] = inter;
    s_p[lid] = psum;
    s_t[lid] = tsum;
    s_b[lid] = invalid;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) {
            s_i[lid] += s_i[lid + stride];
            s_p[lid] += s_p[lid + stride];
            s_t[lid] += s_t[lid + stride];
            s_b[lid] += s_b[lid + stride];
        }
    }
    if (lid == 0) {
        int at = plane * chunks + chunk;
        part[at * 3 + 0] = s_i[0];
        part[at * 3 + 1] = s_p[0];
        part[at * 3 + 2] = (float)s_t[0];
        part_invalid[at] = s_b[0];
    }
}

/* stats[plane] = (dice, P + T + smooth) for every plane; when add_result,
 * result += (sum over planes of (1 - dice) / C, N, invalid).  One work-group. */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void dice_finish(TT_MEM(float, result), TT_MEM(float, stats), TT_MEM(const float, part),
                 TT_MEM(const uint, part_invalid), const int N, const int C, const int chunks,
                 const float smooth, const int add_result)
{
    TT_PTR(float, result);
    TT_PTR(float, stats);
    TT_PTR(const float, part);
    TT_PTR(const uint, part_invalid);
    __local float s[TT_WG];
    __local uint c[TT_WG], b[TT_WG];
    int lid = get_local_id(0);
    float terms = 0.0f;
    uint invalid = 0;
    for (int plane = lid; plane < N * C; plane += TT_WG) {
        float inter = 0.0f, psum = 0.0f, tsum = 0.0f;
        for (int k = 0; k < chunks; k++) {
            int at = plane * chunks + k;
            inter += part[at * 3 + 0];
            psum += part[at * 3 + 1];
            tsum += part[at * 3 + 2];
            invalid += part_invalid[at];
        }
        float denom = psum + tsum + smooth;
        float dice = (2.0f * inter + smooth) / denom;
        stats[plane * 2 + 0] = dice;
        stats[plane * 2 + 1] = denom;
        terms += 1.0f - dice;
    }
    s[lid] = terms;
    c[lid] = 0;
    b[lid] = invalid;
    tt_loss_group_reduce(s, c, b);
    if (lid == 0 && add_result) {
        __global uint *words = (__global uint *)result;
        result[0] += s[0] / (float)C;
        words[1] += (uint)N;
        words[2] += b[0];
    }
}

/* dlogits += scale / C * (dice - 2 t) / denom * p (1 - p) at valid pixels,
 * the derivative of sum_n mean_c (1 - dice) through the sigmoid. */
__kernel void dice_backward(TT_MEM(float, dlogits), TT_MEM(const float, stats),
                            TT_MEM(const float, logits), TT_MEM(const uchar, targets),
                            const int total, const int C, const int HW, const int ignore,
                            const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, stats);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    int i = get_global_id(0);
    if (i >= total) return;
    int t = targets[i];
    if (t == ignore || t > 1) return;
    int plane = i / HW;
    float dice = stats[plane * 2 + 0], denom = stats[plane * 2 + 1];
    float x = logits[i];
    float slope = tt_sigmoid(x) * tt_sigmoid(-x); /* p (1 - p) without cancellation */
    dlogits[i] += scale / (float)C * (dice - 2.0f * (float)t) / denom * slope;
}
