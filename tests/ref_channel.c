/* Double-precision references for global average pooling and the channel
 * multiply (see ref_channel.h). */
#include "ref_channel.h"

void ref_global_avg_pool_forward(double *y, const double *x, int planes, int plane)
{
    for (int p = 0; p < planes; p++) {
        double sum = 0;
        for (int i = 0; i < plane; i++) sum += x[(size_t)p * plane + i];
        y[p] = sum / plane;
    }
}

void ref_global_avg_pool_backward(double *dx, const double *dy, int planes, int plane)
{
    for (int p = 0; p < planes; p++)
        for (int i = 0; i < plane; i++) dx[(size_t)p * plane + i] += dy[p] / plane;
}

void ref_channel_mul_forward(double *y, const double *x, const double *s, int planes,
                             int plane)
{
    for (int p = 0; p < planes; p++)
        for (int i = 0; i < plane; i++) {
            size_t at = (size_t)p * plane + i;
            y[at] = x[at] * s[p];
        }
}

void ref_channel_mul_backward(double *dx, double *ds, const double *dy, const double *x,
                              const double *s, int planes, int plane)
{
    for (int p = 0; p < planes; p++) {
        double sum = 0;
        for (int i = 0; i < plane; i++) {
            size_t at = (size_t)p * plane + i;
            if (dx) dx[at] += dy[at] * s[p];
            sum += dy[at] * x[at];
        }
        if (ds) ds[p] += sum;
    }
}
