/* conv/conv_bias_backward_w8: conv_bias_backward for CPUs, one invocation
 * per channel c (opencl/conv.cl conv_bias_backward_w8; arguments dbias,
 * dout, batch, channels, plane, pitch; global (channels)).  Sums in the OpenCL
 * kernel's order: eight running sums over each row's whole groups of 8,
 * a tail for the rest, then ((s0+s4) + (s1+s5)) + ((s2+s6) + (s3+s7)) + tail. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dbias);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dbias_offset; uint dout_offset; int batch; int channels; int plane;
    int pitch;
} args;

void main()
{
    int c = tt_global_id();
    if (c >= args.channels) return;
    float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    float tail = 0.0;
    for (int n = 0; n < args.batch; n++) {
        int row = TT_AT(args.dout_offset, 4) + (n * args.channels + c) * args.pitch;
        int p = 0;
        for (; p + 8 <= args.plane; p += 8)
            for (int l = 0; l < 8; l++) acc[l] += TT_B(dout)[row + p + l];
        for (; p < args.plane; p++) tail += TT_B(dout)[row + p];
    }
    float hx = acc[0] + acc[4], hy = acc[1] + acc[5], hz = acc[2] + acc[6], hw = acc[3] + acc[7];
    TT_B(dbias)[TT_AT(args.dbias_offset, 4) + c] += (hx + hy) + (hz + hw) + tail;
}
