/* reduce/count_nonfinite: count[0] += the number of NaN or Inf in x
 * (opencl/reduce.cl; arguments count as uint, x, n as uint64 read as two
 * uint words).  Tests the exponent bits; one atomic add per work-group of TT_WG items. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_WG = 256;

TT_BUFFER(0, uint, count);
TT_BUFFER(1, float, x);
layout(push_constant) uniform Args {
    uint count_offset; uint x_offset; uint n_low; uint n_high;
} args;
shared uint s[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint base = uint(TT_AT(args.x_offset, 4));
    /* the device does not enable shaderInt64: n is read as two words; a
     * binding holds fewer than 2^32 floats, so the high word is 0 */
    uint n = args.n_high != 0u ? 0xffffffffu : args.n_low;
    uint bad = 0;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride)
        bad += (floatBitsToUint(TT_B(x)[base + i]) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
    s[lid] = bad;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) s[lid] += s[lid + half_];
    }
    if (lid == 0 && s[0] != 0u) atomicAdd(TT_B(count)[TT_AT(args.count_offset, 4)], s[0]);
}
