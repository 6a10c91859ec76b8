/*
 * Reductions over flat float arrays, done on the device so the host reads
 * one number: the sum of squares (for the global gradient norm) and a count
 * of non-finite elements (for skipping a step after an overflow).
 *
 * Sum of squares is two-stage and deterministic: stage 1 runs a fixed number
 * of work-groups of exactly TT_WG items (a power of two); each item walks the
 * array's vectors of 16 floats with a grid stride (then the last n % 16
 * floats), keeping a Kahan-compensated sum in each lane, adds its
 * lanes, then the group reduces in local memory to one partial.  A vector
 * an item: the lanes are SIMD lanes on a CPU, where a scalar walk is one
 * dependent chain of adds per item.  Stage 2 is one work-group
 * that reduces the partials and ADDS the total into a device float, so several
 * arrays can be summed before the host reads the result once.
 *
 * Indices are ulong: arrays of more than 2^31 floats are fine.
 */
#ifndef TT_WG
#define TT_WG 256
#endif

/* Tree reduction of s[0..TT_WG) into s[0]; every item must call it. */
TT_INLINE void tt_reduce_group_f32(__local float *s)
{
    int lid = get_local_id(0);
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) s[lid] += s[lid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The sum of v's 16 lanes, always in the same order. */
TT_INLINE float tt_lanes_sum(float16 v)
{
    float8 a = v.lo + v.hi;
    float4 b = a.lo + a.hi;
    float2 c = b.lo + b.hi;
    return c.x + c.y;
}

/* partial[group] = sum over this group's elements of x^2 */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void sum_squares_partial(TT_MEM(float, partial), TT_MEM(const float, x), const ulong n)
{
    TT_PTR(float, partial);
    TT_PTR(const float, x);
    __local float s[TT_WG];
    float16 sum = 0.0f, carry = 0.0f; /* Kahan: sum + carry is the exact running total */
    const ulong vectors = n / 16, tail = 16 * vectors;
    for (ulong i = get_global_id(0); i < vectors; i += get_global_size(0)) {
        float16 v = vload16(i, x);
        float16 term = v * v - carry;
        float16 next = sum + term;
        carry = (next - sum) - term;
        sum = next;
    }
    float total = tt_lanes_sum(sum);
    for (ulong i = tail + get_global_id(0); i < n; i += get_global_size(0)) total += x[i] * x[i];
    s[get_local_id(0)] = total;
    tt_reduce_group_f32(s);
    if (get_local_id(0) == 0) partial[get_group_id(0)] = s[0];
}

/* acc[0] += sum of partial[0..groups); one work-group */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void sum_squares_finish(TT_MEM(float, acc), TT_MEM(const float, partial), const int groups)
{
    TT_PTR(float, acc);
    TT_PTR(const float, partial);
    __local float s[TT_WG];
    float sum = 0.0f;
    for (int i = get_local_id(0); i < groups; i += TT_WG) sum += partial[i];
    s[get_local_id(0)] = sum;
    tt_reduce_group_f32(s);
    if (get_local_id(0) == 0) acc[0] += s[0];
}

/* count[0] += number of NaN or Inf in x.  Tests the exponent bits, so it
 * holds under -cl-fast-relaxed-math too; vectors of 16 as above.  One
 * atomic per work-group. */
__kernel __attribute__((reqd_work_group_size(TT_WG, 1, 1)))
void count_nonfinite(TT_MEM(uint, count), TT_MEM(const float, x), const ulong n)
{
    TT_PTR(uint, count);
    TT_PTR(const float, x);
    __local uint s[TT_WG];
    const uint16 exponent = (uint16)0x7f800000u;
    const ulong vectors = n / 16, tail = 16 * vectors;
    uint16 bad16 = 0; /* -1 per non-finite lane: the comparison's true */
    for (ulong i = get_global_id(0); i < vectors; i += get_global_size(0))
        bad16 -= as_uint16((as_uint16(vload16(i, x)) & exponent) == exponent);
    uint8 a = bad16.lo + bad16.hi;
    uint4 b = a.lo + a.hi;
    uint bad = b.x + b.y + b.z + b.w;
    for (ulong i = tail + get_global_id(0); i < n; i += get_global_size(0))
        bad += (as_uint(x[i]) & 0x7f800000u) == 0x7f800000u;
    int lid = get_local_id(0);
    s[lid] = bad;
    for (int stride = TT_WG / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) s[lid] += s[lid + stride];
    }
    if (lid == 0 && s[0]) atomic_add(count, s[0]);
}
