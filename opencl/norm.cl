/*
 * Normalisation kernels shared by group norm and batch norm
 * (src/ops/group_norm.c, src/ops/batch_norm.c; layouts in src/ops/norm.h).
 *
 * A "statistic" is one (mean, rstd) pair: one per (n, group) for group norm,
 * one per channel for batch norm.  The elements of statistic s are `segments`
 * runs of `seg_len` contiguous floats; run j starts at
 * s * stat_stride + j * seg_stride:
 *   group norm: stat_stride = (C/G)*HW, segments = C/G, seg_len = HW,
 *               seg_stride = HW
 *   batch norm: stat_stride = HW,       segments = N, seg_len = HW,
 *               seg_stride = C*HW
 * so each run is one channel's plane and the loops below walk runs, then
 * contiguous floats, with no division per element.
 * Element (n, c, .) uses statistic n * stat_n_stride + c / channels_per_stat.
 *
 * Reducing kernels run one work-group of exactly NORM_WG work-items (a power
 * of two) per statistic or channel; each work-item strides over the elements,
 * so any count (1x1 images, counts not multiples of NORM_WG) is handled, and
 * the partial sums meet in a tree in local memory.  Variance is two-pass
 * (mean first, then the mean of squared deviations), biased, like PyTorch.
 * Backward kernels ADD into their outputs.
 */
#ifndef NORM_WG
#define NORM_WG 256
#endif

/* Sum of v over the work-group; every work-item gets it.  scratch: NORM_WG. */
static float norm_wg_sum(float v, __local float *scratch)
{
    int lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = NORM_WG / 2; step > 0; step >>= 1) {
        if (lid < step) scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused at once */
    return total;
}

/* Two sums at once: *a and *b become their work-group totals. */
static void norm_wg_sum2(float *a, float *b, __local float *sa, __local float *sb)
{
    int lid = get_local_id(0);
    sa[lid] = *a;
    sb[lid] = *b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = NORM_WG / 2; step > 0; step >>= 1) {
        if (lid < step) {
            sa[lid] += sa[lid + step];
            sb[lid] += sb[lid + step];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *a = sa[0];
    *b = sb[0];
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The first element of run j of statistic s. */
static ulong norm_run(int s, int j, ulong stat_stride, ulong seg_stride)
{
    return (ulong)s * stat_stride + (ulong)j * seg_stride;
}

/* One work-group per statistic s: mean[s], rstd[s] = 1/sqrt(var + eps).
 * With update_running (batch norm training): running = (1 - m) running + m
 * stat, the variance unbiased (count / (count - 1)). */
__kernel void norm_stats(TT_MEM(float, mean), TT_MEM(float, rstd), TT_MEM(float, running_mean),
                         TT_MEM(float, running_var), TT_MEM(const float, x),
                         const ulong stat_stride, const int segments, const int seg_len,
                         const ulong seg_stride, const float eps, const int update_running,
                         const float momentum)
{
    TT_PTR(float, mean);
    TT_PTR(float, rstd);
    TT_PTR(float, running_mean);
    TT_PTR(float, running_var);
    TT_PTR(const float, x);
    __local float scratch[NORM_WG];
    int s = get_group_id(0), lid = get_local_id(0);
    int count = segments * seg_len;

    float sum = 0.0f;
    for (int j = 0; j < segments; j++) {
        __global const float *run = x + norm_run(s, j, stat_stride, seg_stride);
        for (int k = lid; k < seg_len; k += NORM_WG) sum += run[k];
    }
    float mu = norm_wg_sum(sum, scratch) / (float)count;

    float squares = 0.0f;
    for (int j = 0; j < segments; j++) {
        __global const float *run = x + norm_run(s, j, stat_stride, seg_stride);
        for (int k = lid; k < seg_len; k += NORM_WG) {
            float d = run[k] - mu;
            squares += d * d;
        }
    }
    float var = norm_wg_sum(squares, scratch) / (float)count;

    if (lid == 0) {
        mean[s] = mu;
        rstd[s] = rsqrt(var + eps);
        if (update_running) {
            float unbiased = count > 1 ? var * ((float)count / (float)(count - 1)) : var;
            running_mean[s] = (1.0f - momentum) * running_mean[s] + momentum * mu;
            running_var[s] = (1.0f - momentum) * running_var[s] + momentum * unbiased;
        }
    }
}

/* (x - mean) * r * weight + bias, as every kernel here computes it: the
 * ReLU mask found again from x (norm_apply's relu_mask) agrees with the one the
 * forward applied bit for bit. */
float norm_value(float x, float mean, float r, __global const float *weight,
                 __global const float *bias, int has_weight, int has_bias, int c)
{
    float v = (x - mean) * r;
    if (has_weight) v *= weight[c];
    if (has_bias) v += bias[c];
    return v;
}

/* Element-wise: y = (x - mean[s]) * r * weight[c] + bias[c], where r is
 * stat[s] (an rstd) or, with stat_is_var, 1/sqrt(stat[s] + eps).  With
 * relu_mask, y is a gradient instead, zeroed where that value is <= 0: the
 * backward of a ReLU after the norm, in place, for a caller that keeps x but
 * not the ReLU output. */
__kernel void norm_apply(TT_MEM(float, y), TT_MEM(const float, x), TT_MEM(const float, mean),
                         TT_MEM(const float, stat), TT_MEM(const float, weight),
                         TT_MEM(const float, bias), const int relu_mask,
                         const int stat_is_var, const float eps,
                         const int has_weight, const int has_bias, const int channels,
                         const int hw, const int stat_n_stride, const int channels_per_stat)
{
    TT_PTR(float, y);
    TT_PTR(const float, x);
    TT_PTR(const float, mean);
    TT_PTR(const float, stat);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    int k = get_global_id(0), nc = get_global_id(1);
    if (k >= hw) return;
    int c = nc % channels, n = nc / channels;
    int s = n * stat_n_stride + c / channels_per_stat;
    ulong i = (ulong)nc * (ulong)hw + (ulong)k;
    float r = stat_is_var ? rsqrt(stat[s] + eps) : stat[s];
    float v = norm_value(x[i], mean[s], r, weight, bias, has_weight, has_bias, c);
    y[i] = !relu_mask ? v : v > 0.0f ? y[i] : 0.0f; /* no branch around the store */
}

/* One work-group per statistic s (training mode):
 * dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight[c],
 * xhat = (x - mean) * rstd, means over the elements of s.  Without
 * accumulate dinp is written, not added to, and may be dy itself: every
 * element is read and written by the one work-item that owns it, after the
 * group's sums (and their barrier). */
__kernel void norm_backward_input(TT_MEM(float, dinp), TT_MEM(const float, dy),
                                  TT_MEM(const float, x), TT_MEM(const float, mean),
                                  TT_MEM(const float, rstd), TT_MEM(const float, weight),
                                  const int has_weight, const int accumulate,
                                  const ulong stat_stride,
                                  const int segments, const int seg_len, const ulong seg_stride,
                                  const int channels, const int hw)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dy);
    TT_PTR(const float, x);
    TT_PTR(const float, mean);
    TT_PTR(const float, rstd);
    TT_PTR(const float, weight);
    __local float scratch_g[NORM_WG], scratch_gx[NORM_WG];
    int s = get_group_id(0), lid = get_local_id(0);
    int count = segments * seg_len;
    float mu = mean[s], r = rstd[s];

    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int j = 0; j < segments; j++) {
        ulong base = norm_run(s, j, stat_stride, seg_stride);
        float wc = has_weight ? weight[(base / (ulong)hw) % (ulong)channels] : 1.0f;
        for (int k = lid; k < seg_len; k += NORM_WG) {
            float g = dy[base + k] * wc;
            sum_g += g;
            sum_gx += g * (x[base + k] - mu) * r;
        }
    }
    norm_wg_sum2(&sum_g, &sum_gx, scratch_g, scratch_gx);
    float mean_g = sum_g / (float)count, mean_gx = sum_gx / (float)count;

    for (int j = 0; j < segments; j++) {
        ulong base = norm_run(s, j, stat_stride, seg_stride);
        float wc = has_weight ? weight[(base / (ulong)hw) % (ulong)channels] : 1.0f;
        for (int k = lid; k < seg_len; k += NORM_WG) {
            float g = dy[base + k] * wc;
            float xhat = (x[base + k] - mu) * r;
            float v = r * (g - mean_g - xhat * mean_gx);
            dinp[base + k] = accumulate ? dinp[base + k] + v : v;
        }
    }
}

