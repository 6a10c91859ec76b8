/* Shared by both 3x3 weight-gradient shaders (conv_direct_backward_weight_k3
 * and _k3p; opencl/conv_direct.cl's K3W_BAND and K3W_STORE): the arguments
 * partial, dout, an input, images_per_band, bands_per_image, band_rows,
 * geometry; work-item (pair, b) sums the nine taps of the pair's channels
 * (co, ci) over band b (images n0 .. n1 - 1, output rows r0 .. r1 - 1)
 * into partial[(b pairs + pair) 9 + tap].  Include after direct.glsl. */

TT_BUFFER(0, float, partial);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint partial_offset; uint dout_offset; uint inp_offset; int images_per_band;
    int bands_per_image; int band_rows; tt_geometry g;
} args;

/* the nine taps' accumulators (float[8] for OpenCL's float8) */
float k3w_acc[3][3][8];

/* One band: its images and rows. */
struct k3w_band {
    int pair, b, ci, co, n0, n1, r0, r1;
};

/* The band of this work-item; false for work-items past the pairs. */
bool k3w_begin(out k3w_band band)
{
    tt_geometry g = args.g;
    band.pair = int(gl_GlobalInvocationID.x);
    band.b = int(gl_GlobalInvocationID.y);
    if (band.pair >= g.Cout * g.Cin) return false;
    band.ci = band.pair % g.Cin;
    band.co = band.pair / g.Cin;
    band.n0 = band.b / args.bands_per_image * args.images_per_band;
    band.n1 = min(g.N, band.n0 + args.images_per_band);
    band.r0 = band.b % args.bands_per_image * args.band_rows;
    band.r1 = min(g.OH, band.r0 + args.band_rows);
    for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++)
            for (int l = 0; l < 8; l++) k3w_acc[ky][kx][l] = 0.0;
    return true;
}

/* The nine sums into partial. */
void k3w_store(k3w_band band)
{
    int pairs = args.g.Cout * args.g.Cin;
    int at = TT_AT(args.partial_offset, 4) + (band.b * pairs + band.pair) * 9;
    for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) TT_B(partial)[at + ky * 3 + kx] = tt_hsum8(k3w_acc[ky][kx]);
}
