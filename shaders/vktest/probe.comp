/* vktest/probe: exercises the launch conventions for tests/test_vulkan.c.
 * Work-item i of n writes result[i] = TT_PROBE_VALUE (a constant set from the
 * launch's -DTT_PROBE_VALUE=...) + TT_LOCAL0 (the first TT_ARG_LOCAL's
 * size in words) * 1000 + the work-group size * 1000000, after a round
 * trip through the shared array that TT_LOCAL0 sizes.  Arguments: result,
 * local scratch, n. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_PROBE_VALUE = 0;
layout(constant_id = 4) const uint TT_LOCAL0 = 1;

TT_BUFFER(0, float, result);
layout(push_constant) uniform Args { uint result_offset; int n; } args;
shared float scratch[TT_LOCAL0];

void main()
{
    int i = tt_global_id();
    uint slot = gl_LocalInvocationIndex % TT_LOCAL0;
    scratch[slot] = float(TT_PROBE_VALUE + int(TT_LOCAL0) * 1000 +
                          int(gl_WorkGroupSize.x) * 1000000);
    if (i < args.n) TT_B(result)[TT_AT(args.result_offset, 4) + i] = scratch[slot];
}
