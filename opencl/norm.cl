/*
 * Normalisation kernels shared by group norm and batch norm
 * (src/ops/group_norm.c, src/ops/batch_norm.c; layouts in src/ops/norm.h).
 *
 * A "statistic" s is one (mean, rstd) pair: one per (n, group) for group
 * norm, one per channel for batch norm.  Its elements are whole channel
 * planes of hw floats: planes s * stat_plane_stride + j * plane_stride for
 * j < planes_per_stat (group norm: the group's C/G planes of sample n; batch
 * norm: channel s's plane in every sample).  Element (n, c, .) uses
 * statistic n * stat_n_stride + c / channels_per_stat.
 *
 * Every pass runs over a grid (chunks, planes): work-item (k, p) owns share
 * k of plane p's float8 vectors, and work-item 0 also the plane's last
 * hw % 8 floats.  NORM_INTERLEAVE picks the share: 0 (CPUs), a contiguous
 * run that one core streams; 1 (GPUs), every chunks-th vector, so that
 * neighbouring work-items read neighbouring memory.  The reductions are in
 * two steps with no local memory or barriers: each work-item writes partial
 * sums of its share, then one work-item per statistic (or channel) combines
 * them.  The variance is the biased one, like PyTorch's, and never the
 * difference of two large sums: each share's mean and squared deviations
 * come from two passes over its (cached) floats, and the shares are merged
 * with Chan et al.'s pairwise update.
 *
 * The normalised value is computed by norm_value() alone, in every kernel,
 * with explicit fma: a ReLU's mask found again from x in backward is the
 * forward's bit for bit.  Backward kernels ADD into their outputs unless
 * told to overwrite.
 */
#ifndef NORM_INTERLEAVE
#define NORM_INTERLEAVE 0
#endif

/* How x, the normalised tensor, is stored (norm.c, from tt_norm_params'
 * x_precision): 0 fp32; 1 fp16 or 2 bf16, 16 bits an element, read as
 * stored and computed in fp32 like the rest (the exact conversions of
 * common.cl).  Every other tensor is fp32. */
#ifndef NORM_X16
#define NORM_X16 0
#endif
#if NORM_X16
typedef ushort norm_x_t;
#else
typedef float norm_x_t;
#endif

/* p[i .. i + 7] and p[i] as floats, of a tensor stored as `format`
 * (NORM_X16 or NORM_G16: 0 fp32, 1 fp16, 2 bf16; a constant, so the
 * branches fold).  fp16 through vload_half, core OpenCL without
 * cl_khr_fp16 and exact (a hardware conversion on CPUs that have one:
 * several times the integer code's speed). */
static float8 norm_load8(__global const void *p, size_t i, int format)
{
    if (format == 1) return vload_half8(0, (__global const half *)p + i);
    if (format == 2) return tt_bf16_to_f32_8(vload8(0, (__global const ushort *)p + i));
    return vload8(0, (__global const float *)p + i);
}
static float norm_load(__global const void *p, size_t i, int format)
{
    if (format == 1) return vload_half(0, (__global const half *)p + i);
    if (format == 2) return tt_bf16_to_f32(((__global const ushort *)p)[i]);
    return ((__global const float *)p)[i];
}

static float8 norm_x8(__global const norm_x_t *x, size_t i) { return norm_load8(x, i, NORM_X16); }
static float norm_x(__global const norm_x_t *x, size_t i) { return norm_load(x, i, NORM_X16); }

/* How the gradients dy and dinp of the backward passes are stored (norm.c,
 * from tt_norm_layout's g_precision): NORM_G16 0 fp32 (default), 1 fp16,
 * 2 bf16, rounded where written as common.cl's conversions round (and
 * `accumulate` adds to the value stored). */
#ifndef NORM_G16
#define NORM_G16 0
#endif
#if NORM_G16
typedef ushort norm_g_t;
#else
typedef float norm_g_t;
#endif

static float8 norm_g8(__global const norm_g_t *g, size_t i) { return norm_load8(g, i, NORM_G16); }
static float norm_g(__global const norm_g_t *g, size_t i) { return norm_load(g, i, NORM_G16); }
static void norm_g8_store(__global norm_g_t *g, size_t i, float8 v)
{
#if NORM_G16 == 1
    vstore8(tt_f32_to_f16_8(v), 0, g + i);
#elif NORM_G16 == 2
    vstore8(tt_f32_to_bf16_8(v), 0, g + i);
#else
    vstore8(v, 0, g + i);
#endif
}
static void norm_g_store(__global norm_g_t *g, size_t i, float v)
{
#if NORM_G16 == 1
    g[i] = tt_f32_to_f16(v);
#elif NORM_G16 == 2
    g[i] = tt_f32_to_bf16(v);
#else
    g[i] = v;
#endif
}

