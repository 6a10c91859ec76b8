/* Double-precision references for activations, pooling, upsampling and
 * concatenation (see ref_act.h). */
#include "ref_act.h"

#include <math.h>

void ref_relu_forward(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
}

void ref_relu_backward(double *dx, const double *dy, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0) dx[i] += dy[i];
}

void ref_leaky_relu_forward(double *y, const double *x, double slope, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : slope * x[i];
}

void ref_leaky_relu_backward(double *dx, const double *dy, const double *x, double slope,
                             size_t n)
{
    for (size_t i = 0; i < n; i++) dx[i] += x[i] > 0 ? dy[i] : slope * dy[i];
}

void ref_sigmoid_forward(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = 1 / (1 + exp(-x[i]));
}

void ref_sigmoid_backward(double *dx, const double *dy, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double s = 1 / (1 + exp(-x[i]));
        dx[i] += dy[i] * s * (1 - s);
    }
}

/* exp(-x) for x << 0 overflows double only past x = -709: the inputs tested
 * stay far from it, so the textbook form serves as the reference. */
void ref_silu_forward(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] / (1 + exp(-x[i]));
}

void ref_silu_backward(double *dx, const double *dy, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double s = 1 / (1 + exp(-x[i]));
        dx[i] += dy[i] * s * (1 + x[i] * (1 - s));
    }
}

/* Whether row y, column x lies inside the image (not in the padding). */
static int pool_inside(const tt_pool2d_desc *d, int y, int x)
{
    return y >= 0 && y < d->height && x >= 0 && x < d->width;
}

void ref_max_pool2d_forward(double *y, int *argmax, const double *x, const tt_pool2d_desc *d)
{
    int oh = tt_pool2d_out_h(d), ow = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const double *xp = x + (size_t)p * d->height * d->width;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int best_at = -1;
                for (int ky = 0; ky < d->kernel_h; ky++)
                    for (int kx = 0; kx < d->kernel_w; kx++) {
                        int iy = oy * d->stride_h - d->pad_h + ky;
                        int ix = ox * d->stride_w - d->pad_w + kx;
                        if (!pool_inside(d, iy, ix)) continue; /* padding never wins */
                        int at = iy * d->width + ix;
                        if (best_at < 0 || xp[at] > xp[best_at]) best_at = at;
                    }
                size_t o = ((size_t)p * oh + oy) * ow + ox;
                y[o] = xp[best_at];
                if (argmax) argmax[o] = best_at;
            }
    }
}

void ref_max_pool2d_backward(double *dx, const double *dy, const int *argmax,
                             const tt_pool2d_desc *d)
{
    int oh = tt_pool2d_out_h(d), ow = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++)
        for (int o = 0; o < oh * ow; o++) {
            size_t at = (size_t)p * oh * ow + o;
            dx[(size_t)p * d->height * d->width + argmax[at]] += dy[at];
        }
}

void ref_avg_pool2d_forward(double *y, const double *x, const tt_pool2d_desc *d)
{
    int oh = tt_pool2d_out_h(d), ow = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const double *xp = x + (size_t)p * d->height * d->width;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                double sum = 0; /* padding adds zeros but counts in the divisor */
                for (int ky = 0; ky < d->kernel_h; ky++)
                    for (int kx = 0; kx < d->kernel_w; kx++) {
                        int iy = oy * d->stride_h - d->pad_h + ky;
                        int ix = ox * d->stride_w - d->pad_w + kx;
                        if (pool_inside(d, iy, ix)) sum += xp[iy * d->width + ix];
                    }
                y[((size_t)p * oh + oy) * ow + ox] = sum / (d->kernel_h * d->kernel_w);
            }
    }
}

void ref_avg_pool2d_backward(double *dx, const double *dy, const tt_pool2d_desc *d)
{
    int oh = tt_pool2d_out_h(d), ow = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    double share = 1.0 / (d->kernel_h * d->kernel_w);
    for (int p = 0; p < planes; p++) {
        double *dxp = dx + (size_t)p * d->height * d->width;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                double g = dy[((size_t)p * oh + oy) * ow + ox] * share;
                for (int ky = 0; ky < d->kernel_h; ky++)
                    for (int kx = 0; kx < d->kernel_w; kx++) {
                        int iy = oy * d->stride_h - d->pad_h + ky;
                        int ix = ox * d->stride_w - d->pad_w + kx;
                        if (pool_inside(d, iy, ix)) dxp[iy * d->width + ix] += g;
                    }
            }
    }
}

