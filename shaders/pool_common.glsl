/*
 * Shared by the max-pooling shaders of shaders/pool/ (opencl/pool.cl).
 * Include it after declaring the storage buffer `inp` (and, with
 * TT_POOL_BACKWARD defined, `dinp`).
 */

/* The first output row (or column) whose window covers row i of the
 * padded input (i = input row + pad). */
int pool_first_out(int i, int window, int stride)
{
    int lo = i - window + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

/* Where the maximum of the window at (y0, x0) of the plane (height x
 * width) starting at inp[x] lies, as the flat index iy * width + ix; best
 * gets its value.  y0, x0 may be negative (padding): only the window's
 * places inside the plane count.  Ties keep the first in row-major order;
 * a NaN wins (max_pool_window). */
int max_pool_window(int x, int height, int width, int y0, int x0, int kernel_h, int kernel_w,
                    out float best)
{
    int ky0 = max(0, -y0), ky1 = min(kernel_h, height - y0);
    int kx0 = max(0, -x0), kx1 = min(kernel_w, width - x0);
    float b = uintBitsToFloat(0xff800000u); /* -infinity */
    int best_at = (y0 + ky0) * width + x0 + kx0;
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++) {
            int at = (y0 + ky) * width + x0 + kx;
            float v = TT_B(inp)[x + at];
            if (v > b || isnan(v)) {
                b = v;
                best_at = at;
            }
        }
    best = b;
    return best_at;
}

#ifdef TT_POOL_BACKWARD
/* Adds g to the winner of the window at (y0, x0) of the plane starting at
 * dinp[d] / inp[x] and 0 to the window's other elements: `winner`, or with
 * winner < 0 the one max_pool_window finds (max_pool_window_backward).
 * The window lies inside the plane (no padding). */
void max_pool_window_backward(int d, int x, int height, int width, int y0, int x0, int kernel_h,
                              int kernel_w, int winner, float g)
{
    float best;
    if (winner < 0) winner = max_pool_window(x, height, width, y0, x0, kernel_h, kernel_w, best);
    for (int ky = 0; ky < kernel_h; ky++)
        for (int kx = 0; kx < kernel_w; kx++) {
            int at = (y0 + ky) * width + x0 + kx;
            precise float sum = TT_B(dinp)[d + at] + (at == winner ? g : 0.0);
            TT_B(dinp)[d + at] = sum;
        }
}
#endif
