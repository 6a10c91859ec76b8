/* Bilinear upsampling by an integer factor, align_corners False and True:
 * double and float-exact references (see ref_resize.h). */
#include "ref_resize.h"

#include <math.h>
#include <stddef.h>

/* ref_resize_taps or ref_resize_aligned_taps */
typedef void taps_fn(int dst, int in_size, int factor, int *i0, int *i1, float *w0, float *w1);

void ref_resize_taps(int dst, int in_size, int factor, int *i0, int *i1, float *w0, float *w1)
{
    /* PyTorch's area_pixel_compute_source_index with scale 1 / factor;
     * C11 without extensions does not contract, so each step rounds */
    float scale = (float)(1.0 / factor);
    float shifted = (float)dst + 0.5f;
    float scaled = scale * shifted;
    float src = scaled - 0.5f;
    if (src < 0.0f) src = 0.0f;
    int lo = (int)src;
    *i0 = lo;
    *i1 = lo < in_size - 1 ? lo + 1 : lo;
    *w1 = src - (float)lo;
    *w0 = 1.0f - *w1;
}

static void forward(double *y, const double *x, const tt_upsample_desc *d, int factor,
                    taps_fn *taps)
{
    int h = d->height, w = d->width, oh = factor * h, ow = factor * w;
    int planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const double *xp = x + (size_t)p * h * w;
        double *yp = y + (size_t)p * oh * ow;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int y0, y1, x0, x1;
                float a0, a1, b0, b1;
                taps(oy, h, factor, &y0, &y1, &a0, &a1);
                taps(ox, w, factor, &x0, &x1, &b0, &b1);
                yp[(size_t)oy * ow + ox] =
                    (double)a0 * ((double)b0 * xp[y0 * w + x0] + (double)b1 * xp[y0 * w + x1]) +
                    (double)a1 * ((double)b0 * xp[y1 * w + x0] + (double)b1 * xp[y1 * w + x1]);
            }
    }
}

static void backward(double *dx, const double *dy, const tt_upsample_desc *d, int factor,
                     taps_fn *taps)
{
    int h = d->height, w = d->width, oh = factor * h, ow = factor * w;
    int planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        double *dxp = dx + (size_t)p * h * w;
        const double *dyp = dy + (size_t)p * oh * ow;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int y0, y1, x0, x1;
                float a0, a1, b0, b1;
                taps(oy, h, factor, &y0, &y1, &a0, &a1);
                taps(ox, w, factor, &x0, &x1, &b0, &b1);
                double g = dyp[(size_t)oy * ow + ox];
                dxp[y0 * w + x0] += (double)a0 * b0 * g;
                dxp[y0 * w + x1] += (double)a0 * b1 * g;
                dxp[y1 * w + x0] += (double)a1 * b0 * g;
                dxp[y1 * w + x1] += (double)a1 * b1 * g;
            }
    }
}

static void forward_f32(float *y, const float *x, const tt_upsample_desc *d, int factor,
                        taps_fn *taps)
{
    int h = d->height, w = d->width, oh = factor * h, ow = factor * w;
    int planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++) {
        const float *xp = x + (size_t)p * h * w;
        float *yp = y + (size_t)p * oh * ow;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int y0, y1, x0, x1;
                float hy0, hy1, wx0, wx1;
                taps(oy, h, factor, &y0, &y1, &hy0, &hy1);
                taps(ox, w, factor, &x0, &x1, &wx0, &wx1);
                float top = fmaf(wx0, xp[y0 * w + x0], wx1 * xp[y0 * w + x1]);
                float bottom = fmaf(wx0, xp[y1 * w + x0], wx1 * xp[y1 * w + x1]);
                yp[(size_t)oy * ow + ox] = fmaf(hy0, top, hy1 * bottom);
            }
    }
}

/* The weight with which output index dst reads input index i (0: it does
 * not), as the kernels compute it. */