/* The first float of vector j of work-item k's share. */
static size_t norm_vec(int k, int j, int chunks, int chunk_vecs)
{
    return 8 * (size_t)(NORM_INTERLEAVE ? j * chunks + k : k * chunk_vecs + j);
}

/* How many vectors work-item k owns among a plane's nv. */
static int norm_share(int k, int nv, int chunks, int chunk_vecs)
{
    if (NORM_INTERLEAVE) return k < nv ? (nv - k + chunks - 1) / chunks : 0;
    return clamp(nv - k * chunk_vecs, 0, chunk_vecs);
}

/* The tail floats (hw % 8) belong to work-item 0. */
static int norm_tail(int k, int hw) { return k == 0 ? hw % 8 : 0; }

static float norm_hsum(float8 v)
{
    float4 a = v.lo + v.hi;
    float2 b = a.lo + a.hi;
    return b.x + b.y;
}

/* (x - mean) * r * w + b, the one formula of every kernel here. */
static float norm_value(float x, float mean, float r, float w, float b)
{
    return fma((x - mean) * r, w, b);
}
static float8 norm_value8(float8 x, float mean, float r, float w, float b)
{
    return fma((x - mean) * r, (float8)w, (float8)b);
}

/* What one work-item needs to know of its plane p. */
typedef struct norm_plane {
    int s, c;          /* statistic, channel */
    float mean, r;     /* r = rstd, or 1/sqrt(var + eps) */
    float w, b;        /* weight (1 if absent), bias (0 if absent) */
} norm_plane;

static norm_plane norm_plane_of(int p, int channels, int stat_n_stride, int channels_per_stat,
                                __global const float *mean, __global const float *stat,
                                int stat_is_var, float eps, __global const float *weight,
                                __global const float *bias, int has_weight, int has_bias)
{
    norm_plane q;
    q.c = p % channels;
    q.s = (p / channels) * stat_n_stride + q.c / channels_per_stat;
    q.mean = mean[q.s];
    q.r = stat_is_var ? rsqrt(stat[q.s] + eps) : stat[q.s];
    q.w = has_weight ? weight[q.c] : 1.0f;
    q.b = has_bias ? bias[q.c] : 0.0f;
    return q;
}

/* The trailing arguments of every (chunks, planes) pass that reads a
 * plane's statistics and affine parameters (norm.c's plane_args() passes
 * them), and the prologue that unpacks them: q (the plane), base (its first
 * float), nv (its float8 vectors), m (work-item k's share) and tail. */
#define NORM_PLANE_ARGS                                                                   \
    TT_MEM(const float, mean), TT_MEM(const float, stat), TT_MEM(const float, weight),    \
        TT_MEM(const float, bias), const int relu, const int stat_is_var, const float eps, \
        const int has_weight, const int has_bias, const int channels, const int hw,       \
        const int stat_n_stride, const int channels_per_stat, const int chunks,           \
        const int chunk_vecs
#define NORM_PLANE_BEGIN                                                                   \
    TT_PTR(const float, mean);                                                             \
    TT_PTR(const float, stat);                                                             \
    TT_PTR(const float, weight);                                                           \
    TT_PTR(const float, bias);                                                             \
    int k = get_global_id(0), p = get_global_id(1);                                        \
    norm_plane q = norm_plane_of(p, channels, stat_n_stride, channels_per_stat, mean, stat, \
                                 stat_is_var, eps, weight, bias, has_weight, has_bias);    \
    size_t base = (size_t)p * hw;                                                          \
    int nv = hw / 8, m = norm_share(k, nv, chunks, chunk_vecs), tail = norm_tail(k, hw)

/* Work-item (k, p): partial[3 (p chunks + k) + 0..2] = count, mean and sum
 * of squared deviations of its share. */
