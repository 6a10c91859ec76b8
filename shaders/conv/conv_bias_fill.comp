/* conv/conv_bias_fill: y[row, p] = bias[row % channels] (opencl/conv.cl
 * conv_bias_fill; arguments y, bias, channels, plane, rows); global
 * (plane, batch * channels). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, float, bias);
layout(push_constant) uniform Args {
    uint y_offset; uint bias_offset; int channels; int plane; int rows;
} args;

void main()
{
    int p = int(gl_GlobalInvocationID.x), row = int(gl_GlobalInvocationID.y);
    if (p < args.plane && row < args.rows)
        TT_B(y)[TT_AT(args.y_offset, 4) + row * args.plane + p] =
            TT_B(bias)[TT_AT(args.bias_offset, 4) + row % args.channels];
}
