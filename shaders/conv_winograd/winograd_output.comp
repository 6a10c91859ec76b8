/* conv_winograd/winograd_output: one image's output (C, OH, OW) from M,
 * F(2x2, 3x3): out = (accumulate ? out : bias or 0) + Aᵀ M A for the 2x2
 * outputs of tile t inside the image (opencl/conv_winograd.cl; arguments
 * out, m, bias, has_bias, accumulate, channels, oh, ow, tiles_h, tiles_w;
 * global (tiles_w, tiles_h, C)). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, m);
TT_BUFFER(2, float, bias);
layout(push_constant) uniform Args {
    uint out_offset; uint m_offset; uint bias_offset; int has_bias; int accumulate;
    int channels; int oh; int ow; int tiles_h; int tiles_w;
} args;

void main()
{
    int tx = int(gl_GlobalInvocationID.x), ty = int(gl_GlobalInvocationID.y);
    int c = int(gl_GlobalInvocationID.z);
    int tiles_w = args.tiles_w, oh = args.oh, ow = args.ow;
    if (tx >= tiles_w || ty >= args.tiles_h || c >= args.channels) return;
    int tiles = args.tiles_h * tiles_w;
    int stride = args.channels * tiles;
    int at = TT_AT(args.m_offset, 4) + c * tiles + ty * tiles_w + tx;
    float t[2][4]; /* Aᵀ M */
    for (int j = 0; j < 4; j++) {
        float m0 = TT_B(m)[at + (0 + j) * stride], m1 = TT_B(m)[at + (4 + j) * stride];
        float m2 = TT_B(m)[at + (8 + j) * stride], m3 = TT_B(m)[at + (12 + j) * stride];
        t[0][j] = m0 + m1 + m2;
        t[1][j] = m1 - m2 - m3;
    }
    float b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + c] : 0.0;
    int plane = TT_AT(args.out_offset, 4) + c * oh * ow;
    for (int i = 0; i < 2; i++) {
        int y = 2 * ty + i;
        if (y >= oh) break;
        float r[2] = float[2](t[i][0] + t[i][1] + t[i][2], t[i][1] - t[i][2] - t[i][3]);
        for (int j = 0; j < 2; j++) {
            int x = 2 * tx + j;
            if (x >= ow) break;
            int o = plane + y * ow + x;
            TT_B(outp)[o] = (args.accumulate != 0 ? TT_B(outp)[o] : b) + r[j];
        }
    }
}