__kernel void norm_moments(TT_MEM(float, partial), TT_MEM(const norm_x_t, x), const int hw,
                           const int chunks, const int chunk_vecs)
{
    TT_PTR(float, partial);
    TT_PTR(const norm_x_t, x);
    int k = get_global_id(0), p = get_global_id(1);
    __global const norm_x_t *plane = x + (size_t)p * hw;
    int nv = hw / 8, m = norm_share(k, nv, chunks, chunk_vecs), tail = norm_tail(k, hw);
    __global const norm_x_t *rest = plane + 8 * (size_t)nv;

    float8 acc = 0.0f;
    for (int j = 0; j < m; j++) acc += norm_x8(plane, norm_vec(k, j, chunks, chunk_vecs));
    float sum = norm_hsum(acc);
    for (int t = 0; t < tail; t++) sum += norm_x(rest, t);
    float count = (float)(8 * m + tail);
    float mu = count > 0.0f ? sum / count : 0.0f;

    float8 sq = 0.0f;
    for (int j = 0; j < m; j++) {
        float8 d = norm_x8(plane, norm_vec(k, j, chunks, chunk_vecs)) - mu;
        sq = fma(d, d, sq);
    }
    float m2 = norm_hsum(sq);
    for (int t = 0; t < tail; t++) m2 += (norm_x(rest, t) - mu) * (norm_x(rest, t) - mu);

    __global float *out = partial + 3 * ((size_t)p * chunks + k);
    out[0] = count;
    out[1] = mu;
    out[2] = m2;
}

/* (count, mean, sum of squared deviations) of statistic s, merged pairwise
 * (Chan et al.) from norm_moments' partials of its planes. */
static float3 merge_partials(__global const float *partial, int s, int planes_per_stat,
                             int stat_plane_stride, int plane_stride, int chunks)
{
    float n = 0.0f, mu = 0.0f, m2 = 0.0f;
    for (int j = 0; j < planes_per_stat; j++) {
        int p = s * stat_plane_stride + j * plane_stride;
        __global const float *part = partial + 3 * (size_t)p * chunks;
        for (int k = 0; k < chunks; k++, part += 3) {
            float nb = part[0];
            if (nb == 0.0f) continue;
            float total = n + nb, delta = part[1] - mu;
            mu += delta * (nb / total);
            m2 += part[2] + delta * delta * (n * nb / total);
            n = total;
        }
    }
    return (float3)(n, mu, m2);
}

/* One work-item per statistic s: mean[s], rstd[s] = 1/sqrt(var + eps) from
 * the partials of its planes.  With update_running (batch norm training):
 * running = (1 - m) running + m stat, the variance unbiased. */
__kernel void norm_stats(TT_MEM(float, mean), TT_MEM(float, rstd), TT_MEM(float, running_mean),
                         TT_MEM(float, running_var), TT_MEM(const float, partial),
                         const int stat_count, const int planes_per_stat,
                         const int stat_plane_stride, const int plane_stride, const int chunks,
                         const float eps, const int update_running, const float momentum)
{
    TT_PTR(float, mean);
    TT_PTR(float, rstd);
    TT_PTR(float, running_mean);
    TT_PTR(float, running_var);
    TT_PTR(const float, partial);
    int s = get_global_id(0);
    if (s >= stat_count) return;
    float3 merged = merge_partials(partial, s, planes_per_stat, stat_plane_stride, plane_stride,
                                   chunks);
    float n = merged.x, mu = merged.y, m2 = merged.z;
    float var = m2 / n;
    mean[s] = mu;
    rstd[s] = rsqrt(var + eps);
    if (update_running) {
        float unbiased = n > 1.0f ? var * (n / (n - 1.0f)) : var;
        running_mean[s] = (1.0f - momentum) * running_mean[s] + momentum * mu;
        running_var[s] = (1.0f - momentum) * running_var[s] + momentum * unbiased;
    }
}

/* One work-item per statistic s (batch norm summed over ranks, norm.c's
 * tt_norm_launch_moments): moments[2 s + 0..1] = mean and sum of squared
 * deviations of this process's elements of s, merged from norm_moments'
 * partials as norm_stats merges them. */
__kernel void norm_stat_moments(TT_MEM(float, moments), TT_MEM(const float, partial),
                                const int stat_count, const int planes_per_stat,
                                const int stat_plane_stride, const int plane_stride,
                                const int chunks)
{
    TT_PTR(float, moments);
    TT_PTR(const float, partial);
    int s = get_global_id(0);
    if (s >= stat_count) return;
    float3 merged = merge_partials(partial, s, planes_per_stat, stat_plane_stride, plane_stride,
                                   chunks);
    moments[2 * s] = merged.y;
    moments[2 * s + 1] = merged.z;
}

/* Element-wise: y = norm_value(x), or with relu that where it is > 0 and 0
 * elsewhere (NaN included, as the mask in backward reads it).  y may be x. */
