/* blas/im2col: an image (channels, height, width) to its convolution
 * columns (channels * kernel_h * kernel_w, out_h * out_w), Caffe layout,
 * cross-correlation (tt_im2col in src/backend/backend.h; CLBlast's im2col
 * on OpenCL).  Entries whose tap falls in the padding are 0; `col` is
 * overwritten.  One invocation per column entry, 3-D: (output column,
 * output row, column row).  The kernel size is also the specialization
 * constants TT_KH and TT_KW, so the row splits into channel and tap by
 * divisions the compiler turns into multiplications: a CPU device (lavapipe)
 * has no vector integer division. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, im);
TT_BUFFER(1, float, col);
layout(push_constant) uniform Args {
    uint im_offset; uint col_offset;
    int channels; int height; int width; int kernel_h; int kernel_w;
    int pad_h; int pad_w; int stride_h; int stride_w; int dilation_h; int dilation_w;
    int out_h; int out_w;
} args;

layout(constant_id = 3) const int TT_KH = 3;
layout(constant_id = 4) const int TT_KW = 3;

void main()
{
    int ox = int(gl_GlobalInvocationID.x), oy = int(gl_GlobalInvocationID.y);
    int row = int(gl_GlobalInvocationID.z);
    if (ox >= args.out_w || oy >= args.out_h || row >= args.channels * TT_KH * TT_KW) return;
    int index = (row * args.out_h + oy) * args.out_w + ox;
    int kx = row % TT_KW, ky = (row / TT_KW) % TT_KH;
    int ch = row / (TT_KH * TT_KW);
    int y = oy * args.stride_h - args.pad_h + ky * args.dilation_h;
    int x = ox * args.stride_w - args.pad_w + kx * args.dilation_w;
    float value = 0.0;
    if (y >= 0 && y < args.height && x >= 0 && x < args.width)
        value = TT_B(im)[TT_AT(args.im_offset, 4) + (ch * args.height + y) * args.width + x];
    TT_B(col)[TT_AT(args.col_offset, 4) + index] = value;
}
