/*
 * The FFT convolution algorithm: batched 2-D real FFTs through the
 * backend's fft2d (clFFT on OpenCL), channel products per frequency in
 * opencl/conv_fft.cl.  Stride 1, dilation 1, groups 1, kernels of at least
 * 25 taps (5x5, 7x7 and up; below that im2col, direct or Winograd win).
 *
 * Planes are (FH, FW) >= the padded image (H + 2 pH, W + 2 pW), sizes with
 * factors 2, 3, 5, 7 only, so no circular wrap reaches a kept value.  With
 * x_pad the padded image and W[co, ci] the spectrum of the kernel placed at
 * the plane's origin, per image:
 *   forward         Y[co] = sum_ci conj(W[co, ci]) X[ci]; out = crop(IFFT Y)
 *   backward data   DX[ci] = sum_co W[co, ci] DY[co] (the adjoint: the
 *                   convolution with the kernel = correlation with the
 *                   flipped kernel); dinp += crop(IFFT DX) at (pH, pW)
 *   backward weight DW[co, ci] = sum_n conj(DY[co]) X[ci];
 *                   dweight += IFFT(DW) cropped to kH x kW
 *
 * clFFT takes no buffer offsets, so this algorithm does not use the
 * caller's workspace (its workspace_bytes is 0): it allocates its planes
 * and spectra as TT_MEM_WORKSPACE buffers per call and frees them again.
 */
#include "core/status.h"
#include "ops/conv_algo.h"

static int fft_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return s->sh == 1 && s->sw == 1 && s->dh == 1 && s->dw == 1 && s->groups == 1 &&
           s->kh * s->kw >= 25;
}

static size_t fft_workspace_bytes(const tt_conv_shape *s)
{
    (void)s;
    return 0;
}

/* The smallest n' >= n whose only prime factors are 2, 3, 5, 7. */
static size_t good_size(size_t n)
{
    for (size_t m = n;; m++) {
        size_t r = m;
        for (size_t p = 2; p <= 7; p++)
            while (r % p == 0) r /= p;
        if (r == 1) return m;
    }
}

/* The buffers of one call: real planes, and three sets of spectra. */
typedef struct fft_buffers {
    size_t fh, fw, freqs;  /* plane, and half-spectrum size (complex values) */
    tt_buffer *real;       /* (max(Cout Cin, Cin, Cout), FH, FW) */
    tt_buffer *wspec;      /* (Cout Cin, freqs) complex */
    tt_buffer *xspec;      /* (max(Cin, Cout), freqs) complex */
    tt_buffer *yspec;      /* (max(Cin, Cout), freqs) complex */
} fft_buffers;

static void buffers_free(fft_buffers *b)
{
    tt_buffer_free(b->real), tt_buffer_free(b->wspec);
    tt_buffer_free(b->xspec), tt_buffer_free(b->yspec);
}

static tt_status buffers_alloc(tt_backend *be, const tt_conv_shape *s, fft_buffers *b)
{
    *b = (fft_buffers){0};
    b->fh = good_size(s->h + 2 * s->ph), b->fw = good_size(s->w + 2 * s->pw);
    b->freqs = b->fh * (b->fw / 2 + 1);
    size_t channels = s->cin > s->cout ? s->cin : s->cout, pairs = s->cout * s->cin;
    size_t planes = pairs > channels ? pairs : channels;
    size_t c = 2 * sizeof(float);
    tt_status status = NULL;
    TT_CHECK(tt_buffer_alloc(be, planes * b->fh * b->fw * sizeof(float), TT_MEM_WORKSPACE,
                             "conv_fft.planes", &b->real));
    TT_CHECK(tt_buffer_alloc(be, pairs * b->freqs * c, TT_MEM_WORKSPACE, "conv_fft.kernel_spectra",
                             &b->wspec));
    TT_CHECK(tt_buffer_alloc(be, channels * b->freqs * c, TT_MEM_WORKSPACE, "conv_fft.spectra_in",
                             &b->xspec));
    TT_CHECK(tt_buffer_alloc(be, channels * b->freqs * c, TT_MEM_WORKSPACE, "conv_fft.spectra_out",
                             &b->yspec));
    return NULL;
cleanup:
    buffers_free(b);
    return status;
}

/* real (channels, FH, FW) = src (channels, h, w) placed at (off_h, off_w). */
static tt_status pad(tt_backend *be, const fft_buffers *b, tt_mem src, size_t channels, size_t h,
                     size_t w, size_t off_h, size_t off_w)
{
    size_t global[3] = {b->fw, b->fh, channels};
    return tt_launch_kernel(be, "conv_fft", "fft_pad", NULL, 3, global, NULL,
                            TT_ARGS(tt_arg_mem(tt_mem_of(b->real)), tt_arg_mem(src),
                                    tt_arg_i32((int)channels), tt_arg_i32((int)h),
                                    tt_arg_i32((int)w), tt_arg_i32((int)b->fh),
                                    tt_arg_i32((int)b->fw), tt_arg_i32((int)off_h),
                                    tt_arg_i32((int)off_w)));
}

/* dst (channels, h, w) [+]= real cropped at (off_h, off_w) [+ bias]. */
static tt_status crop(tt_backend *be, const fft_buffers *b, tt_mem dst, tt_mem bias,
                      int accumulate, size_t channels, size_t h, size_t w, size_t off_h,
                      size_t off_w)
{
    size_t global[3] = {w, h, channels};
    tt_mem real = tt_mem_of(b->real);
    return tt_launch_kernel(be, "conv_fft", "fft_crop", NULL, 3, global, NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(real),
                                    tt_arg_mem(bias.buffer ? bias : real),
                                    tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate),
                                    tt_arg_i32((int)channels), tt_arg_i32((int)h),
                                    tt_arg_i32((int)w), tt_arg_i32((int)b->fh),
                                    tt_arg_i32((int)b->fw), tt_arg_i32((int)off_h),
                                    tt_arg_i32((int)off_w)));
}