__kernel void norm_apply(TT_MEM(float, y), TT_MEM(const norm_x_t, x), NORM_PLANE_ARGS)
{
    TT_PTR(float, y);
    TT_PTR(const norm_x_t, x);
    NORM_PLANE_BEGIN;
    for (int j = 0; j < m; j++) {
        size_t i = base + norm_vec(k, j, chunks, chunk_vecs);
        float8 v = norm_value8(norm_x8(x, i), q.mean, q.r, q.w, q.b);
        vstore8(relu ? select((float8)0.0f, v, v > 0.0f) : v, 0, y + i);
    }
    for (int t = 0; t < tail; t++) {
        size_t i = base + 8 * (size_t)nv + t;
        float v = norm_value(norm_x(x, i), q.mean, q.r, q.w, q.b);
        y[i] = relu && !(v > 0.0f) ? 0.0f : v;
    }
}

/* norm_apply over a band of rows (src/ops/band.h) into a buffer of its
 * own: work-item (k, p) sets y[p len + i], len = lead + count + trail,
 * 8 k <= i < min(8 k + 8, len): 0 in the lead and the trail, between them
 * the norm's output at x[p hw + first + i - lead], the same formula and so
 * the same bits as norm_apply's.  The chunk arguments are not used. */
__kernel void norm_apply_band(TT_MEM(float, y), TT_MEM(const norm_x_t, x), NORM_PLANE_ARGS,
                              const int first, const int lead, const int count, const int trail)
{
    TT_PTR(float, y);
    TT_PTR(const norm_x_t, x);
    TT_PTR(const float, mean);
    TT_PTR(const float, stat);
    TT_PTR(const float, weight);
    TT_PTR(const float, bias);
    const int p = get_global_id(1), len = lead + count + trail;
    norm_plane q = norm_plane_of(p, channels, stat_n_stride, channels_per_stat, mean, stat,
                                 stat_is_var, eps, weight, bias, has_weight, has_bias);
    const size_t y0 = (size_t)p * len, x0 = (size_t)p * hw + first - lead;
    const int i0 = 8 * get_global_id(0);
    if (i0 >= lead && i0 + 8 <= lead + count) { /* 8 at once, the same formula */
        float8 v = norm_value8(norm_x8(x, x0 + i0), q.mean, q.r, q.w, q.b);
        vstore8(relu ? select((float8)0.0f, v, v > 0.0f) : v, 0, y + y0 + i0);
        return;
    }
    for (int i = i0; i < min(len, i0 + 8); i++) {
        float v = 0.0f;
        if (i >= lead && i < lead + count) {
            v = norm_value(norm_x(x, x0 + i), q.mean, q.r, q.w, q.b);
            if (relu && !(v > 0.0f)) v = 0.0f;
        }
        y[y0 + i] = v;
    }
}

/* The gradient at the norm's output: dy, or with relu dy where the norm's
 * value is > 0 and 0 elsewhere (the backward of the ReLU after it). */
static float8 norm_grad8(float8 dy, float8 x, norm_plane q, int relu)
{
    if (!relu) return dy;
    return select((float8)0.0f, dy, norm_value8(x, q.mean, q.r, q.w, q.b) > 0.0f);
}
static float norm_grad(float dy, float x, norm_plane q, int relu)
{
    if (!relu) return dy;
    return norm_value(x, q.mean, q.r, q.w, q.b) > 0.0f ? dy : 0.0f;
}

/* Work-item (k, p): partial[2 (p chunks + k) + 0..1] = sum g and
 * sum g * xhat over its share, g the gradient at the norm's output
 * (norm_grad8), xhat = (x - mean) r. */
__kernel void norm_grad_sums(TT_MEM(float, partial), TT_MEM(const norm_g_t, dy),
                             TT_MEM(const norm_x_t, x), NORM_PLANE_ARGS)
{
    TT_PTR(float, partial);
    TT_PTR(const norm_g_t, dy);
    TT_PTR(const norm_x_t, x);
    NORM_PLANE_BEGIN;
    float8 sg = 0.0f, sgx = 0.0f;
    for (int j = 0; j < m; j++) {
        size_t i = base + norm_vec(k, j, chunks, chunk_vecs);
        float8 xv = norm_x8(x, i), g = norm_grad8(norm_g8(dy, i), xv, q, relu);
        sg += g;
        sgx = fma(g, (xv - q.mean) * q.r, sgx);
    }
    float a = norm_hsum(sg), b = norm_hsum(sgx);
    for (int t = 0; t < tail; t++) {
        size_t i = base + 8 * (size_t)nv + t;
        float xi = norm_x(x, i), g = norm_grad(norm_g(dy, i), xi, q, relu);
        a += g;
        b += g * (xi - q.mean) * q.r;
    }
    __global float *out = partial + 2 * ((size_t)p * chunks + k);
    out[0] = a;
    out[1] = b;
}

