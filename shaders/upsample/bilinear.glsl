/* Shared by the shaders/upsample/ shaders: opencl/upsample.cl's
 * bilinear_taps, bilinear_weight and bilinear_readers, `aligned` 0
 * (align_corners = False) or 1 (True) picking the source coordinate and
 * the readers' range (the kernel says why).  Every float step `precise`,
 * so the bits are the kernel's. */

/* Taps of output index dst along an axis of in_size samples. */
void bilinear_taps(int dst, int in_size, int aligned, float scale, out int i0, out int i1,
                   out float w1)
{
    precise float src;
    int lo;
    if (aligned != 0) {
        src = scale * float(dst);
        lo = min(int(src), in_size - 1);
    } else {
        precise float scaled = scale * (float(dst) + 0.5);
        src = scaled - 0.5;
        if (src < 0.0) src = 0.0;
        lo = int(src);
    }
    i0 = lo;
    i1 = lo + (lo < in_size - 1 ? 1 : 0);
    precise float frac = src - float(lo);
    w1 = frac;
}

/* The weight with which output index dst reads input index i (0 if not). */
float bilinear_weight(int dst, int i, int in_size, int aligned, float scale)
{
    int lo, hi;
    float w1;
    bilinear_taps(dst, in_size, aligned, scale, lo, hi, w1);
    precise float w = (lo == i ? 1.0 - w1 : 0.0) + (hi == i ? w1 : 0.0);
    return w;
}

/* The outputs lo .. hi that may read input i along an axis. */
void bilinear_readers(int i, int in_size, int factor, int aligned, out int lo, out int hi)
{
    int out_size = factor * in_size;
    if (aligned == 0) {
        lo = max(factor * i - ((factor + 1) / 2 + 1), 0);
        hi = min(factor * i + 3 * factor / 2, out_size - 1);
    } else if (in_size == 1) {
        lo = 0;
        hi = out_size - 1;
    } else {
        int n = in_size - 1, extra = factor - 1;
        lo = i == 0 ? 0 : max((i - 1) * factor + (i - 1) * extra / n - 1, 0);
        hi = min((i + 1) * factor + ((i + 1) * extra + n - 1) / n + 1, out_size - 1);
    }
}
