/*
 * 2-D pooling over NCHW planes: max (with or without a saved argmax) and
 * average.
 * Floor mode (the host computes out_h, out_w); the generic kernels take
 * pad_h, pad_w (at most half the window, so a window always holds an input
 * element): window (oy, ox) starts at input row oy * stride_h - pad_h,
 * column ox * stride_w - pad_w, and its padded places are skipped (never a
 * maximum; an average still divides by kernel_h * kernel_w, PyTorch's
 * count_include_pad).  The 2x2 w8 and tiles kernels are for pad 0 only.
 * `planes` is N * C; every plane is pooled alike.
 *
 * Forward: one work-item per output element.  Backward: one work-item per
 * output element that adds its gradient to its window's winner; where
 * windows overlap (stride < kernel) the outputs run in phases whose
 * windows do not, so no atomics are needed (OpenCL 1.2 has no float
 * atomics) and each run adds in the same order.  Backward ADDS into dinp.
 */

/* The first output row (or column) whose window covers row i of the
 * padded input (i = input row + pad). */
int pool_first_out(int i, int window, int stride)
{
    int lo = i - window + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

/* Where the maximum of the window at (y0, x0) of plane x (height x width)
 * lies, as the flat index iy * width + ix; *best gets its value.  y0, x0
 * may be negative (padding): only the window's places inside the plane
 * count.  Ties keep the first in row-major order (as PyTorch); a NaN wins;
 * a window of -infinity gives its first place inside the plane.  Every
 * max-pool kernel asks this one function, so a backward that finds the
 * winner again agrees with the forward bit for bit. */
int max_pool_window(__global const float *x, int height, int width, int y0, int x0,
                    int kernel_h, int kernel_w, float *best)
{
    int ky0 = max(0, -y0), ky1 = min(kernel_h, height - y0);
    int kx0 = max(0, -x0), kx1 = min(kernel_w, width - x0);
    float b = -INFINITY;
    int best_at = (y0 + ky0) * width + x0 + kx0;
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++) {
            int at = (y0 + ky) * width + x0 + kx;
            float v = x[at];
            if (v > b || isnan(v)) {
                b = v;
                best_at = at;
            }
        }
    *best = b;
    return best_at;
}

/* out (planes, out_h, out_w) = max over each window of inp (planes, height,
 * width); with keep_argmax, argmax = where it came from inside the plane
 * (without, argmax is not touched: its backward finds the winners again). */
__kernel void max_pool2d_forward(TT_MEM(float, out), TT_MEM(int, argmax), TT_MEM(const float, inp),
                                 const int keep_argmax, const int planes, const int height,
                                 const int width, const int out_h, const int out_w,
                                 const int kernel_h, const int kernel_w, const int stride_h,
                                 const int stride_w, const int pad_h, const int pad_w)
{
    TT_PTR(float, out);
    TT_PTR(int, argmax);
    TT_PTR(const float, inp);
    int o = get_global_id(0);
    if (o >= planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    float best;
    int at = max_pool_window(inp + (size_t)plane * height * width, height, width,
                             oy * stride_h - pad_h, ox * stride_w - pad_w, kernel_h, kernel_w,
                             &best);
    out[o] = best;
    if (keep_argmax) argmax[o] = at;
}

/* One phase of max_pool2d_backward for any windows (overlapping, padded):
 * the outputs (oy, ox) with oy = phase_y (mod phases_y), ox = phase_x
 * (mod phases_x), phases_* = ceil(kernel_* / stride_*), whose windows do
 * not overlap, so each adds dout[o] to its winner (argmax[o] or, with
 * from_input, the one max_pool_window finds again in inp) with no other
 * work-item touching it.  2-D (the phase's columns, planes x its rows);
 * the host runs the phases one after another in row-major order, so every
 * dinp element gets its windows' gradients in the same order every run.
 * Inputs that win no window of the phase are not touched. */
__kernel void max_pool2d_backward_phase(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                        TT_MEM(const int, argmax), TT_MEM(const float, inp),
                                        const int from_input, const int planes,
                                        const int height, const int width, const int out_h,
                                        const int out_w, const int kernel_h, const int kernel_w,
                                        const int stride_h, const int stride_w, const int pad_h,
                                        const int pad_w, const int phase_y, const int phase_x,
                                        const int phases_y, const int phases_x)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const int, argmax);
    TT_PTR(const float, inp);
    int rows = (out_h - phase_y + phases_y - 1) / phases_y; /* of the phase, a plane */
    int ox = phase_x + get_global_id(0) * phases_x, row = get_global_id(1);
    if (ox >= out_w || row >= planes * rows) return;
    int plane = row / rows, oy = phase_y + (row - plane * rows) * phases_y;
    size_t o = ((size_t)plane * out_h + oy) * out_w + ox, first = (size_t)plane * height * width;
    float best;
    int winner = from_input ? max_pool_window(inp + first, height, width, oy * stride_h - pad_h,
                                              ox * stride_w - pad_w, kernel_h, kernel_w, &best)
                            : argmax[o];
    dinp[first + winner] += dout[o];
}

