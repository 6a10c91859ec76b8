/* conv/conv_bias_backward: dbias[c] += the sum over n and p of dout[n, c, p]
 * (opencl/conv.cl conv_bias_backward; arguments dbias, dout, batch,
 * channels, plane, pitch).  One work-group of TT_CONV_BIAS_WG (a power of two, the
 * launch's local size) per channel; its invocations stride over the plane,
 * then a tree in shared memory, in the OpenCL kernel's order. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_CONV_BIAS_WG = 64;

TT_BUFFER(0, float, dbias);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dbias_offset; uint dout_offset; int batch; int channels; int plane;
    int pitch;
} args;

shared float partial[TT_CONV_BIAS_WG];

void main()
{
    int c = int(gl_WorkGroupID.x), lid = int(gl_LocalInvocationID.x);
    float sum = 0.0;
    if (c < args.channels)
        for (int n = 0; n < args.batch; n++) {
            int row = TT_AT(args.dout_offset, 4) + (n * args.channels + c) * args.pitch;
            for (int p = lid; p < args.plane; p += TT_CONV_BIAS_WG) sum += TT_B(dout)[row + p];
        }
    partial[lid] = sum;
    barrier();
    for (int step = TT_CONV_BIAS_WG / 2; step > 0; step /= 2) {
        if (lid < step) partial[lid] += partial[lid + step];
        barrier();
    }
    if (lid == 0 && c < args.channels) TT_B(dbias)[TT_AT(args.dbias_offset, 4) + c] += partial[0];
}
