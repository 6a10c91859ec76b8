/* reduce/sum_squares_partial: partial[group] = sum over the group's
 * elements of x^2 (opencl/reduce.cl; arguments partial, x, n as uint64 read
 * as two uint words).
 * TT_WG work-items per group walk x with a grid stride keeping a Kahan sum
 * (`precise`: the compensation must not be simplified away), then the same
 * tree as tt_reduce_group_f32 in shared memory. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_WG = 256;

TT_BUFFER(0, float, partial);
TT_BUFFER(1, float, x);
layout(push_constant) uniform Args {
    uint partial_offset; uint x_offset; uint n_low; uint n_high;
} args;
shared float s[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint base = uint(TT_AT(args.x_offset, 4));
    /* the device does not enable shaderInt64: n is read as two words; a
     * binding holds fewer than 2^32 floats, so the high word is 0 */
    uint n = args.n_high != 0u ? 0xffffffffu : args.n_low;
    precise float sum = 0.0, carry = 0.0;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        float v = TT_B(x)[base + i];
        precise float term = v * v - carry;
        precise float next = sum + term;
        carry = (next - sum) - term;
        sum = next;
    }
    s[lid] = sum;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) s[lid] += s[lid + half_];
    }
    barrier();
    if (lid == 0) TT_B(partial)[TT_AT(args.partial_offset, 4) + int(gl_WorkGroupID.x)] = s[0];
}