/* Adds g to the winner of the window at (y0, x0) of a plane and 0 to the
 * window's other elements: `winner` (a flat index in the plane, from
 * argmax), or with winner < 0 the one max_pool_window finds again in x.
 * The window lies inside the plane (no padding). */
static void max_pool_window_backward(__global float *d, __global const float *x, int height,
                                     int width, int y0, int x0, int kernel_h, int kernel_w,
                                     int winner, float g)
{
    float best;
    if (winner < 0)
        winner = max_pool_window(x, height, width, y0, x0, kernel_h, kernel_w, &best);
    for (int ky = 0; ky < kernel_h; ky++)
        for (int kx = 0; kx < kernel_w; kx++) {
            int at = (y0 + ky) * width + x0 + kx;
            d[at] += at == winner ? g : 0.0f;
        }
}

/* max_pool2d_backward for windows that do not overlap (stride = kernel,
 * pad 0):
 * one work-item per output o, 2-D (out_w, planes * out_h), adds dout[o] to
 * its window's winner and 0 to the window's other elements (so each
 * winner is found once, not once per element of its window; inputs outside
 * every window are not touched, as there). */
__kernel void max_pool2d_backward_tiles(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                        TT_MEM(const int, argmax), TT_MEM(const float, inp),
                                        const int from_input, const int planes,
                                        const int height, const int width, const int out_h,
                                        const int out_w, const int kernel_h, const int kernel_w)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const int, argmax);
    TT_PTR(const float, inp);
    int ox = get_global_id(0), row = get_global_id(1);
    if (ox >= out_w || row >= planes * out_h) return;
    int plane = row / out_h, oy = row - plane * out_h;
    size_t o = (size_t)row * out_w + ox;
    __global const float *x = inp + (size_t)plane * height * width;
    __global float *d = dinp + (size_t)plane * height * width;
    max_pool_window_backward(d, x, height, width, oy * kernel_h, ox * kernel_w, kernel_h,
                             kernel_w, from_input ? -1 : argmax[o], dout[o]);
}

/* ---- 2x2 stride-2 max pooling, 8 outputs a work-item (CPUs) --------------
 * global (ceil(out_w / 8), planes * out_h).  Rows r0, r1 hold the 16
 * columns of 8 neighbouring windows; their even lanes are kx = 0, odd
 * lanes kx = 1.  The rule and order are max_pool_window's (first maximum
 * in row-major order, a NaN wins), so both variants pick the same
 * winners.  Work-items past the right edge (or over an odd last column)
 * take max_pool_window lane by lane. */

/* The 8 windows' maxima; *pos = the winner's place, 2 ky + kx. */
static float8 max_pool_2x2_8(const float16 r0, const float16 r1, int8 *pos)
{
    const float8 v[4] = {r0.even, r0.odd, r1.even, r1.odd};
    float8 best = (float8)(-INFINITY);
    int8 at = (int8)(0);
    for (int k = 0; k < 4; k++) {
        const int8 wins = isgreater(v[k], best) | isnan(v[k]);
        best = select(best, v[k], wins);
        at = select(at, (int8)(k), wins);
    }
    *pos = at;
    return best;
}

#define POOL_W8_ROW                                                                      \
    const int x0 = get_global_id(0) * 8, row = get_global_id(1);                         \
    if (x0 >= out_w || row >= planes * out_h) return;                                    \
    const int plane = row / out_h, oy = row - plane * out_h;                             \
    const size_t o = (size_t)row * out_w + x0, first = (size_t)plane * height * width;   \
    const int whole = x0 + 8 <= out_w && 2 * x0 + 16 <= width;                           \
    const int8 lanes = (int8)(0, 1, 2, 3, 4, 5, 6, 7)

