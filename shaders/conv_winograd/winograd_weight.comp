/* conv_winograd/winograd_weight: U[e][co][ci] = (G g Gᵀ)[e] of the 3x3
 * kernel g, F(2x2, 3x3) (opencl/conv_winograd.cl; arguments u, weight,
 * cout, cin, flip; global (Cin, Cout)).  flip = 0: g = weight[co, ci]
 * (weight (Cout, Cin, 3, 3)); flip = 1, backward data as a forward:
 * g[a][b] = weight[ci, co, 2 - a, 2 - b] (weight (Cin, Cout, 3, 3) of this
 * product's roles). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, u);
TT_BUFFER(1, float, weight);
layout(push_constant) uniform Args {
    uint u_offset; uint weight_offset; int cout; int cin; int flip;
} args;

void main()
{
    int ci = int(gl_GlobalInvocationID.x), co = int(gl_GlobalInvocationID.y);
    int cout = args.cout, cin = args.cin;
    if (ci >= cin || co >= cout) return;
    int base = TT_AT(args.weight_offset, 4);
    float g[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            g[a][b] = args.flip != 0 ? TT_B(weight)[base + (ci * cout + co) * 9 + (2 - a) * 3 + (2 - b)]
                                     : TT_B(weight)[base + (co * cin + ci) * 9 + a * 3 + b];
    float t[4][3]; /* G g */
    for (int b = 0; b < 3; b++) {
        t[0][b] = g[0][b];
        t[1][b] = 0.5 * (g[0][b] + g[1][b] + g[2][b]);
        t[2][b] = 0.5 * (g[0][b] - g[1][b] + g[2][b]);
        t[3][b] = g[2][b];
    }
    int stride = cout * cin, at = TT_AT(args.u_offset, 4) + co * cin + ci;
    for (int i = 0; i < 4; i++) {
        float r[4]; /* (G g) Gᵀ, row i */
        r[0] = t[i][0];
        r[1] = 0.5 * (t[i][0] + t[i][1] + t[i][2]);
        r[2] = 0.5 * (t[i][0] - t[i][1] + t[i][2]);
        r[3] = t[i][2];
        for (int j = 0; j < 4; j++) TT_B(u)[at + (4 * i + j) * stride] = r[j];
    }
}
