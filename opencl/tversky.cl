/*
 * The Tversky region loss (soft Dice generalised): src/ops/tversky.h.
 *
 * Logits are (N, C, H, W) floats.  Sigmoid mode (softmax 0): targets
 * (N, C, H, W) uchar 0/1, p = sigmoid(x) per element.  Softmax mode
 * (softmax 1): labels (N, H, W) uchar class indices, p_k = softmax over the
 * C logits of a pixel, t_k = (label == k).  `ignore` (a uchar value, or -1)
 * drops an item; targets > 1 and labels >= C (not ignore) are invalid,
 * counted once per element (sigmoid) or per pixel (softmax).
 *
 * A region is (n, k) = n * C + k when per_image, else class k over the N
 * images.  Over a region's valid items, I = sum p t, P = sum p, T = sum t,
 *   D = I + alpha (P - I) + beta (T - I) + smooth,
 *   score = (I + smooth) / D,  term = 1 - score,
 * and the loss is sum_regions w_k term / sum_k w_k (w: the class weights,
 * all 1 when has_weights is 0).
 *
 * Reductions are deterministic, with no atomics: tversky_partial writes
 * (I, P, T) per (region, chunk of items), tversky_gather ADDS the chunks of
 * each region into `sums` (a window's micro-batches add up there), and
 * tversky_finish turns sums into (score, D) per region and the loss.
 * Sizes fit an int (checked on the host).
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* 1 / (1 + exp(-x)) without overflow for any finite x */
TT_INLINE float tt_sigmoid(float x)
{
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

/* sum_k w_k (C without weights) */
TT_INLINE float tt_weight_sum(__global const float *weights, int has_weights, int C)
{
    if (!has_weights) return (float)C;
    float weight_sum = 0.0f;
    for (int k = 0; k < C; k++) weight_sum += weights[k];
    return weight_sum;
}

/* softmax mode: pixel_stats[2 q] = max_k x_k, [2 q + 1] = sum_k exp(x_k -
 * max) for pixel q = n * HW + i, so that a region reads p_k at one exp
 * (the partial sums would otherwise redo the softmax once per class). */
__kernel void tversky_softmax_stats(TT_MEM(float, pixel_stats), TT_MEM(const float, logits),
                                    const int N, const int C, const int HW)
{
    TT_PTR(float, pixel_stats);
    TT_PTR(const float, logits);
    int q = get_global_id(0);
    if (q >= N * HW) return;
    int n = q / HW;
    __global const float *x = logits + (n * C) * HW + (q - n * HW); /* stride HW */
    float m = x[0];
    for (int k = 1; k < C; k++) m = fmax(m, x[k * HW]);
    float e = 0.0f;
    for (int k = 0; k < C; k++) e += exp(x[k * HW] - m);
    pixel_stats[2 * q + 0] = m;
    pixel_stats[2 * q + 1] = e;
}

/* 2-D launch: dimension 0 = `chunks` groups per region, dimension 1 =
 * region.  part (regions, chunks, 3) = (I, P, T) of the chunk's valid items,
 * part_invalid (regions, chunks).  A region's item j runs over HW pixels of
 * image r / C (per_image) or over N * HW pixels of every image (else).  In
 * softmax mode only class 0's regions count invalid labels (once a pixel);
 * pixel_stats is tversky_softmax_stats' (unread in sigmoid mode). */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void tversky_partial(TT_MEM(float, part), TT_MEM(uint, part_invalid),
                     TT_MEM(const float, logits), TT_MEM(const uchar, targets),
                     TT_MEM(const float, pixel_stats), const int N, const int C, const int HW,
                     const int softmax, const int per_image, const int chunks, const int ignore)
{
    TT_PTR(float, part);
    TT_PTR(uint, part_invalid);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, pixel_stats);
    int region = get_global_id(1);
    int chunk = get_group_id(0);
    int lid = get_local_id(0);
    int k = region % C;
    int items = per_image ? HW : N * HW;
    float inter = 0.0f, psum = 0.0f;
    uint tsum = 0, invalid = 0;
    for (int j = chunk * TT_WG + lid; j < items; j += chunks * TT_WG) {
        int n = per_image ? region / C : j / HW;
        int i = per_image ? j : j - n * HW;
        int at = (n * C + k) * HW + i; /* the element of logits */
        int t;
        float p;
        if (softmax) {
            int q = n * HW + i, label = targets[q];
            if (label == ignore) continue;
            if (label >= C) {
                invalid += k == 0;
                continue;
            }
            t = label == k;
            p = exp(logits[at] - pixel_stats[2 * q]) / pixel_stats[2 * q + 1];
        } else {
            t = targets[at];
            if (t == ignore) continue;
            if (t > 1) {
                invalid++;
                continue;
            }
            p = tt_sigmoid(logits[at]);
        }
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
        int at = region * chunks + chunk;
        part[at * 3 + 0] = s_i[0];
        part[at * 3 + 1] = s_p[0];
        part[at * 3 + 2] = (float)s_t[0];
        part_invalid[at] = s_b[0];
    }
}

