/* blas/col2im: the adjoint of blas/im2col, ADDED into the image: im[c, y, x]
 * += every column entry whose tap reads (c, y, x) (tt_im2col in
 * src/backend/backend.h; CLBlast's col2im on OpenCL).  One invocation per
 * image pixel gathers its entries, so no two write the same place.
 * Arguments as blas/im2col. */
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
    if (index >= args.channels * args.height * args.width) return;
    int x = index % args.width, y = (index / args.width) % args.height;
    int ch = index / (args.width * args.height);
    int plane = args.out_h * args.out_w, c0 = TT_AT(args.col_offset, 4);
    float sum = 0.0;
    for (int ky = 0; ky < args.kernel_h; ky++) {
        int sy = y + args.pad_h - ky * args.dilation_h; /* oy * stride_h */
        if (sy < 0 || sy % args.stride_h != 0 || sy / args.stride_h >= args.out_h) continue;
        int oy = sy / args.stride_h;
        for (int kx = 0; kx < args.kernel_w; kx++) {
            int sx = x + args.pad_w - kx * args.dilation_w;
            if (sx < 0 || sx % args.stride_w != 0 || sx / args.stride_w >= args.out_w) continue;
            int row = (ch * args.kernel_h + ky) * args.kernel_w + kx;
            sum += TT_B(col)[c0 + row * plane + oy * args.out_w + sx / args.stride_w];
        }
    }
    TT_B(im)[TT_AT(args.im_offset, 4) + index] += sum;
}
