/* conv_depthwise/conv_depthwise_backward_weight: dweight[c, 0, t] += sum
 * over the output pixels [p0, p1) of every image taken as one run of
 * dout[n, c, oy, ox] inp[n, c, oy sH - pH + ky dH, ox sW - pW + kx dW] for
 * the taps t = ky kW + kx in [tap0, tap0 + TAPS) (opencl/conv_depthwise.cl;
 * arguments dweight, dout, inp, geometry, p0, p1).  One work-group of WG
 * per channel (dimension 0) and tap chunk (dimension 1); its invocations
 * take every WG-th pixel, then reduce in shared memory in a fixed tree (WG
 * / 2, WG / 4 .. 1, as the OpenCL kernel): no atomics.  Control flow
 * uniform across the group: clamped addresses, masked values, every
 * barrier reached by all. */
#version 450
#include "common.glsl"
#include "conv_depthwise/depthwise.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint dweight_offset; uint dout_offset; uint inp_offset; tt_geometry g; int p0; int p1;
} args;
shared float partial[TT_DW_TAPS * TT_DW_WG];

void main()
{
    tt_geometry g = args.g;
    int lid = int(gl_LocalInvocationID.x), c = int(gl_WorkGroupID.x);
    int ktaps = g.KH * g.KW, tap0 = int(gl_WorkGroupID.y) * TT_DW_TAPS;
    int plane_out = g.OH * g.OW;
    float acc[TT_DW_TAPS];
    for (int t = 0; t < TT_DW_TAPS; t++) acc[t] = 0.0;
    /* the pixel's image, row and column step by WG in that mixed radix
     * (no division a pixel) */
    int first = args.p0 + lid, step_n = TT_DW_WG / plane_out;
    int step_oy = TT_DW_WG % plane_out / g.OW, step_ox = TT_DW_WG % g.OW;
    int n = first / plane_out, oy = first % plane_out / g.OW, ox = first % g.OW;
    for (int p = first; p < args.p1; p += TT_DW_WG) {
        float d = TT_B(dout)[TT_AT(args.dout_offset, 4) + (n * g.Cout + c) * plane_out +
                             oy * g.OW + ox];
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + c) * g.H * g.W;
        int ky = tap0 / g.KW, kx = tap0 % g.KW; /* taps past the kernel: computed, never stored */
        for (int t = 0; t < TT_DW_TAPS; t++) {
            int iy = oy * g.SH - g.PH + min(ky, g.KH - 1) * g.DH;
            int ix = ox * g.SW - g.PW + kx * g.DW;
            if (++kx == g.KW) {
                kx = 0;
                ky++;
            }
            float v = TT_B(inp)[plane + clamp(iy, 0, g.H - 1) * g.W + clamp(ix, 0, g.W - 1)];
            acc[t] = fma(d, iy >= 0 && iy < g.H && ix >= 0 && ix < g.W ? v : 0.0, acc[t]);
        }
        ox += step_ox;
        int carry_x = ox >= g.OW ? 1 : 0;
        ox -= carry_x * g.OW;
        oy += step_oy + carry_x;
        int carry_y = oy >= g.OH ? 1 : 0;
        oy -= carry_y * g.OH;
        n += step_n + carry_y;
    }
    for (int t = 0; t < TT_DW_TAPS; t++) partial[t * TT_DW_WG + lid] = acc[t];
    memoryBarrierShared();
    barrier();
    /* invocations past the run hold zeros: the tree starts above the last
     * one that summed any (uniform) */
    int top = TT_DW_WG;
    while (top / 2 >= args.p1 - args.p0 && top > 1) top /= 2;
    for (int step = top / 2; step > 0; step /= 2) {
        if (lid < step)
            for (int t = 0; t < TT_DW_TAPS; t++)
                partial[t * TT_DW_WG + lid] += partial[t * TT_DW_WG + lid + step];
        memoryBarrierShared();
        barrier();
    }
    for (int t = lid; t < TT_DW_TAPS; t += TT_DW_WG)
        if (tap0 + t < ktaps)
            TT_B(dweight)[TT_AT(args.dweight_offset, 4) + c * ktaps + tap0 + t] +=
                partial[t * TT_DW_WG];
}