/* sums (regions, 3) += the chunks of each region, in chunk order;
 * invalid[0] += every chunk's invalid count.  One work-group. */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void tversky_gather(TT_MEM(float, sums), TT_MEM(uint, invalid), TT_MEM(const float, part),
                    TT_MEM(const uint, part_invalid), const int regions, const int chunks)
{
    TT_PTR(float, sums);
    TT_PTR(uint, invalid);
    TT_PTR(const float, part);
    TT_PTR(const uint, part_invalid);
    __local uint b[TT_WG];
    int lid = get_local_id(0);
    uint bad = 0;
    for (int r = lid; r < regions; r += TT_WG) {
        float inter = 0.0f, psum = 0.0f, tsum = 0.0f;
        for (int c = 0; c < chunks; c++) {
            int at = r * chunks + c;
            inter += part[at * 3 + 0];
            psum += part[at * 3 + 1];
            tsum += part[at * 3 + 2];
            bad += part_invalid[at];
        }
        sums[r * 3 + 0] += inter;
        sums[r * 3 + 1] += psum;
        sums[r * 3 + 2] += tsum;
    }
    b[lid] = bad;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) b[lid] += b[lid + stride];
    }
    if (lid == 0) invalid[0] += b[0];
}

/* stats (regions, 2) = (score, D) from sums (regions, 3); when add_result,
 * result += (sum_r w_k (1 - score_r) / sum_k w_k, images, invalid[0]) with
 * images = N when per_image, else 1.  One work-group; weights (C floats)
 * read only when has_weights. */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void tversky_finish(TT_MEM(float, result), TT_MEM(float, stats), TT_MEM(const float, sums),
                    TT_MEM(const uint, invalid), TT_MEM(const float, weights),
                    const int has_weights, const int N, const int C, const int regions,
                    const float alpha, const float beta, const float smooth,
                    const int per_image, const int add_result)
{
    TT_PTR(float, result);
    TT_PTR(float, stats);
    TT_PTR(const float, sums);
    TT_PTR(const uint, invalid);
    TT_PTR(const float, weights);
    __local float s[TT_WG];
    int lid = get_local_id(0);
    float terms = 0.0f;
    for (int r = lid; r < regions; r += TT_WG) {
        float inter = sums[r * 3 + 0], psum = sums[r * 3 + 1], tsum = sums[r * 3 + 2];
        float denom = inter + alpha * (psum - inter) + beta * (tsum - inter) + smooth;
        float score = (inter + smooth) / denom;
        stats[r * 2 + 0] = score;
        stats[r * 2 + 1] = denom;
        terms += (has_weights ? weights[r % C] : 1.0f) * (1.0f - score);
    }
    s[lid] = terms;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) s[lid] += s[lid + stride];
    }
    if (lid == 0 && add_result) {
        __global uint *words = (__global uint *)result;
        result[0] += s[0] / tt_weight_sum(weights, has_weights, C);
        words[1] += per_image ? (uint)N : 1u;
        words[2] += invalid[0];
    }
}