static tt_status fft(tt_backend *be, const fft_buffers *b, tt_buffer *spectra, size_t batch,
                     int inverse)
{
    tt_fft2d f = {.inverse = inverse, .batch = batch, .h = b->fh, .w = b->fw,
                  .real = tt_mem_of(b->real), .spectrum = tt_mem_of(spectra)};
    return tt_fft2d_run(be, &f);
}

static tt_status product(tt_backend *be, const fft_buffers *b, tt_buffer *out, size_t rows,
                         size_t inner, int mode)
{
    size_t global[2] = {b->freqs, rows};
    return tt_launch_kernel(be, "conv_fft", "fft_product", NULL, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(tt_mem_of(out)), tt_arg_mem(tt_mem_of(b->wspec)),
                                    tt_arg_mem(tt_mem_of(b->xspec)), tt_arg_i32((int)rows),
                                    tt_arg_i32((int)inner), tt_arg_i32((int)b->freqs),
                                    tt_arg_i32(mode)));
}

/* wspec = spectra of every kernel weight[co, ci] placed at the origin. */
static tt_status kernel_spectra(tt_backend *be, const fft_buffers *b, tt_mem weight,
                                const tt_conv_shape *s)
{
    TT_TRY(pad(be, b, weight, s->cout * s->cin, s->kh, s->kw, 0, 0));
    return fft(be, b, b->wspec, s->cout * s->cin, 0);
}

static tt_status fft_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    fft_buffers b;
    TT_TRY(buffers_alloc(be, s, &b));
    tt_status status = NULL;
    TT_CHECK(kernel_spectra(be, &b, weight, s));
    for (size_t n = 0; n < s->batch; n++) {
        TT_CHECK(pad(be, &b, tt_mem_f32(inp, n * s->cin * s->in_plane), s->cin, s->h, s->w, s->ph,
                     s->pw));
        TT_CHECK(fft(be, &b, b.xspec, s->cin, 0));
        TT_CHECK(product(be, &b, b.yspec, s->cout, s->cin, 0));
        TT_CHECK(fft(be, &b, b.yspec, s->cout, 1));
        TT_CHECK(crop(be, &b, tt_mem_f32(out, n * s->cout * s->out_plane), bias, accumulate,
                      s->cout, s->oh, s->ow, 0, 0));
    }
cleanup:
    buffers_free(&b);
    return status;
}

static tt_status fft_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                   const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    fft_buffers b;
    TT_TRY(buffers_alloc(be, s, &b));
    tt_status status = NULL;
    TT_CHECK(kernel_spectra(be, &b, weight, s));
    for (size_t n = 0; n < s->batch; n++) {
        TT_CHECK(pad(be, &b, tt_mem_f32(dout, n * s->cout * s->out_plane), s->cout, s->oh, s->ow,
                     0, 0));
        TT_CHECK(fft(be, &b, b.xspec, s->cout, 0));
        TT_CHECK(product(be, &b, b.yspec, s->cin, s->cout, 1));
        TT_CHECK(fft(be, &b, b.yspec, s->cin, 1));
        TT_CHECK(crop(be, &b, tt_mem_f32(dinp, n * s->cin * s->in_plane), (tt_mem){0}, 1, s->cin,
                      s->h, s->w, s->ph, s->pw));
    }
cleanup:
    buffers_free(&b);
    return status;
}

static tt_status fft_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                     const tt_conv_shape *s, tt_mem ws)
{
    (void)ws;
    fft_buffers b;
    TT_TRY(buffers_alloc(be, s, &b));
    tt_status status = NULL;
    for (size_t n = 0; n < s->batch; n++) {
        TT_CHECK(pad(be, &b, tt_mem_f32(inp, n * s->cin * s->in_plane), s->cin, s->h, s->w, s->ph,
                     s->pw));
        TT_CHECK(fft(be, &b, b.xspec, s->cin, 0));
        TT_CHECK(pad(be, &b, tt_mem_f32(dout, n * s->cout * s->out_plane), s->cout, s->oh, s->ow,
                     0, 0));
        TT_CHECK(fft(be, &b, b.yspec, s->cout, 0));
        size_t global[2] = {b.freqs, s->cout * s->cin};
        TT_CHECK(tt_launch_kernel(
            be, "conv_fft", "fft_outer", NULL, 2, global, NULL,
            TT_ARGS(tt_arg_mem(tt_mem_of(b.wspec)), tt_arg_mem(tt_mem_of(b.yspec)),
                    tt_arg_mem(tt_mem_of(b.xspec)), tt_arg_i32((int)s->cout),
                    tt_arg_i32((int)s->cin), tt_arg_i32((int)b.freqs), tt_arg_i32(n > 0))));
    }
    TT_CHECK(fft(be, &b, b.wspec, s->cout * s->cin, 1));
    TT_CHECK(crop(be, &b, dweight, (tt_mem){0}, 1, s->cout * s->cin, s->kh, s->kw, 0, 0));
cleanup:
    buffers_free(&b);
    return status;
}

const tt_conv_algo_impl tt_conv_fft_impl = {
    .supports = fft_supports,
    .workspace_bytes = fft_workspace_bytes,
    .forward = fft_forward,
    .backward_data = fft_backward_data,
    .backward_weight = fft_backward_weight,
};
