/* concat/concat_backward_part: dpart += dwhole[:, offset:offset + part_channels]
 * (opencl/concat.cl; arguments dpart, dwhole, count, part_channels,
 * channel_offset, channels, plane); one work-item per element of the part. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dpart);
TT_BUFFER(1, float, dwhole);
layout(push_constant) uniform Args {
    uint dpart_offset; uint dwhole_offset;
    int count; int part_channels; int channel_offset; int channels; int plane;
} args;

/* Index in the whole of element i of the part (concat_whole_index). */
int whole_index(int i)
{
    int part_image = args.part_channels * args.plane;
    int n = i / part_image, rest = i % part_image;
    return n * args.channels * args.plane + args.channel_offset * args.plane + rest;
}

void main()
{
    int i = tt_global_id();
    if (i >= args.count) return;
    int id = TT_AT(args.dpart_offset, 4) + i;
    precise float sum = TT_B(dpart)[id] + TT_B(dwhole)[TT_AT(args.dwhole_offset, 4) + whole_index(i)];
    TT_B(dpart)[id] = sum;
}
