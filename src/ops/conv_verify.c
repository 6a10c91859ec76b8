/* The numbers behind a convolution's verification; see conv_verify.h. */
#include "ops/conv_verify.h"

#include <math.h>
#include <stdint.h>

/* One direction of a family's call as a direction of its conv2d geometry:
 * which host arrays play the geometry's x (N, Cin, H, W) and dy
 * (N, Cout, OH, OW), and whether the bias adds to the geometry's input
 * channels (a transposed convolution's forward). */
typedef struct geometry_view {
    tt_conv_shape g;
    tt_conv_dir dir;
    const float *x, *w, *dy, *bias;
} geometry_view;

static geometry_view view_of(const tt_conv_family *family, const tt_conv_shape *s,
                             tt_conv_dir dir, const tt_conv_host_io *io)
{
    geometry_view v = {family->geometry(s), dir, io->inp, io->weight, io->dout, io->bias};
    if (!family->transposed) return v;
    switch (dir) {
    case TT_CONV_DIR_FORWARD: /* the geometry's input gradient of our input */
        v.dir = TT_CONV_DIR_BACKWARD_DATA, v.x = NULL, v.dy = io->inp;
        break;
    case TT_CONV_DIR_BACKWARD_DATA: /* the geometry's forward of our dout */
        v.dir = TT_CONV_DIR_FORWARD, v.x = io->dout, v.dy = NULL, v.bias = NULL;
        break;
    default: /* the geometry's weight gradient, roles swapped */
        v.x = io->dout, v.dy = io->inp;
        break;
    }
    return v;
}

size_t tt_conv_verify_reduction(const tt_conv_family *family, const tt_conv_shape *s,
                                tt_conv_dir dir)
{
    tt_conv_host_io none = {0};
    geometry_view v = view_of(family, s, dir, &none);
    const tt_conv_shape *g = &v.g;
    switch (v.dir) {
    case TT_CONV_DIR_FORWARD: return g->cin_g * g->kh * g->kw;
    case TT_CONV_DIR_BACKWARD_DATA: return g->cout_g * g->kh * g->kw;
    default: return g->batch * g->out_plane;
    }
}

double tt_conv_verify_bound(size_t reduction)
{
    return TT_CONV_VERIFY_SLACK * ldexp(1.0, -24) * sqrt((double)(reduction ? reduction : 1));
}

size_t tt_conv_verify_out_floats(const tt_conv_shape *s, tt_conv_dir dir)
{
    switch (dir) {
    case TT_CONV_DIR_FORWARD: return s->batch * s->cout * s->out_plane;
    case TT_CONV_DIR_BACKWARD_DATA: return s->batch * s->cin * s->in_plane;
    default: return s->cin * s->cout_g * s->kh * s->kw;
    }
}

/* The geometry's input row and column that output (oy, ox) reads at tap
 * (ky, kx); 0 when that falls in the padding. */
static int tap(const tt_conv_shape *g, size_t oy, size_t ox, size_t ky, size_t kx, size_t *iy,
               size_t *ix)
{
    long y = (long)(oy * g->sh + ky * g->dh) - (long)g->ph;
    long x = (long)(ox * g->sw + kx * g->dw) - (long)g->pw;
    if (y < 0 || x < 0 || y >= (long)g->h || x >= (long)g->w) return 0;
    *iy = (size_t)y, *ix = (size_t)x;
    return 1;
}

static double forward_point(const geometry_view *v, size_t i, double *mag)
{
    const tt_conv_shape *g = &v->g;
    size_t ox = i % g->ow, oy = i / g->ow % g->oh, co = i / g->out_plane % g->cout;
    size_t n = i / g->out_plane / g->cout, first = co / g->cout_g * g->cin_g;
    double sum = v->bias ? v->bias[co] : 0.0;
    for (size_t c = 0; c < g->cin_g; c++)
        for (size_t ky = 0; ky < g->kh; ky++)
            for (size_t kx = 0; kx < g->kw; kx++) {
                size_t iy, ix;
                if (!tap(g, oy, ox, ky, kx, &iy, &ix)) continue;
                double t = (double)v->x[((n * g->cin + first + c) * g->h + iy) * g->w + ix] *
                           v->w[((co * g->cin_g + c) * g->kh + ky) * g->kw + kx];
                sum += t, *mag += fabs(t);
            }
    return sum;
}

