/* conv_winograd/winograd_input: V[e][c][t] = (Bᵀ d B)[e] for one image
 * (C, H, W), F(2x2, 3x3) (opencl/conv_winograd.cl; arguments v, image,
 * channels, h, w, pad_h, pad_w, tiles_h, tiles_w; global (tiles_w, tiles_h,
 * C)).  Tile t = ty tiles_w + tx reads rows 2 ty - pad_h .. + 3 and columns
 * 2 tx - pad_w .. + 3, zero outside the image. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, v);
TT_BUFFER(1, float, image);
layout(push_constant) uniform Args {
    uint v_offset; uint image_offset; int channels; int h; int w; int pad_h; int pad_w;
    int tiles_h; int tiles_w;
} args;

void main()
{
    int tx = int(gl_GlobalInvocationID.x), ty = int(gl_GlobalInvocationID.y);
    int c = int(gl_GlobalInvocationID.z);
    int h = args.h, w = args.w, tiles_w = args.tiles_w;
    if (tx >= tiles_w || ty >= args.tiles_h || c >= args.channels) return;
    int plane = TT_AT(args.image_offset, 4) + c * h * w;
    float d[4][4];
    for (int i = 0; i < 4; i++) {
        int y = 2 * ty - args.pad_h + i;
        for (int j = 0; j < 4; j++) {
            int x = 2 * tx - args.pad_w + j;
            d[i][j] = (y >= 0 && y < h && x >= 0 && x < w) ? TT_B(image)[plane + y * w + x] : 0.0;
        }
    }
    float t[4][4]; /* Bᵀ d */
    for (int j = 0; j < 4; j++) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    int tiles = args.tiles_h * tiles_w;
    int stride = args.channels * tiles;
    int at = TT_AT(args.v_offset, 4) + c * tiles + ty * tiles_w + tx;
    for (int i = 0; i < 4; i++) {
        TT_B(v)[at + (4 * i + 0) * stride] = t[i][0] - t[i][2];
        TT_B(v)[at + (4 * i + 1) * stride] = t[i][1] + t[i][2];
        TT_B(v)[at + (4 * i + 2) * stride] = t[i][2] - t[i][1];
        TT_B(v)[at + (4 * i + 3) * stride] = t[i][1] - t[i][3];
    }
}
