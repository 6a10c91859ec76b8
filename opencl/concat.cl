/*
 * Concatenation of two NCHW tensors along channels, one part at a time: a
 * part (N, part_channels, H, W) sits in the whole (N, channels, H, W) at
 * channel `channel_offset`.  One work-item per element of the part.
 */

/* Index in the whole of element i of the part. */
size_t concat_whole_index(int i, int part_channels, int channel_offset, int channels, int plane)
{
    int part_image = part_channels * plane;
    int n = i / part_image, rest = i % part_image;
    return (size_t)n * channels * plane + (size_t)channel_offset * plane + rest;
}

/* whole[:, offset:offset + part_channels] = part */
__kernel void concat_forward_part(TT_MEM(float, whole), TT_MEM(const float, part), const int count,
                                  const int part_channels, const int channel_offset,
                                  const int channels, const int plane)
{
    TT_PTR(float, whole);
    TT_PTR(const float, part);
    int i = get_global_id(0);
    if (i >= count) return;
    whole[concat_whole_index(i, part_channels, channel_offset, channels, plane)] = part[i];
}

/* dpart += dwhole[:, offset:offset + part_channels] */
__kernel void concat_backward_part(TT_MEM(float, dpart), TT_MEM(const float, dwhole),
                                   const int count, const int part_channels,
                                   const int channel_offset, const int channels, const int plane)
{
    TT_PTR(float, dpart);
    TT_PTR(const float, dwhole);
    int i = get_global_id(0);
    if (i >= count) return;
    dpart[i] += dwhole[concat_whole_index(i, part_channels, channel_offset, channels, plane)];
}
