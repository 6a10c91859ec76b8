/* conv_direct/conv_direct_forward_k3: conv_direct_forward_w8 for the
 * UNet's 3x3, stride 1, padding 1, dilation 1 convolution: 8 columns of
 * ROWS rows for K3_COB output channels a work-item, each input row's three
 * shifted vectors loaded once and fed to every output row and channel
 * they meet (opencl/conv_direct.cl; arguments as conv_direct_forward;
 * global (ceil(Cout / K3_COB), ceil(OW / 8), N ceil(OH / ROWS))).  The
 * OpenCL kernel has plain-load paths for work-items inside the image; here
 * every load is the masked one (the same values). */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_FORWARD_BUFFERS;
TT_FORWARD_ARGS;

#include "conv_direct/k3.glsl"

void main()
{
    tt_geometry g = args.g;
    int co0 = int(gl_GlobalInvocationID.x) * TT_DIRECT_K3_COB;
    int x0 = int(gl_GlobalInvocationID.y) * 8;
    int row_blocks = (g.OH + TT_DIRECT_ROWS - 1) / TT_DIRECT_ROWS;
    int n = int(gl_GlobalInvocationID.z) / row_blocks;
    int y0 = int(gl_GlobalInvocationID.z) % row_blocks * TT_DIRECT_ROWS;
    if (co0 >= g.Cout || x0 >= g.OW || n >= g.N) return;
    k3_begin(co0, g.Cout, g.Cin);
    for (int ci = 0; ci < g.Cin; ci++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        for (int i = 0; i < TT_DIRECT_ROWS + 2; i++) {
            int iy = y0 - 1 + i;
            bool row_inside = iy >= 0 && iy < g.H;
            int row = plane + clamp(iy, 0, g.H - 1) * g.W;
            float x[3][8];
            for (int kx = 0; kx < 3; kx++) {
                float v[8];
                TT_LOAD8(v, inp, row, x0 - 1 + kx, g.W)
                for (int l = 0; l < 8; l++) x[kx][l] = row_inside ? v[l] : 0.0;
            }
            k3_row(x, ci, i);
        }
    }
    k3_store(n, co0, x0, y0);
}
