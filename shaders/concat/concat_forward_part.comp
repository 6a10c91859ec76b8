/* concat/concat_forward_part: whole[:, offset:offset + part_channels] = part
 * (opencl/concat.cl; arguments whole, part, count, part_channels,
 * channel_offset, channels, plane); one work-item per element of the part. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, whole);
TT_BUFFER(1, float, part);
layout(push_constant) uniform Args {
    uint whole_offset; uint part_offset;
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
    TT_B(whole)[TT_AT(args.whole_offset, 4) + whole_index(i)] = TT_B(part)[TT_AT(args.part_offset, 4) + i];
}
