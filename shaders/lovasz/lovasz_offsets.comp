/* lovasz/lovasz_offsets: for plane y, chunk_offset (the chunks' positives
 * in, their exclusive prefix sums out) and plane_positive[plane] = the
 * plane's positives G; one work-group per plane (opencl/lovasz.cl;
 * arguments chunk_offset, plane_positive, chunks). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, uint, chunk_offset);
TT_BUFFER(1, uint, plane_positive);
layout(push_constant) uniform Args {
    uint offset_offset; uint positive_offset;
    int chunks;
} args;
shared uint scan[TT_WG];

void main()
{
    int plane = int(gl_GlobalInvocationID.y), lid = int(gl_LocalInvocationID.x);
    int chunks = args.chunks, o0 = TT_AT(args.offset_offset, 4) + plane * chunks;
    uint running = 0u;
    for (int first = 0; first < chunks; first += TT_WG) {
        uint v = first + lid < chunks ? TT_B(chunk_offset)[o0 + first + lid] : 0u;
        scan[lid] = v;
        for (int off = 1; off < TT_WG; off <<= 1) {
            barrier();
            uint add = lid >= off ? scan[lid - off] : 0u;
            barrier();
            scan[lid] += add;
        }
        barrier();
        if (first + lid < chunks) TT_B(chunk_offset)[o0 + first + lid] = running + scan[lid] - v;
        running += scan[TT_WG - 1];
        barrier();
    }
    if (lid == 0) TT_B(plane_positive)[TT_AT(args.positive_offset, 4) + plane] = running;
}
