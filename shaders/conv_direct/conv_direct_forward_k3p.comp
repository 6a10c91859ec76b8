/* conv_direct/conv_direct_forward_k3p: conv_direct_forward_k3 reading one
 * image's input padded by conv_pad_k3 (N = 1; the host launches it per
 * image), every load a plain one (opencl/conv_direct.cl; arguments as
 * conv_direct_forward; global (ceil(Cout / K3_COB), ceil(OW / 8), OH /
 * ROWS)).  W % 8 == 0 and OH % ROWS == 0: the rows read stay in the
 * padded plane. */
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
    int y0 = int(gl_GlobalInvocationID.z) * TT_DIRECT_ROWS;
    int pitch = g.W + 8, plane = (g.H + 2) * pitch + 8; /* conv_pad_k3's layout */
    if (co0 >= g.Cout || x0 >= g.OW || y0 >= g.OH) return;
    k3_begin(co0, g.Cout, g.Cin);
    for (int ci = 0; ci < g.Cin; ci++) {
        /* padded row y0 + i is input row y0 - 1 + i; columns from -1 */
        int rows = TT_AT(args.inp_offset, 4) + ci * plane + y0 * pitch + 7 + x0;
        for (int i = 0; i < TT_DIRECT_ROWS + 2; i++) {
            float x[3][8];
            for (int kx = 0; kx < 3; kx++)
                for (int l = 0; l < 8; l++) x[kx][l] = TT_B(inp)[rows + i * pitch + kx + l];
            k3_row(x, ci, i);
        }
    }
    k3_store(0, co0, x0, y0);
}