/* d term / d p of one item of a region with stats (score, D):
 *
 *   term = 1 - (I + s) / D,  D = (1 - alpha - beta) I + alpha P + beta T + s,
 *   dI/dp = t, dP/dp = 1, dT/dp = 0, so
 *   d term / d p = -(t D - (I + s)((1 - alpha - beta) t + alpha)) / D^2
 *                = -(t - score ((1 - alpha - beta) t + alpha)) / D. */
TT_INLINE float tt_tversky_dp(__global const float *stats, int region, float t, float alpha,
                           float beta)
{
    float score = stats[region * 2 + 0], denom = stats[region * 2 + 1];
    return -(t - score * ((1.0f - alpha - beta) * t + alpha)) / denom;
}

/* dlogits += scale * d loss / d logits at valid items.  Sigmoid: one
 * work-item an element, d/dx = share_k * d term/d p * p (1 - p), p (1 - p)
 * as sigmoid(x) sigmoid(-x).  Softmax: one work-item a pixel; with
 * g_k = share_k * d term_k / d p_k (its region's term),
 * dx_j = p_j (g_j - sum_k g_k p_k).  share_k = w_k / sum_j w_j. */
__kernel void tversky_backward(TT_MEM(float, dlogits), TT_MEM(const float, stats),
                               TT_MEM(const float, logits), TT_MEM(const uchar, targets),
                               TT_MEM(const float, weights), const int has_weights,
                               const int N, const int C, const int HW, const int softmax,
                               const int per_image, const int ignore, const float alpha,
                               const float beta, const float scale)
{
    TT_PTR(float, dlogits);
    TT_PTR(const float, stats);
    TT_PTR(const float, logits);
    TT_PTR(const uchar, targets);
    TT_PTR(const float, weights);
    int id = get_global_id(0);
    if (!softmax) {
        if (id >= N * C * HW) return;
        int t = targets[id];
        if (t == ignore || t > 1) return;
        int plane = id / HW, k = plane % C;
        float x = logits[id];
        float slope = tt_sigmoid(x) * tt_sigmoid(-x); /* p (1 - p) without cancellation */
        float dp = tt_tversky_dp(stats, per_image ? plane : k, (float)t, alpha, beta);
        float share = (has_weights ? weights[k] : 1.0f) / tt_weight_sum(weights, has_weights, C);
        dlogits[id] += scale * share * dp * slope;
        return;
    }
    if (id >= N * HW) return;
    int label = targets[id];
    if (label == ignore || label >= C) return;
    int n = id / HW;
    int base = (n * C) * HW + (id - n * HW), first = per_image ? n * C : 0;
    __global const float *x = logits + base;
    __global float *dx = dlogits + base;
    float m = x[0];
    for (int k = 1; k < C; k++) m = fmax(m, x[k * HW]);
    float e = 0.0f;
    for (int k = 0; k < C; k++) e += exp(x[k * HW] - m);
    float weight_sum = tt_weight_sum(weights, has_weights, C), gp = 0.0f;
    for (int k = 0; k < C; k++) {
        float g = (has_weights ? weights[k] : 1.0f) / weight_sum *
                  tt_tversky_dp(stats, first + k, (float)(label == k), alpha, beta);
        gp += g * (exp(x[k * HW] - m) / e);
    }
    for (int k = 0; k < C; k++) {
        float g = (has_weights ? weights[k] : 1.0f) / weight_sum *
                  tt_tversky_dp(stats, first + k, (float)(label == k), alpha, beta);
        dx[k * HW] += scale * (exp(x[k * HW] - m) / e) * (g - gp);
    }
}