/* One work-group per channel c: dweight[c] += sum dy * xhat, dbias[c] +=
 * sum dy, over n and the pixels.  r as in norm_apply. */
__kernel void norm_param_grads(TT_MEM(float, dweight), TT_MEM(float, dbias),
                               TT_MEM(const float, dy), TT_MEM(const float, x),
                               TT_MEM(const float, mean), TT_MEM(const float, stat),
                               const int stat_is_var, const float eps, const int want_dweight,
                               const int want_dbias, const int batch, const int channels,
                               const int hw, const int stat_n_stride, const int channels_per_stat)
{
    TT_PTR(float, dweight);
    TT_PTR(float, dbias);
    TT_PTR(const float, dy);
    TT_PTR(const float, x);
    TT_PTR(const float, mean);
    TT_PTR(const float, stat);
    __local float scratch_a[NORM_WG], scratch_b[NORM_WG];
    int c = get_group_id(0), lid = get_local_id(0);
    float sum_dy = 0.0f, sum_dyx = 0.0f;
    for (int n = 0; n < batch; n++) {
        ulong base = ((ulong)n * (ulong)channels + (ulong)c) * (ulong)hw;
        int s = n * stat_n_stride + c / channels_per_stat;
        float r = stat_is_var ? rsqrt(stat[s] + eps) : stat[s], mu = mean[s];
        for (int k = lid; k < hw; k += NORM_WG) {
            float d = dy[base + k];
            sum_dy += d;
            sum_dyx += d * (x[base + k] - mu) * r;
        }
    }
    norm_wg_sum2(&sum_dy, &sum_dyx, scratch_a, scratch_b);
    if (lid == 0) {
        if (want_dweight) dweight[c] += sum_dyx;
        if (want_dbias) dbias[c] += sum_dy;
    }
}

/* Element-wise, eval-mode batch norm: dinp += dy * weight[c] / sqrt(var[c] + eps)
 * (or = without accumulate; dinp may then be dy). */
__kernel void norm_eval_backward_input(TT_MEM(float, dinp), TT_MEM(const float, dy),
                                       TT_MEM(const float, var), TT_MEM(const float, weight),
                                       const int has_weight, const int accumulate,
                                       const float eps, const int channels,
                                       const int hw, const int total)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dy);
    TT_PTR(const float, var);
    TT_PTR(const float, weight);
    int i = get_global_id(0);
    if (i >= total) return;
    int c = (i / hw) % channels;
    float scale = rsqrt(var[c] + eps);
    if (has_weight) scale *= weight[c];
    float v = dy[i] * scale;
    dinp[i] = accumulate ? dinp[i] + v : v;
}
