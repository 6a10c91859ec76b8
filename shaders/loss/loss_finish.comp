/* loss/loss_finish: result += (sum of part_sum, of part_count, of
 * part_invalid) over `groups` partials (opencl/loss.cl; arguments result,
 * part_sum, part_count, part_invalid, groups); one work-group of TT_WG. */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, uint, result);
TT_BUFFER(1, float, part_sum);
TT_BUFFER(2, uint, part_count);
TT_BUFFER(3, uint, part_invalid);
layout(push_constant) uniform Args {
    uint result_offset; uint sum_offset; uint count_offset; uint invalid_offset; int groups;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    precise float sum = 0.0;
    uint count = 0u, invalid = 0u;
    for (int g = lid; g < args.groups; g += TT_WG) {
        sum += TT_B(part_sum)[TT_AT(args.sum_offset, 4) + g];
        count += TT_B(part_count)[TT_AT(args.count_offset, 4) + g];
        invalid += TT_B(part_invalid)[TT_AT(args.invalid_offset, 4) + g];
    }
    s[lid] = sum;
    c[lid] = count;
    b[lid] = invalid;
    TT_LOSS_GROUP_REDUCE(lid);
    if (lid == 0) {
        int r = TT_AT(args.result_offset, 4);
        precise float total = uintBitsToFloat(TT_B(result)[r]) + s[0];
        TT_B(result)[r] = floatBitsToUint(total);
        TT_B(result)[r + 1] += c[0];
        TT_B(result)[r + 2] += b[0];
    }
}
