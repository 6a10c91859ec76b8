/* blas/col2im: the adjoint of blas/im2col, ADDED into the image: im[c, y, x]
 * += every column entry whose tap reads (c, y, x) (tt_im2col in
 * src/backend/backend.h; CLBlast's col2im on OpenCL).  One invocation per
 * image pixel gathers its entries, so no two write the same place; 3-D:
 * (column, row, channel).  Arguments as blas/im2col; the kernel size and
 * the strides are also the specialization constants TT_KH, TT_KW, TT_SH
 * and TT_SW, so their divisions become multiplications (a CPU device has
 * no vector integer division). */
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
layout(constant_id = 5) const int TT_SH = 1;
layout(constant_id = 6) const int TT_SW = 1;

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int ch = int(gl_GlobalInvocationID.z);
    if (x >= args.width || y >= args.height || ch >= args.channels) return;
    int index = (ch * args.height + y) * args.width + x;
    int plane = args.out_h * args.out_w, c0 = TT_AT(args.col_offset, 4);
    float sum = 0.0;
    for (int ky = 0; ky < TT_KH; ky++) {
        int sy = y + args.pad_h - ky * args.dilation_h; /* oy * stride_h */
        if (sy < 0 || sy % TT_SH != 0 || sy / TT_SH >= args.out_h) continue;
        int oy = sy / TT_SH;
        for (int kx = 0; kx < TT_KW; kx++) {
            int sx = x + args.pad_w - kx * args.dilation_w;
            if (sx < 0 || sx % TT_SW != 0 || sx / TT_SW >= args.out_w) continue;
            int row = (ch * TT_KH + ky) * TT_KW + kx;
            sum += TT_B(col)[c0 + row * plane + oy * args.out_w + sx / TT_SW];
        }
    }
    TT_B(im)[TT_AT(args.im_offset, 4) + index] += sum;
}
