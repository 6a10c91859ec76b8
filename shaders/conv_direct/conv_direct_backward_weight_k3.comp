/* conv_direct/conv_direct_backward_weight_k3: the first step of the 3x3
 * (stride 1, padding 1, dilation 1) weight gradient: the partial sums of
 * bands (k3w.glsl); conv_direct_weight_bands_sum adds them into dweight
 * (opencl/conv_direct.cl; global (Cout Cin, bands)).  Each work-item holds
 * all nine taps, so a dout vector is loaded once and meets the three
 * input rows around it; rows outside the image are skipped.  The OpenCL
 * kernel has a plain-load path for rows inside the image; here every load
 * is the masked one (the same values, in the same order). */
#version 450
#include "common.glsl"
#include "conv_direct/direct.glsl"
#include "conv_direct/k3w.glsl"

void main()
{
    tt_geometry g = args.g;
    k3w_band band;
    if (!k3w_begin(band)) return;
    for (int n = band.n0; n < band.n1; n++) {
        int plane = TT_AT(args.inp_offset, 4) + (n * g.Cin + band.ci) * g.H * g.W;
        int dplane = TT_AT(args.dout_offset, 4) + (n * g.Cout + band.co) * g.OH * g.OW;
        for (int oy = band.r0; oy < band.r1; oy++) {
            int drow = dplane + oy * g.OW;
            int ky0 = oy == 0 ? 1 : 0, ky1 = oy + 1 >= g.H ? 1 : 2;
            for (int x0 = 0; x0 < g.OW; x0 += 8) {
                float d[8];
                TT_LOAD8(d, dout, drow, x0, g.OW)
                for (int ky = ky0; ky <= ky1; ky++) {
                    int row = plane + (oy - 1 + ky) * g.W; /* input row oy - 1 + ky */
                    for (int kx = 0; kx < 3; kx++) {
                        float x[8];
                        TT_LOAD8(x, inp, row, x0 - 1 + kx, g.W)
                        for (int l = 0; l < 8; l++)
                            k3w_acc[ky][kx][l] = fma(d[l], x[l], k3w_acc[ky][kx][l]);
                    }
                }
            }
        }
    }
    k3w_store(band);
}