/* One work-item per channel c: dweight[c] += sum g xhat, dbias[c] += sum g
 * over the samples, from norm_grad_sums' partials. */
__kernel void norm_param_grads(TT_MEM(float, dweight), TT_MEM(float, dbias),
                               TT_MEM(const float, partial), const int want_dweight,
                               const int want_dbias, const int batch, const int channels,
                               const int chunks)
{
    TT_PTR(float, dweight);
    TT_PTR(float, dbias);
    TT_PTR(const float, partial);
    int c = get_global_id(0);
    if (c >= channels) return;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int n = 0; n < batch; n++) {
        __global const float *part = partial + 2 * ((size_t)n * channels + c) * chunks;
        for (int k = 0; k < chunks; k++) {
            sum_g += part[2 * k];
            sum_gx += part[2 * k + 1];
        }
    }
    if (want_dweight) dweight[c] += sum_gx;
    if (want_dbias) dbias[c] += sum_g;
}

/* One work-item per statistic s (training): coef[2 s + 0..1] = mean of
 * g weight[c] and of g weight[c] xhat over its elements. */
__kernel void norm_input_coefs(TT_MEM(float, coef), TT_MEM(const float, partial),
                               TT_MEM(const float, weight), const int has_weight,
                               const int stat_count, const int planes_per_stat,
                               const int stat_plane_stride, const int plane_stride,
                               const int channels, const int hw, const int chunks)
{
    TT_PTR(float, coef);
    TT_PTR(const float, partial);
    TT_PTR(const float, weight);
    int s = get_global_id(0);
    if (s >= stat_count) return;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int j = 0; j < planes_per_stat; j++) {
        int p = s * stat_plane_stride + j * plane_stride;
        float w = has_weight ? weight[p % channels] : 1.0f, a = 0.0f, b = 0.0f;
        __global const float *part = partial + 2 * (size_t)p * chunks;
        for (int k = 0; k < chunks; k++) {
            a += part[2 * k];
            b += part[2 * k + 1];
        }
        sum_g += w * a;
        sum_gx += w * b;
    }
    float count = (float)planes_per_stat * (float)hw;
    coef[2 * s] = sum_g / count;
    coef[2 * s + 1] = sum_gx / count;
}

/* Element-wise: dinp (+)= r (g w - mean_g - xhat mean_gx) with the
 * coefficients of norm_input_coefs (training), or r g w without them
 * (eval-mode batch norm, r from the running variance); g as in
 * norm_grad_sums.  Without accumulate dinp is written, and may be dy. */
__kernel void norm_backward_input(TT_MEM(norm_g_t, dinp), TT_MEM(const norm_g_t, dy),
                                  TT_MEM(const norm_x_t, x), TT_MEM(const float, coef),
                                  const int use_coef, const int accumulate, NORM_PLANE_ARGS)
{
    TT_PTR(norm_g_t, dinp);
    TT_PTR(const norm_g_t, dy);
    TT_PTR(const norm_x_t, x);
    TT_PTR(const float, coef);
    NORM_PLANE_BEGIN;
    float mean_g = use_coef ? coef[2 * q.s] : 0.0f, mean_gx = use_coef ? coef[2 * q.s + 1] : 0.0f;
    for (int j = 0; j < m; j++) {
        size_t i = base + norm_vec(k, j, chunks, chunk_vecs);
        float8 xv = norm_x8(x, i), g = norm_grad8(norm_g8(dy, i), xv, q, relu);
        float8 v = q.r * (g * q.w - mean_g - (xv - q.mean) * q.r * mean_gx);
        norm_g8_store(dinp, i, accumulate ? norm_g8(dinp, i) + v : v);
    }
    for (int t = 0; t < tail; t++) {
        size_t i = base + 8 * (size_t)nv + t;
        float xi = norm_x(x, i), g = norm_grad(norm_g(dy, i), xi, q, relu);
        float v = q.r * (g * q.w - mean_g - (xi - q.mean) * q.r * mean_gx);
        norm_g_store(dinp, i, accumulate ? norm_g(dinp, i) + v : v);
    }
}