static float weight(int dst, int i, int in_size, int factor, taps_fn *taps)
{
    int i0, i1;
    float w0, w1;
    taps(dst, in_size, factor, &i0, &i1, &w0, &w1);
    return (i0 == i ? w0 : 0.0f) + (i1 == i ? w1 : 0.0f);
}

static void backward_f32(float *dx, const float *dy, const tt_upsample_desc *d, int factor,
                         taps_fn *taps)
{
    int h = d->height, w = d->width, oh = factor * h, ow = factor * w;
    int planes = d->batch * d->channels;
    for (int p = 0; p < planes; p++)
        for (int iy = 0; iy < h; iy++)
            for (int ix = 0; ix < w; ix++) {
                const float *g = dy + (size_t)p * oh * ow;
                float sum = 0.0f;
                for (int oy = 0; oy < oh; oy++) {
                    float wy = weight(oy, iy, h, factor, taps);
                    if (wy == 0.0f) continue;
                    float row = 0.0f;
                    for (int ox = 0; ox < ow; ox++) {
                        float wx = weight(ox, ix, w, factor, taps);
                        if (wx != 0.0f) row = fmaf(wx, g[(size_t)oy * ow + ox], row);
                    }
                    sum = fmaf(wy, row, sum);
                }
                float *at = dx + (size_t)p * h * w + (size_t)iy * w + ix;
                *at = *at + sum;
            }
}

void ref_resize_aligned_taps(int dst, int in_size, int factor, int *i0, int *i1, float *w0,
                             float *w1)
{
    /* PyTorch's area_pixel_compute_scale and _source_index for
     * align_corners = True in float: (I - 1) / (O - 1) rounded once, times
     * dst rounded once; the taps guarded as PyTorch's guard_index_and_lambda
     * (src never passes I - 1 by more than a rounding) */
    int out_size = factor * in_size;
    float scale = out_size > 1 ? (float)(in_size - 1) / (float)(out_size - 1) : 0.0f;
    float src = scale * (float)dst;
    int lo = (int)src;
    if (lo > in_size - 1) lo = in_size - 1;
    *i0 = lo;
    *i1 = lo < in_size - 1 ? lo + 1 : lo;
    *w1 = src - (float)lo;
    *w0 = 1.0f - *w1;
}

void ref_resize_bilinear_forward(double *y, const double *x, const tt_upsample_desc *d,
                                 int factor)
{
    forward(y, x, d, factor, ref_resize_taps);
}

void ref_resize_bilinear_backward(double *dx, const double *dy, const tt_upsample_desc *d,
                                  int factor)
{
    backward(dx, dy, d, factor, ref_resize_taps);
}

void ref_resize_bilinear_forward_f32(float *y, const float *x, const tt_upsample_desc *d,
                                     int factor)
{
    forward_f32(y, x, d, factor, ref_resize_taps);
}

void ref_resize_bilinear_backward_f32(float *dx, const float *dy, const tt_upsample_desc *d,
                                      int factor)
{
    backward_f32(dx, dy, d, factor, ref_resize_taps);
}

void ref_resize_aligned_forward(double *y, const double *x, const tt_upsample_desc *d,
                                int factor)
{
    forward(y, x, d, factor, ref_resize_aligned_taps);
}

void ref_resize_aligned_backward(double *dx, const double *dy, const tt_upsample_desc *d,
                                 int factor)
{
    backward(dx, dy, d, factor, ref_resize_aligned_taps);
}

void ref_resize_aligned_forward_f32(float *y, const float *x, const tt_upsample_desc *d,
                                    int factor)
{
    forward_f32(y, x, d, factor, ref_resize_aligned_taps);
}

void ref_resize_aligned_backward_f32(float *dx, const float *dy, const tt_upsample_desc *d,
                                     int factor)
{
    backward_f32(dx, dy, d, factor, ref_resize_aligned_taps);
}
