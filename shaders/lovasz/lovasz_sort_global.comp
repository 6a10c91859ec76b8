/* lovasz/lovasz_sort_global: one bitonic compare-exchange step (stage k,
 * distance j) over plane y of keys and index; work-item x is a pair
 * (opencl/lovasz.cl; arguments keys, index, P, k, j). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, keys);
TT_BUFFER(1, int, index);
layout(push_constant) uniform Args {
    uint keys_offset; uint index_offset;
    int P; int k; int j;
} args;

void main()
{
    int pair = int(gl_GlobalInvocationID.x), plane = int(gl_GlobalInvocationID.y);
    int P = args.P, j = args.j;
    if (pair >= P / 2) return;
    int i = ((pair & ~(j - 1)) << 1) | (pair & (j - 1)), l = i + j;
    int k0 = TT_AT(args.keys_offset, 4) + plane * P, i0 = TT_AT(args.index_offset, 4) + plane * P;
    float ki = TT_B(keys)[k0 + i], kl = TT_B(keys)[k0 + l];
    int ii = TT_B(index)[i0 + i], il = TT_B(index)[i0 + l];
    bool ascending = (i & args.k) == 0;
    bool l_first = kl > ki || (kl == ki && il < ii);
    if (ascending == l_first) {
        TT_B(keys)[k0 + i] = kl;
        TT_B(index)[i0 + i] = il;
        TT_B(keys)[k0 + l] = ki;
        TT_B(index)[i0 + l] = ii;
    }
}
