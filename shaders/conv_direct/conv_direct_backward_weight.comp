/* conv_direct/conv_direct_backward_weight: dweight[co, ci, t] += sum over
 * n, oy, ox of dout[n, co, oy, ox] inp[n, ci, oy sH - pH + ky dH, ox sW -
 * pW + kx dW] for the taps t = ky kW + kx in [tap0, tap0 + TAPS) and WCOB
 * output channels (opencl/conv_direct.cl; arguments dweight, dout, inp,
 * geometry, row0, rows: the output rows [row0, row0 + rows) of every
 * image).  One work-group of WG per ci (dimension 0), tap chunk
 * (dimension 1) and output-channel block (dimension 2: a grid of blocks
 * times Cin in one dimension passed Vulkan's 65535 groups at 512 x 512
 * channels); its invocations run along the pixels of the rows of every image
 * as one run, then reduce in shared memory (a tree of WG / 2, WG / 4 ..
 * 1, as the OpenCL kernel).  Control flow uniform across the group:
 * clamped addresses, masked values, every barrier reached by all. */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint dweight_offset; uint dout_offset; uint inp_offset; tt_geometry g; int row0; int rows;
} args;
shared float partial[TT_DIRECT_WCOB * TT_DIRECT_TAPS * TT_DIRECT_WG];

void main()
{
    tt_geometry g = args.g;
    int lid = int(gl_LocalInvocationID.x);
    int co0 = int(gl_WorkGroupID.z) * TT_DIRECT_WCOB, ci = int(gl_WorkGroupID.x);
    int ktaps = g.KH * g.KW, tap0 = int(gl_WorkGroupID.y) * TT_DIRECT_TAPS;
    int ky0 = tap0 / g.KW, kx0 = tap0 % g.KW;
    int last = min(TT_DIRECT_WCOB, g.Cout - co0) - 1; /* uniform */
    float acc[TT_DIRECT_WCOB][TT_DIRECT_TAPS];
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        for (int t = 0; t < TT_DIRECT_TAPS; t++) acc[j][t] = 0.0;
    /* the invocations walk the pixels of the rows of every image as one
     * run, so that small planes and batches still use every invocation */
    int per_image = (min(g.OH, args.row0 + args.rows) - args.row0) * g.OW, pixels = g.N * per_image;
    for (int p0 = 0; p0 < pixels; p0 += TT_DIRECT_WG) {
        int p = min(p0 + lid, pixels - 1), n = p / per_image, q = p % per_image;
        int oy = args.row0 + q / g.OW, ox = q % g.OW;
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + ci) * g.H * g.W;
        int dplane = TT_AT(args.dout_offset, 4) + ((n * g.Cout + co0) * g.OH + args.row0) * g.OW;
        float d[TT_DIRECT_WCOB];
        for (int j = 0; j < TT_DIRECT_WCOB; j++) {
            float dv = TT_B(dout)[dplane + min(j, last) * g.OH * g.OW + q];
            d[j] = p0 + lid < pixels ? dv : 0.0;
        }
        int ky = ky0, kx = kx0; /* taps past the kernel: computed, never stored */
        for (int t = 0; t < TT_DIRECT_TAPS; t++) {
            int iy = oy * g.SH - g.PH + min(ky, g.KH - 1) * g.DH;
            int ix = ox * g.SW - g.PW + kx * g.DW;
            if (++kx == g.KW) {
                kx = 0;
                ky++;
            }
            float v = TT_B(inp)[plane + clamp(iy, 0, g.H - 1) * g.W + clamp(ix, 0, g.W - 1)];
            float x = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W ? v : 0.0;
            for (int j = 0; j < TT_DIRECT_WCOB; j++) acc[j][t] = fma(d[j], x, acc[j][t]);
        }
    }
    for (int j = 0; j < TT_DIRECT_WCOB; j++)
        for (int t = 0; t < TT_DIRECT_TAPS; t++)
            partial[(j * TT_DIRECT_TAPS + t) * TT_DIRECT_WG + lid] = acc[j][t];
    memoryBarrierShared();
    barrier();
    /* invocations past the pixels hold zeros: the tree starts above the last
     * one that summed any (uniform) */
    int top = TT_DIRECT_WG;
    while (top / 2 >= pixels && top > 1) top /= 2;
    for (int step = top / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int i = 0; i < TT_DIRECT_WCOB * TT_DIRECT_TAPS; i++)
                partial[i * TT_DIRECT_WG + lid] += partial[i * TT_DIRECT_WG + lid + step];
        memoryBarrierShared();
        barrier();
    }
    for (int i = lid; i < TT_DIRECT_WCOB * TT_DIRECT_TAPS; i += TT_DIRECT_WG) {
        int j = i / TT_DIRECT_TAPS, t = i % TT_DIRECT_TAPS;
        if (j <= last && tap0 + t < ktaps)
            TT_B(dweight)[TT_AT(args.dweight_offset, 4) + ((co0 + j) * g.Cin + ci) * ktaps + tap0 + t] +=
                partial[i * TT_DIRECT_WG];
    }
}
