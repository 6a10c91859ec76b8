/* Double-precision convolution references; see ref_conv.h. */
#include "ref_conv.h"

static int or_one(int v) { return v ? v : 1; }

int ref_conv2d_out_size(int in, int kernel, int stride, int pad, int dilation)
{
    return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

int ref_conv_transpose2d_out_size(int in, int kernel, int stride, int pad, int output_pad,
                                  int dilation)
{
    return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_pad + 1;
}

void ref_conv2d_forward(double *out, const double *inp, const double *weight,
                        const double *bias, const tt_conv2d_desc *d)
{
    const int groups = or_one(d->groups), dh = or_one(d->dilation_h), dw = or_one(d->dilation_w);
    const int cin_g = d->in_channels / groups, cout_g = d->out_channels / groups;
    const int oh = ref_conv2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h, dh);
    const int ow = ref_conv2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w, dw);
    for (int n = 0; n < d->batch; n++)
        for (int co = 0; co < d->out_channels; co++) {
            const int g = co / cout_g;
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++) {
                    double sum = bias ? bias[co] : 0.0;
                    for (int c = 0; c < cin_g; c++) {
                        const int ci = g * cin_g + c;
                        for (int ky = 0; ky < d->kernel_h; ky++) {
                            const int iy = y * d->stride_h - d->pad_h + ky * dh;
                            if (iy < 0 || iy >= d->in_h) continue;
                            for (int kx = 0; kx < d->kernel_w; kx++) {
                                const int ix = x * d->stride_w - d->pad_w + kx * dw;
                                if (ix < 0 || ix >= d->in_w) continue;
                                sum += inp[((size_t)(n * d->in_channels + ci) * d->in_h + iy) *
                                               d->in_w + ix] *
                                       weight[((size_t)(co * cin_g + c) * d->kernel_h + ky) *
                                                  d->kernel_w + kx];
                            }
                        }
                    }
                    out[((size_t)(n * d->out_channels + co) * oh + y) * ow + x] = sum;
                }
        }
}

void ref_conv2d_backward(double *dinp, double *dweight, const double *inp, const double *weight,
                         const double *dout, const tt_conv2d_desc *d)
{
    const int groups = or_one(d->groups);
    const int dh = or_one(d->dilation_h), dw = or_one(d->dilation_w);
    const int cin_g = d->in_channels / groups, cout_g = d->out_channels / groups;
    const int oh = ref_conv2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h, dh);
    const int ow = ref_conv2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w, dw);
    for (int n = 0; n < d->batch; n++)
        for (int co = 0; co < d->out_channels; co++)
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++) {
                    const double g = dout[((size_t)(n * d->out_channels + co) * oh + y) * ow + x];
                    for (int c = 0; c < cin_g; c++) {
                        const int ci = co / cout_g * cin_g + c;
                        for (int ky = 0; ky < d->kernel_h; ky++) {
                            const int iy = y * d->stride_h - d->pad_h + ky * dh;
                            if (iy < 0 || iy >= d->in_h) continue;
                            for (int kx = 0; kx < d->kernel_w; kx++) {
                                const int ix = x * d->stride_w - d->pad_w + kx * dw;
                                if (ix < 0 || ix >= d->in_w) continue;
                                const size_t at =
                                    ((size_t)(n * d->in_channels + ci) * d->in_h + iy) * d->in_w +
                                    ix;
                                const size_t wat =
                                    ((size_t)(co * cin_g + c) * d->kernel_h + ky) * d->kernel_w +
                                    kx;
                                if (dinp) dinp[at] += g * weight[wat];
                                if (dweight) dweight[wat] += g * inp[at];
                            }
                        }
                    }
                }
}

void ref_conv_transpose2d_forward(double *out, const double *inp, const double *weight,
                                  const double *bias, const tt_conv_transpose2d_desc *d)
{
    const int groups = or_one(d->groups), dh = or_one(d->dilation_h), dw = or_one(d->dilation_w);
    const int cin_g = d->in_channels / groups, cout_g = d->out_channels / groups;
    const int oh = ref_conv_transpose2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h,
                                                 d->output_pad_h, dh);
    const int ow = ref_conv_transpose2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w,
                                                 d->output_pad_w, dw);
    for (int n = 0; n < d->batch; n++)
        for (int co = 0; co < d->out_channels; co++)
            for (int i = 0; i < oh * ow; i++)
                out[(size_t)(n * d->out_channels + co) * oh * ow + i] = bias ? bias[co] : 0.0;
    for (int n = 0; n < d->batch; n++)
        for (int ci = 0; ci < d->in_channels; ci++) {
            const int g = ci / cin_g;
            for (int y = 0; y < d->in_h; y++)
                for (int x = 0; x < d->in_w; x++) {
                    const double v =
                        inp[((size_t)(n * d->in_channels + ci) * d->in_h + y) * d->in_w + x];
                    for (int c = 0; c < cout_g; c++) {
                        const int co = g * cout_g + c;
                        for (int ky = 0; ky < d->kernel_h; ky++) {
                            const int oy = y * d->stride_h - d->pad_h + ky * dh;
                            if (oy < 0 || oy >= oh) continue;
                            for (int kx = 0; kx < d->kernel_w; kx++) {
                                const int ox = x * d->stride_w - d->pad_w + kx * dw;
                                if (ox < 0 || ox >= ow) continue;
                                out[((size_t)(n * d->out_channels + co) * oh + oy) * ow + ox] +=
                                    v * weight[((size_t)(ci * cout_g + c) * d->kernel_h + ky) *
                                                   d->kernel_w + kx];
                            }
                        }
                    }
                }
        }
}
