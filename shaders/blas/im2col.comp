/* blas/im2col: an image (channels, height, width) to its convolution
 * columns (channels * kernel_h * kernel_w, out_h * out_w), Caffe layout,
 * cross-correlation (tt_im2col in src/backend/backend.h; CLBlast's im2col
 * on OpenCL).  Entries whose tap falls in the padding are 0; `col` is
 * overwritten.  One invocation per column entry (1-D). */
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

void main()
{
    int index = tt_global_id();
    int plane = args.out_h * args.out_w;
    int taps = args.kernel_h * args.kernel_w;
    if (index >= args.channels * taps * plane) return;
    int q = index % plane, row = index / plane;
    int ox = q % args.out_w, oy = q / args.out_w;
    int kx = row % args.kernel_w, ky = (row / args.kernel_w) % args.kernel_h;
    int ch = row / taps;
    int y = oy * args.stride_h - args.pad_h + ky * args.dilation_h;
    int x = ox * args.stride_w - args.pad_w + kx * args.dilation_w;
    float value = 0.0;
    if (y >= 0 && y < args.height && x >= 0 && x < args.width)
        value = TT_B(im)[TT_AT(args.im_offset, 4) + (ch * args.height + y) * args.width + x];
    TT_B(col)[TT_AT(args.col_offset, 4) + index] = value;
}
