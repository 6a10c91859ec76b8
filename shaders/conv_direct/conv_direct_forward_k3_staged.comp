/* conv_direct/conv_direct_forward_k3_staged: conv_direct_forward_k3 with
 * the work-group's input staged in shared memory (opencl/conv_direct.cl;
 * arguments as conv_direct_forward; launched as conv_direct_forward_k3,
 * in work-groups of (up to 4 channel blocks, K3_CHUNKS column chunks of
 * 8, 1 row block)).  Per 16 input channels the group copies the ROWS + 2
 * input rows around its row block, columns xs - 1 .. xs + 8 K3_CHUNKS,
 * with the padding's zeros, into one tile; then every invocation computes
 * from it with plain loads.  Every invocation reaches both barriers of
 * every chunk of channels (the loop bound Cin is uniform); those past the
 * edges store nothing. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_FORWARD_BUFFERS;
TT_FORWARD_ARGS;

#include "conv_direct/k3.glsl"

const int K3S_CH = 16;                          /* input channels a tile */
const int K3S_COLS = TT_DIRECT_K3_CHUNKS * 8 + 2;
const int K3S_ROWS = TT_DIRECT_ROWS + 2;
shared float tile[K3S_CH * K3S_ROWS * K3S_COLS];

void main()
{
    tt_geometry g = args.g;
    int co0 = int(gl_GlobalInvocationID.x) * TT_DIRECT_K3_COB;
    int chunk = int(gl_LocalInvocationID.y);
    int xs = int(gl_WorkGroupID.y) * TT_DIRECT_K3_CHUNKS * 8, x0 = xs + chunk * 8;
    int row_blocks = (g.OH + TT_DIRECT_ROWS - 1) / TT_DIRECT_ROWS;
    int n = int(gl_GlobalInvocationID.z) / row_blocks;
    int y0 = int(gl_GlobalInvocationID.z) % row_blocks * TT_DIRECT_ROWS;
    int items = int(gl_WorkGroupSize.x * gl_WorkGroupSize.y);
    int me = int(gl_LocalInvocationID.y * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    k3_begin(co0, g.Cout, g.Cin);
    for (int c0 = 0; c0 < g.Cin; c0 += K3S_CH) {
        memoryBarrierShared();
        barrier(); /* the last chunk's reads are done */
        for (int seg = me; seg < K3S_CH * K3S_ROWS; seg += items) {
            int c = c0 + seg / K3S_ROWS, iy = y0 - 1 + seg % K3S_ROWS;
            int t = seg * K3S_COLS;
            if (c >= g.Cin || iy < 0 || iy >= g.H) {
                for (int k = 0; k < K3S_COLS; k++) tile[t + k] = 0.0;
                continue;
            }
            int row = TT_AT(args.inp_offset, 4) + ((n * g.Cin + c) * g.H + iy) * g.W;
            tile[t] = xs >= 1 ? TT_B(inp)[row + xs - 1] : 0.0;
            for (int k = 0; k < TT_DIRECT_K3_CHUNKS; k++) {
                float v[8];
                TT_LOAD8(v, inp, row, xs + 8 * k, g.W)
                for (int l = 0; l < 8; l++) tile[t + 1 + 8 * k + l] = v[l];
            }
            int right = xs + 8 * TT_DIRECT_K3_CHUNKS;
            tile[t + K3S_COLS - 1] = right < g.W ? TT_B(inp)[row + right] : 0.0;
        }
        memoryBarrierShared();
        barrier();
        int count = min(K3S_CH, g.Cin - c0);
        for (int c = 0; c < count; c++) {
            int t = c * K3S_ROWS * K3S_COLS + chunk * 8;
            for (int i = 0; i < K3S_ROWS; i++) {
                float x[3][8];
                for (int kx = 0; kx < 3; kx++)
                    for (int l = 0; l < 8; l++) x[kx][l] = tile[t + i * K3S_COLS + kx + l];
                k3_row(x, c0 + c, i);
            }
        }
    }
    if (co0 >= g.Cout || x0 >= g.OW || n >= g.N) return;
    k3_store(n, co0, x0, y0);
}
