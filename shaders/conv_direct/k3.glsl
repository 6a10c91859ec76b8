/* Shared by the three 3x3 forward shaders (conv_direct_forward_k3, _staged,
 * _k3p; opencl/conv_direct.cl's K3_ACCUMULATORS, K3_ROW and K3_STORE): the
 * UNet's 3x3, stride 1, padding 1, dilation 1 convolution, each
 * invocation 8 columns of ROWS rows for K3_COB output channels.  Include
 * after direct.glsl, TT_FORWARD_BUFFERS and TT_FORWARD_ARGS. */

/* The accumulators (float[8] for OpenCL's float8) and each channel's first
 * weight: the last real channel again for channels past Cout, which are
 * never stored. */
float k3_acc[TT_DIRECT_K3_COB][TT_DIRECT_ROWS][8];
int k3_weight[TT_DIRECT_K3_COB];
int k3_last;

void k3_begin(int co0, int Cout, int Cin)
{
    k3_last = clamp(Cout - co0, 1, TT_DIRECT_K3_COB) - 1;
    for (int j = 0; j < TT_DIRECT_K3_COB; j++) {
        for (int r = 0; r < TT_DIRECT_ROWS; r++)
            for (int l = 0; l < 8; l++) k3_acc[j][r][l] = 0.0;
        int co = min(co0 + min(j, k3_last), Cout - 1);
        k3_weight[j] = TT_AT(args.weight_offset, 4) + co * Cin * 9;
    }
}

/* acc += input row i (of y0 - 1 .. y0 + ROWS) of channel ci, given as its
 * three shifted vectors x[kx] (columns from x0 - 1 + kx), times the
 * weights of every output row and channel it meets. */
void k3_row(float x[3][8], int ci, int i)
{
    for (int r = 0; r < TT_DIRECT_ROWS; r++) {
        int ky = i - r;
        if (ky < 0 || ky > 2) continue;
        for (int j = 0; j < TT_DIRECT_K3_COB; j++) {
            int w = k3_weight[j] + ci * 9 + ky * 3;
            for (int kx = 0; kx < 3; kx++) {
                float wk = TT_B(weight)[w + kx];
                for (int l = 0; l < 8; l++) k3_acc[j][r][l] = fma(x[kx][l], wk, k3_acc[j][r][l]);
            }
        }
    }
}

/* out (+)= acc + bias for image n, the rows and channels inside. */
void k3_store(int n, int co0, int x0, int y0)
{
    tt_geometry g = args.g;
    for (int j = 0; j <= k3_last; j++) {
        float b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + co0 + j] : 0.0;
        for (int r = 0; r < TT_DIRECT_ROWS && y0 + r < g.OH; r++) {
            int row = TT_AT(args.out_offset, 4) + ((n * g.Cout + co0 + j) * g.OH + y0 + r) * g.OW;
            float v[8];
            for (int l = 0; l < 8; l++) v[l] = k3_acc[j][r][l] + b;
            TT_STORE8(outp, row, x0, g.OW, v, args.accumulate != 0)
        }
    }
}
