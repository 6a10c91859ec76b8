/* conv_direct/conv_direct_forward_tiled: conv_direct_forward with the
 * input tile of a (TW x TH) block of outputs and the block's weights staged
 * in shared memory, one input channel at a time (opencl/conv_direct.cl;
 * arguments as conv_direct_forward, then the two local arrays: `tile`,
 * ((TH-1) sH + (kH-1) dH + 1) x ((TW-1) sW + (kW-1) dW + 1) floats, sized
 * by TT_LOCAL0, and `wtile`, COB kH kW floats, by TT_LOCAL1; work-group
 * (TW, TH, 1), global rounded up; row0 a multiple of TH).  Every invocation reaches both
 * barriers of every channel (the loop bound Cin is uniform); those past
 * the edges store nothing. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

layout(constant_id = 14) const int TT_LOCAL0 = 1;
layout(constant_id = 15) const int TT_LOCAL1 = 1;

TT_FORWARD_BUFFERS;
TT_FORWARD_ARGS;
shared float tile[TT_LOCAL0];
shared float wtile[TT_LOCAL1];

void main()
{
    tt_geometry g = args.g;
    int tw = int(gl_WorkGroupSize.x), th = int(gl_WorkGroupSize.y); /* TW, TH */
    int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
    int ox = int(gl_GlobalInvocationID.x), oy = args.row0 + int(gl_GlobalInvocationID.y);
    int blocks = (g.Cout + TT_DIRECT_COB - 1) / TT_DIRECT_COB;
    int n = int(gl_GlobalInvocationID.z) / blocks;
    int co0 = int(gl_GlobalInvocationID.z) % blocks * TT_DIRECT_COB;
    int tile_w = (tw - 1) * g.SW + (g.KW - 1) * g.DW + 1;
    int tile_h = (th - 1) * g.SH + (g.KH - 1) * g.DH + 1;
    int y0 = (args.row0 + int(gl_WorkGroupID.y) * th) * g.SH - g.PH;
    int x0 = int(gl_WorkGroupID.x) * tw * g.SW - g.PW;
    int ktaps = g.KH * g.KW, lid = ly * tw + lx, wg = tw * th;
    int w0 = TT_AT(args.weight_offset, 4);
    float acc[TT_DIRECT_COB];
    for (int j = 0; j < TT_DIRECT_COB; j++) acc[j] = 0.0;
    for (int ci = 0; ci < g.Cin; ci++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        memoryBarrierShared();
        barrier(); /* the last channel's reads are done */
        for (int i = lid; i < tile_h * tile_w; i += wg) {
            int iy = y0 + i / tile_w, ix = x0 + i % tile_w;
            bool inside = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
            tile[i] = inside ? TT_B(inp)[plane + iy * g.W + ix] : 0.0;
        }
        for (int i = lid; i < TT_DIRECT_COB * ktaps; i += wg) {
            int j = i / ktaps;
            wtile[i] = co0 + j < g.Cout ? TT_B(weight)[w0 + ((co0 + j) * g.Cin + ci) * ktaps + i % ktaps]
                                        : 0.0;
        }
        memoryBarrierShared();
        barrier();
        for (int ky = 0; ky < g.KH; ky++)
            for (int kx = 0; kx < g.KW; kx++) {
                float x = tile[(ly * g.SH + ky * g.DH) * tile_w + lx * g.SW + kx * g.DW];
                for (int j = 0; j < TT_DIRECT_COB; j++)
                    acc[j] += x * wtile[j * ktaps + ky * g.KW + kx];
            }
    }
    if (ox >= g.OW || oy >= g.OH || n >= g.N) return;
    for (int j = 0; j < TT_DIRECT_COB && co0 + j < g.Cout; j++) {
        int at = TT_AT(args.out_offset, 4) + ((n * g.Cout + co0 + j) * g.OH + oy) * g.OW + ox;
        float base = args.accumulate != 0 ? TT_B(outp)[at] : 0.0;
        if (args.has_bias != 0) base += TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j];
        TT_B(outp)[at] = base + acc[j];
    }
}