static double input_grad_point(const geometry_view *v, size_t i, double *mag)
{
    const tt_conv_shape *g = &v->g;
    size_t ix = i % g->w, iy = i / g->w % g->h, ci = i / g->in_plane % g->cin;
    size_t n = i / g->in_plane / g->cin, c = ci % g->cin_g, first = ci / g->cin_g * g->cout_g;
    double sum = v->bias ? v->bias[ci] : 0.0;
    for (size_t o = 0; o < g->cout_g; o++)
        for (size_t ky = 0; ky < g->kh; ky++)
            for (size_t kx = 0; kx < g->kw; kx++) {
                long ty = (long)(iy + g->ph) - (long)(ky * g->dh);
                long tx = (long)(ix + g->pw) - (long)(kx * g->dw);
                if (ty < 0 || tx < 0 || ty % (long)g->sh || tx % (long)g->sw) continue;
                size_t oy = (size_t)ty / g->sh, ox = (size_t)tx / g->sw, co = first + o;
                if (oy >= g->oh || ox >= g->ow) continue;
                double t = (double)v->dy[((n * g->cout + co) * g->oh + oy) * g->ow + ox] *
                           v->w[((co * g->cin_g + c) * g->kh + ky) * g->kw + kx];
                sum += t, *mag += fabs(t);
            }
    return sum;
}

static double weight_grad_point(const geometry_view *v, size_t i, double *mag)
{
    const tt_conv_shape *g = &v->g;
    size_t kx = i % g->kw, ky = i / g->kw % g->kh, c = i / (g->kh * g->kw) % g->cin_g;
    size_t co = i / (g->kh * g->kw * g->cin_g), ci = co / g->cout_g * g->cin_g + c;
    double sum = 0.0;
    for (size_t n = 0; n < g->batch; n++)
        for (size_t oy = 0; oy < g->oh; oy++)
            for (size_t ox = 0; ox < g->ow; ox++) {
                size_t iy, ix;
                if (!tap(g, oy, ox, ky, kx, &iy, &ix)) continue;
                double t = (double)v->dy[((n * g->cout + co) * g->oh + oy) * g->ow + ox] *
                           v->x[((n * g->cin + ci) * g->h + iy) * g->w + ix];
                sum += t, *mag += fabs(t);
            }
    return sum;
}

void tt_conv_verify_sample(const tt_conv_family *family, const tt_conv_shape *s, tt_conv_dir dir,
                           const tt_conv_host_io *io, size_t samples, size_t *index,
                           double *want, double *magnitude)
{
    geometry_view v = view_of(family, s, dir, io);
    *magnitude = 0;
    size_t n = tt_conv_verify_out_floats(s, dir);
    uint64_t state = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t k = 0; k < samples && n > 0; k++) {
        size_t i = k == 0 ? 0 : n - 1;
        if (k > 1) { /* a spread over the rest: splitmix64 */
            state += 0x9e3779b97f4a7c15ull;
            uint64_t z = state;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            i = (size_t)((z ^ (z >> 31)) % n);
        }
        index[k] = i;
        double mag = 0;
        want[k] = v.dir == TT_CONV_DIR_FORWARD         ? forward_point(&v, i, &mag)
                  : v.dir == TT_CONV_DIR_BACKWARD_DATA ? input_grad_point(&v, i, &mag)
                                                       : weight_grad_point(&v, i, &mag);
        if (!(mag <= *magnitude)) *magnitude = mag;
    }
}

double tt_conv_verify_points(const float *got, const size_t *index, const double *want,
                             size_t samples, double scale)
{
    double worst = 0.0;
    for (size_t k = 0; k < samples; k++) {
        if (!isfinite(want[k])) continue; /* inputs that overflowed: no judgement there */
        double err = fabs((double)got[index[k]] - want[k]) / scale;
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

double tt_conv_verify_diff(const float *got, const float *want, size_t n, double scale)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(want[i])) continue;
        double err = fabs((double)got[i] - (double)want[i]) / scale;
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

double tt_conv_verify_scale(const float *v, size_t n)
{
    double top = 0.0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]) && fabs((double)v[i]) > top) top = fabs((double)v[i]);
    return top > 0.0 ? top : 1.0;
}
