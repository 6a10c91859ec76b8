/* conv_direct/conv_pad_k3: the input of conv_direct_forward_k3p and
 * conv_direct_backward_weight_k3p, each plane (H, W), W a multiple of 8,
 * with its padding written out: rows of W + 8 floats (8 zeros, then the
 * row), a row of zeros above and below, and 8 zeros after the last
 * (opencl/conv_direct.cl; arguments dst, src, planes, H, W; global (H + 3,
 * planes): row r of the padded plane a work-item, r = H + 2 the 8 zeros
 * at the end). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dst);
TT_BUFFER(1, float, src);
layout(push_constant) uniform Args {
    uint dst_offset; uint src_offset; int planes; int H; int W;
} args;

void main()
{
    int r = int(gl_GlobalInvocationID.x), plane = int(gl_GlobalInvocationID.y);
    int H = args.H, W = args.W, pitch = W + 8;
    if (r > H + 2 || plane >= args.planes) return;
    int d = TT_AT(args.dst_offset, 4) + plane * ((H + 2) * pitch + 8) + r * pitch;
    for (int l = 0; l < 8; l++) TT_B(dst)[d + l] = 0.0;
    if (r == H + 2) return;
    if (r == 0 || r == H + 1) {
        for (int x = 0; x < W; x++) TT_B(dst)[d + 8 + x] = 0.0;
        return;
    }
    int row = TT_AT(args.src_offset, 4) + (plane * H + r - 1) * W;
    for (int x = 0; x < W; x++) TT_B(dst)[d + 8 + x] = TT_B(src)[row + x];
}
