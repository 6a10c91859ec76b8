/*
 * Per-channel ops of squeeze-and-excitation on NCHW tensors, seen as
 * `planes` = N C planes of `plane` = H W floats: the plane sums behind
 * global average pooling and the channel multiply's scale gradient
 * (src/ops/global_avg_pool.c), the pooling's backward, and the channel
 * multiply (src/ops/channel_mul.c).
 *
 * Plane sums are deterministic and use no atomics.  The host cuts each
 * plane into `chunks` chunks of `chunk` floats (the last may be shorter);
 * work-group g (of exactly TT_WG items, a power of two) sums chunk
 * g % chunks of plane g / chunks: its items walk the chunk with a stride
 * of TT_WG (neighbouring items read neighbouring floats), then a tree in
 * local memory.  With one chunk the group's sum is the plane's and is
 * stored scaled at once; else each group stores its partial in place g of
 * a workspace and plane_sum_finish adds a plane's partials in chunk order.
 * The launch is exactly planes x chunks groups here; `planes` is for the
 * Vulkan shaders, whose launch may be folded into rows with groups to spare.
 * Element-wise kernels: one work-item per element, n need not be a multiple
 * of the work-group.  Backward kernels ADD.
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* Tree reduction of s[0..TT_WG) into s[0]; every item of the group calls it. */
TT_INLINE void tt_channel_group_sum(__local float *s)
{
    int lid = get_local_id(0);
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) s[lid] += s[lid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* dst[g] (+)= scale * the group's sum, from item 0. */
TT_INLINE void tt_channel_group_store(__global float *dst, __local float *s, const float scale,
                                   const int accumulate)
{
    tt_channel_group_sum(s);
    if (get_local_id(0) != 0) return;
    size_t g = get_group_id(0);
    float v = s[0] * scale;
    dst[g] = accumulate ? dst[g] + v : v;
}

/* dst[g] (+)= scale * sum of a over chunk g % chunks of plane g / chunks */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void plane_sum_partial(TT_MEM(float, dst), TT_MEM(const float, a), const int planes,
                       const int plane, const int chunk, const int chunks, const float scale,
                       const int accumulate)
{
    TT_PTR(float, dst);
    TT_PTR(const float, a);
    __local float s[TT_WG];
    int g = get_group_id(0), lid = get_local_id(0);
    int p = g / chunks, begin = (g - p * chunks) * chunk;
    int end = chunk < plane - begin ? begin + chunk : plane;
    __global const float *row = a + (size_t)p * plane;
    float sum = 0.0f;
    for (int i = begin + lid; i < end; i += TT_WG) sum += row[i];
    s[lid] = sum;
    tt_channel_group_store(dst, s, scale, accumulate);
}

/* dst[g] (+)= scale * sum of a * b over chunk g % chunks of plane g / chunks */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void plane_dot_partial(TT_MEM(float, dst), TT_MEM(const float, a), TT_MEM(const float, b),
                       const int planes, const int plane, const int chunk, const int chunks,
                       const float scale, const int accumulate)
{
    TT_PTR(float, dst);
    TT_PTR(const float, a);
    TT_PTR(const float, b);
    __local float s[TT_WG];
    int g = get_group_id(0), lid = get_local_id(0);
    int p = g / chunks, begin = (g - p * chunks) * chunk;
    int end = chunk < plane - begin ? begin + chunk : plane;
    __global const float *ra = a + (size_t)p * plane, *rb = b + (size_t)p * plane;
    float sum = 0.0f;
    for (int i = begin + lid; i < end; i += TT_WG) sum += ra[i] * rb[i];
    s[lid] = sum;
    tt_channel_group_store(dst, s, scale, accumulate);
}

/* out[p] (+)= scale * sum of partial[p chunks .. p chunks + chunks), in order */
__kernel void plane_sum_finish(TT_MEM(float, out), TT_MEM(const float, partial),
                               const int planes, const int chunks, const float scale,
                               const int accumulate)
{
    TT_PTR(float, out);
    TT_PTR(const float, partial);
    int p = get_global_id(0);
    if (p >= planes) return;
    __global const float *row = partial + (size_t)p * chunks;
    float sum = 0.0f;
    for (int k = 0; k < chunks; k++) sum += row[k];
    float v = sum * scale;
    out[p] = accumulate ? out[p] + v : v;
}

/* dinp[i] += dout[i / plane] * scale (scale = 1 / plane) */
__kernel void global_avg_pool_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                       const int plane, const int n, const float scale)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int i = get_global_id(0);
    if (i >= n) return;
    dinp[i] += dout[i / plane] * scale;
}

/* y[i] = x[i] * s[i / plane]; y may be x */
__kernel void channel_mul_forward(TT_MEM(float, y), TT_MEM(const float, x),
                                  TT_MEM(const float, s), const int plane, const int n)
{
    TT_PTR(float, y);
    TT_PTR(const float, x);
    TT_PTR(const float, s);
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = x[i] * s[i / plane];
}

/* dx[i] += dy[i] * s[i / plane] */
__kernel void channel_mul_backward_data(TT_MEM(float, dx), TT_MEM(const float, dy),
                                        TT_MEM(const float, s), const int plane, const int n)
{
    TT_PTR(float, dx);
    TT_PTR(const float, dy);
    TT_PTR(const float, s);
    int i = get_global_id(0);
    if (i >= n) return;
    dx[i] += dy[i] * s[i / plane];
}
