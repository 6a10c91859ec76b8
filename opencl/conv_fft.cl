/*
 * The non-FFT steps of the FFT convolution (src/ops/conv_fft.c): placing
 * images and kernels into zero-padded (fh, fw) planes, the per-frequency
 * channel products of half spectra (interleaved complex float2), and
 * cropping the result out of the inverse transform.  Frequencies run along
 * dimension 0 (neighbouring work-items, neighbouring addresses).
 */

/* real[c, y, x] = src[c, y - off_h, x - off_w] inside (h, w), else 0.
 * global (fw, fh, channels). */
__kernel void fft_pad(TT_MEM(float, real), TT_MEM(const float, src), const int channels,
                      const int h, const int w, const int fh, const int fw, const int off_h,
                      const int off_w)
{
    TT_PTR(float, real);
    TT_PTR(const float, src);
    const int x = get_global_id(0), y = get_global_id(1), c = get_global_id(2);
    if (x >= fw || y >= fh || c >= channels) return;
    const int sy = y - off_h, sx = x - off_w;
    real[((size_t)c * fh + y) * fw + x] =
        (sy >= 0 && sy < h && sx >= 0 && sx < w) ? src[((size_t)c * h + sy) * w + sx] : 0.0f;
}

/* Per frequency f, a small complex matrix-vector product:
 *   mode 0 (forward):       out[r, f] = sum_i conj(wspec[r, i, f]) x[i, f]
 *   mode 1 (backward data): out[r, f] = sum_i wspec[i, r, f] x[i, f]
 * wspec has rows * inner spectra (mode 0) or inner * rows (mode 1).
 * global (freqs, rows). */
__kernel void fft_product(TT_MEM(float2, out), TT_MEM(const float2, wspec),
                          TT_MEM(const float2, x), const int rows, const int inner,
                          const int freqs, const int mode)
{
    TT_PTR(float2, out);
    TT_PTR(const float2, wspec);
    TT_PTR(const float2, x);
    const int f = get_global_id(0), r = get_global_id(1);
    if (f >= freqs || r >= rows) return;
    float re = 0.0f, im = 0.0f;
    for (int i = 0; i < inner; i++) {
        const size_t wi = mode == 0 ? (size_t)r * inner + i : (size_t)i * rows + r;
        const float2 a = wspec[wi * freqs + f];
        const float2 b = x[(size_t)i * freqs + f];
        const float ai = mode == 0 ? -a.y : a.y;
        re += a.x * b.x - ai * b.y;
        im += a.x * b.y + ai * b.x;
    }
    out[(size_t)r * freqs + f] = (float2)(re, im);
}

/* acc[co, ci, f] (+)= conj(d[co, f]) x[ci, f]: the weight gradient's
 * spectrum, summed over images (accumulate = 0 for the first).
 * global (freqs, cout * cin). */
__kernel void fft_outer(TT_MEM(float2, acc), TT_MEM(const float2, d), TT_MEM(const float2, x),
                        const int cout, const int cin, const int freqs, const int accumulate)
{
    TT_PTR(float2, acc);
    TT_PTR(const float2, d);
    TT_PTR(const float2, x);
    const int f = get_global_id(0), pair = get_global_id(1);
    if (f >= freqs || pair >= cout * cin) return;
    const float2 a = d[(size_t)(pair / cin) * freqs + f], b = x[(size_t)(pair % cin) * freqs + f];
    const float2 p = (float2)(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
    const size_t at = (size_t)pair * freqs + f;
    acc[at] = accumulate ? acc[at] + p : p;
}

/* dst[c, y, x] = (accumulate ? dst : bias[c] or 0) + real[c, y + off_h, x + off_w].
 * global (w, h, channels). */
__kernel void fft_crop(TT_MEM(float, dst), TT_MEM(const float, real), TT_MEM(const float, bias),
                       const int has_bias, const int accumulate, const int channels, const int h,
                       const int w, const int fh, const int fw, const int off_h, const int off_w)
{
    TT_PTR(float, dst);
    TT_PTR(const float, real);
    TT_PTR(const float, bias);
    const int x = get_global_id(0), y = get_global_id(1), c = get_global_id(2);
    if (x >= w || y >= h || c >= channels) return;
    const size_t at = ((size_t)c * h + y) * w + x;
    const float base = accumulate ? dst[at] : (has_bias ? bias[c] : 0.0f);
    dst[at] = base + real[((size_t)c * fh + y + off_h) * fw + x + off_w];
}
