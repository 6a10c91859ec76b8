/* conv_direct/conv_direct_backward_weight_k3p: conv_direct_backward_weight_k3
 * reading the input padded by conv_pad_k3 (the third buffer), so every row
 * is the same loop of plain loads (opencl/conv_direct.cl; arguments and
 * global as conv_direct_backward_weight_k3).  Two output rows at a time:
 * each of the four input rows' vectors is loaded once for both.
 * W % 8 == 0. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"
#include "conv_direct/k3w.glsl"

void main()
{
    tt_geometry g = args.g;
    k3w_band band;
    if (!k3w_begin(band)) return;
    int pitch = g.W + 8, plane_floats = (g.H + 2) * pitch + 8; /* conv_pad_k3's layout */
    for (int n = band.n0; n < band.n1; n++) {
        /* padded row oy + ky is input row oy - 1 + ky; columns from -1 */
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + band.ci) * plane_floats + 7;
        int dplane = TT_AT(args.dout_offset, 4) + (n * g.Cout + band.co) * g.OH * g.OW;
        int oy = band.r0;
        for (; oy + 1 < band.r1; oy += 2) {
            int drow = dplane + oy * g.OW, row = plane + oy * pitch;
            for (int x0 = 0; x0 < g.OW; x0 += 8) {
                float d0[8], d1[8];
                for (int l = 0; l < 8; l++) {
                    d0[l] = TT_B(dout)[drow + x0 + l];
                    d1[l] = TT_B(dout)[drow + g.OW + x0 + l];
                }
                for (int i = 0; i < 4; i++)
                    for (int kx = 0; kx < 3; kx++)
                        for (int l = 0; l < 8; l++) {
                            float x = TT_B(inp)[row + i * pitch + x0 + kx + l];
                            if (i < 3) k3w_acc[i][kx][l] = fma(d0[l], x, k3w_acc[i][kx][l]);
                            if (i > 0) k3w_acc[i - 1][kx][l] = fma(d1[l], x, k3w_acc[i - 1][kx][l]);
                        }
            }
        }
        if (oy < band.r1) {
            int drow = dplane + oy * g.OW, row = plane + oy * pitch;
            for (int x0 = 0; x0 < g.OW; x0 += 8)
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++)
                        for (int l = 0; l < 8; l++)
                            k3w_acc[ky][kx][l] = fma(TT_B(dout)[drow + x0 + l],
                                                     TT_B(inp)[row + ky * pitch + x0 + kx + l],
                                                     k3w_acc[ky][kx][l]);
        }
    }
    k3w_store(band);
}