/* PyTorch's area_pixel_compute_source_index (align_corners=False, scale 1/2)
 * and the two taps of upsample_bilinear2d. */
static void taps(int dst, int in, int *i0, int *i1, double *w0, double *w1)
{
    double src = (dst + 0.5) / 2.0 - 0.5;
    if (src < 0) src = 0;
    *i0 = (int)floor(src);
    *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
    *w1 = src - *i0;
    *w0 = 1 - *w1;
}

void ref_upsample_bilinear2x_forward(double *y, const double *x, const tt_upsample_desc *d)
{
    int h = d->height, w = d->width, planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const double *xp = x + (size_t)p * h * w;
        double *yp = y + (size_t)p * 4 * h * w;
        for (int oy = 0; oy < 2 * h; oy++)
            for (int ox = 0; ox < 2 * w; ox++) {
                int y0, y1, x0, x1;
                double a0, a1, b0, b1;
                taps(oy, h, &y0, &y1, &a0, &a1);
                taps(ox, w, &x0, &x1, &b0, &b1);
                yp[oy * 2 * w + ox] = a0 * (b0 * xp[y0 * w + x0] + b1 * xp[y0 * w + x1]) +
                                      a1 * (b0 * xp[y1 * w + x0] + b1 * xp[y1 * w + x1]);
            }
    }
}

void ref_upsample_bilinear2x_backward(double *dx, const double *dy, const tt_upsample_desc *d)
{
    int h = d->height, w = d->width, planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        double *dxp = dx + (size_t)p * h * w;
        const double *dyp = dy + (size_t)p * 4 * h * w;
        for (int oy = 0; oy < 2 * h; oy++)
            for (int ox = 0; ox < 2 * w; ox++) {
                int y0, y1, x0, x1;
                double a0, a1, b0, b1;
                taps(oy, h, &y0, &y1, &a0, &a1);
                taps(ox, w, &x0, &x1, &b0, &b1);
                double g = dyp[oy * 2 * w + ox];
                dxp[y0 * w + x0] += a0 * b0 * g;
                dxp[y0 * w + x1] += a0 * b1 * g;
                dxp[y1 * w + x0] += a1 * b0 * g;
                dxp[y1 * w + x1] += a1 * b1 * g;
            }
    }
}

/* Input-major: each input element writes its four outputs (the kernel
 * gathers per output). */
void ref_upsample_nearest2x_forward(double *y, const double *x, const tt_upsample_desc *d)
{
    int h = d->height, w = d->width, planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const double *xp = x + (size_t)p * h * w;
        double *yp = y + (size_t)p * 4 * h * w;
        for (int iy = 0; iy < h; iy++)
            for (int ix = 0; ix < w; ix++)
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++)
                        yp[(2 * iy + dy) * 2 * w + 2 * ix + dx] = xp[iy * w + ix];
    }
}

/* Output-major scatter (the kernel gathers per input). */
void ref_upsample_nearest2x_backward(double *dx, const double *dy, const tt_upsample_desc *d)
{
    int h = d->height, w = d->width, planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        double *dxp = dx + (size_t)p * h * w;
        const double *dyp = dy + (size_t)p * 4 * h * w;
        for (int oy = 0; oy < 2 * h; oy++)
            for (int ox = 0; ox < 2 * w; ox++) dxp[(oy / 2) * w + ox / 2] += dyp[oy * 2 * w + ox];
    }
}

void ref_concat_forward(double *y, const double *a, const double *b, const tt_concat_desc *d)
{
    size_t plane = (size_t)d->height * d->width;
    size_t sa = d->channels_a * plane, sb = d->channels_b * plane;
    for (int n = 0; n < d->batch; n++) {
        for (size_t i = 0; i < sa; i++) y[n * (sa + sb) + i] = a[n * sa + i];
        for (size_t i = 0; i < sb; i++) y[n * (sa + sb) + sa + i] = b[n * sb + i];
    }
}

void ref_concat_backward(double *da, double *db, const double *dy, const tt_concat_desc *d)
{
    size_t plane = (size_t)d->height * d->width;
    size_t sa = d->channels_a * plane, sb = d->channels_b * plane;
    for (int n = 0; n < d->batch; n++) {
        if (da)
            for (size_t i = 0; i < sa; i++) da[n * sa + i] += dy[n * (sa + sb) + i];
        if (db)
            for (size_t i = 0; i < sb; i++) db[n * sb + i] += dy[n * (sa + sb) + sa + i];
    }
}