/* The 8-wide forwards' parameters and first lines (x: the plane). */
#define POOL_W8_FORWARD_PARAMS                                                           \
    TT_MEM(float, out), TT_MEM(int, argmax), TT_MEM(const float, inp), const int keep_argmax, \
        const int planes, const int height, const int width, const int out_h, const int out_w
#define POOL_W8_FORWARD_BEGIN \
    TT_PTR(float, out);       \
    TT_PTR(int, argmax);      \
    TT_PTR(const float, inp); \
    POOL_W8_ROW;              \
    __global const float *x = inp + first

/* Outputs x0 .. min(x0 + 8, out_w) - 1 of row oy (the first at o) by
 * max_pool_window, k x k windows at stride s and pad p: the w8 forwards'
 * blocks that their vectors do not cover. */
static void max_pool_forward_lanes(__global float *out, __global int *argmax,
                                   __global const float *x, const int keep_argmax, const size_t o,
                                   const int x0, const int oy, const int height, const int width,
                                   const int out_w, const int k, const int s, const int p)
{
    for (int ox = x0; ox < min(x0 + 8, out_w); ox++) {
        float best;
        int at = max_pool_window(x, height, width, oy * s - p, ox * s - p, k, k, &best);
        out[o + ox - x0] = best;
        if (keep_argmax) argmax[o + ox - x0] = at;
    }
}

__kernel void max_pool2d_forward_2x2_w8(POOL_W8_FORWARD_PARAMS)
{
    POOL_W8_FORWARD_BEGIN;
    if (!whole) {
        max_pool_forward_lanes(out, argmax, x, keep_argmax, o, x0, oy, height, width, out_w, 2, 2,
                               0);
        return;
    }
    __global const float *r0 = x + (size_t)2 * oy * width + 2 * x0;
    int8 pos;
    vstore8(max_pool_2x2_8(vload16(0, r0), vload16(0, r0 + width), &pos), 0, out + o);
    if (keep_argmax)
        vstore8((2 * oy + (pos >> 1)) * width + 2 * (x0 + lanes) + (pos & 1), 0, argmax + o);
}

/* ---- 3x3 stride-2 pad-1 max pooling (ResNet's stem), 8 outputs a
 * work-item (CPUs) --------------------------------------------------------
 * global (ceil(out_w / 8), planes * out_h).  The 8 windows of a row span 17
 * input columns from xs = 2 x0 - 1; in each of the 3 rows, kx = 0 is the
 * even lanes of the first 16, kx = 1 the odd ones, kx = 2 the even ones one
 * column on.  Compared in max_pool_window's order (row-major, first maximum,
 * a NaN wins); the padding's row above the plane is skipped, its column
 * left of it reads as -infinity (never a winner), and a window of
 * -infinity gives its first place in the plane.  Work-items whose windows
 * reach past the right or bottom edge (or the last, ragged one) take
 * max_pool_window output by output. */
