/* add/add_backward: g = relu ? (out > 0 ? dout : 0) : dout; da += g (or
 * = g when not accumulate_da), db likewise; absent gradients untouched
 * (opencl/add.cl; arguments da, db, dout, out, has_da, accumulate_da,
 * has_db, accumulate_db, relu, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, da);
TT_BUFFER(1, float, db);
TT_BUFFER(2, float, dout);
TT_BUFFER(3, float, outp);
layout(push_constant) uniform Args {
    uint da_offset; uint db_offset; uint dout_offset; uint out_offset;
    int has_da; int accumulate_da; int has_db; int accumulate_db; int relu; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i];
    if (args.relu != 0 && !(TT_B(outp)[TT_AT(args.out_offset, 4) + i] > 0.0)) g = 0.0;
    if (args.has_da != 0) {
        int id = TT_AT(args.da_offset, 4) + i;
        precise float sum = args.accumulate_da != 0 ? TT_B(da)[id] + g : g;
        TT_B(da)[id] = sum;
    }
    if (args.has_db != 0) {
        int id = TT_AT(args.db_offset, 4) + i;
        precise float sum = args.accumulate_db != 0 ? TT_B(db)[id] + g : g;
        TT_B(db)[id] = sum;
    }
}
