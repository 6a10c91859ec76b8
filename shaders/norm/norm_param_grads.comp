/* norm/norm_param_grads: one work-item per channel c: dweight[c] += sum
 * g xhat, dbias[c] += sum g over the samples, from norm_grad_sums'
 * partials (opencl/norm.cl; arguments dweight, dbias, partial,
 * want_dweight, want_dbias, batch, channels, chunks). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, dbias);
TT_BUFFER(2, float, partial);
layout(push_constant) uniform Args {
    uint dweight_offset; uint dbias_offset; uint partial_offset; int want_dweight;
    int want_dbias; int batch; int channels; int chunks;
} args;

void main()
{
    int c = tt_global_id();
    if (c >= args.channels) return;
    float sum_g = 0.0, sum_gx = 0.0;
    for (int n = 0; n < args.batch; n++) {
        int part = TT_AT(args.partial_offset, 4) + 2 * (n * args.channels + c) * args.chunks;
        for (int k = 0; k < args.chunks; k++) {
            sum_g += TT_B(partial)[part + 2 * k];
            sum_gx += TT_B(partial)[part + 2 * k + 1];
        }
    }
    if (args.want_dweight != 0) TT_B(dweight)[TT_AT(args.dweight_offset, 4) + c] += sum_gx;
    if (args.want_dbias != 0) TT_B(dbias)[TT_AT(args.dbias_offset, 4) + c] += sum_g;
}