__kernel void max_pool2d_forward_3x3s2_w8(POOL_W8_FORWARD_PARAMS)
{
    POOL_W8_FORWARD_BEGIN;
    const int y0 = 2 * oy - 1, xs = 2 * x0 - 1; /* whole: xs + 17 <= width */
    if (!whole || y0 + 3 > height) {
        max_pool_forward_lanes(out, argmax, x, keep_argmax, o, x0, oy, height, width, out_w, 3, 2,
                               1);
        return;
    }
    const uint8 next = (uint8)(1, 2, 3, 4, 5, 6, 7, 8);
    const uint16 right = (uint16)(16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    const int ky0 = y0 < 0 ? 1 : 0; /* oy = 0: the row above is padding */
    float8 best = (float8)(-INFINITY);
    int8 pos = (int8)(3 * ky0); /* 3 ky + kx */
    if (xs < 0) pos.s0 += 1; /* x0 = 0: the column left of the plane is padding */
    for (int ky = ky0; ky < 3; ky++) {
        __global const float *r = x + (size_t)(y0 + ky) * width + xs;
        float16 a;
        float last;
        if (xs < 0) {
            const float16 b = vload16(0, r + 1);
            a = shuffle2(b, (float16)(-INFINITY), right);
            last = b.sf;
        } else {
            a = vload16(0, r);
            last = r[16];
        }
        const float8 v[3] = {a.even, a.odd, shuffle2(a.even, (float8)(last), next)};
        for (int kx = 0; kx < 3; kx++) {
            const int8 wins = isgreater(v[kx], best) | isnan(v[kx]);
            best = select(best, v[kx], wins);
            pos = select(pos, (int8)(3 * ky + kx), wins);
        }
    }
    vstore8(best, 0, out + o);
    if (keep_argmax) {
        const int8 ky = pos / 3;
        vstore8((y0 + ky) * width + xs + 2 * lanes + pos - 3 * ky, 0, argmax + o);
    }
}

/* max_pool2d_backward_tiles for 2x2 stride 2: each window's winner (found
 * again, or from argmax) gets dout, its other elements 0. */
__kernel void max_pool2d_backward_2x2_w8(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                         TT_MEM(const int, argmax), TT_MEM(const float, inp),
                                         const int from_input, const int planes,
                                         const int height, const int width, const int out_h,
                                         const int out_w)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const int, argmax);
    TT_PTR(const float, inp);
    POOL_W8_ROW;
    __global const float *x = inp + first;
    __global float *d = dinp + first;
    if (!whole) {
        for (int ox = x0; ox < min(x0 + 8, out_w); ox++)
            max_pool_window_backward(d, x, height, width, 2 * oy, 2 * ox, 2, 2,
                                     from_input ? -1 : argmax[o + ox - x0], dout[o + ox - x0]);
        return;
    }
    const size_t top = (size_t)2 * oy * width + 2 * x0;
    int8 pos;
    if (from_input) {
        (void)max_pool_2x2_8(vload16(0, x + top), vload16(0, x + top + width), &pos);
    } else {
        const int8 off = vload8(0, argmax + o) - (2 * oy * width + 2 * (x0 + lanes));
        const int8 ky = -(off >= (int8)(width)); /* comparisons give -1 for true */
        pos = 2 * ky + off - ky * width;
    }
    const float8 g = vload8(0, dout + o), zero = (float8)(0.0f);
    const uint16 zip = (uint16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    const float16 add0 = shuffle2(select(zero, g, pos == 0), select(zero, g, pos == 1), zip);
    const float16 add1 = shuffle2(select(zero, g, pos == 2), select(zero, g, pos == 3), zip);
    vstore16(vload16(0, d + top) + add0, 0, d + top);
    vstore16(vload16(0, d + top + width) + add1, 0, d + top + width);
}

/* out = the sum of each kernel_h x kernel_w window's places inside the
 * plane / (kernel_h * kernel_w) (padded places count as zeros). */
__kernel void avg_pool2d_forward(TT_MEM(float, out), TT_MEM(const float, inp), const int planes,
                                 const int height, const int width, const int out_h,
                                 const int out_w, const int kernel_h, const int kernel_w,
                                 const int stride_h, const int stride_w, const int pad_h,
                                 const int pad_w)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int o = get_global_id(0);
    if (o >= planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    int y0 = oy * stride_h - pad_h, x0 = ox * stride_w - pad_w;
    int ky0 = max(0, -y0), ky1 = min(kernel_h, height - y0);
    int kx0 = max(0, -x0), kx1 = min(kernel_w, width - x0);
    __global const float *x = inp + (size_t)plane * height * width;
    float sum = 0.0f;
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++) sum += x[(y0 + ky) * width + x0 + kx];
    out[o] = sum / (float)(kernel_h * kernel_w);
}

/* dinp[i] += sum of dout[o] / (kernel_h * kernel_w) over windows o covering i. */
__kernel void avg_pool2d_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                  const int planes, const int height, const int width,
                                  const int out_h, const int out_w, const int kernel_h,
                                  const int kernel_w, const int stride_h, const int stride_w,
                                  const int pad_h, const int pad_w)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int i = get_global_id(0);
    if (i >= planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    __global const float *g = dout + (size_t)plane * out_h * out_w;
    int py = iy + pad_h, px = ix + pad_w; /* in the padded input */
    int oy_end = min(py / stride_h + 1, out_h), ox_end = min(px / stride_w + 1, out_w);
    float sum = 0.0f;
    for (int oy = pool_first_out(py, kernel_h, stride_h); oy < oy_end; oy++)
        for (int ox = pool_first_out(px, kernel_w, stride_w); ox < ox_end; ox++)
            sum += g[oy * out_w + ox];
    dinp[i] += sum / (float)(kernel_h * kernel_w);
}
