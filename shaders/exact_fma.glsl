/*
 * tt_fma(a, b, c): a * b + c rounded once, as OpenCL's fma() and C's fmaf().
 * Vulkan lets GLSL's fma() round twice ("inherited from OpFMul followed by
 * OpFAdd"), and lavapipe does, so the kernels that must equal the OpenCL
 * ones bit for bit use this instead.  Error-free transforms (Dekker's
 * product, Knuth's sum) and Boldo and Melquiond's emulation through rounding
 * to odd: a * b = uh + ul exactly, c + uh = th + tl exactly, the result is
 * RN(th + RO(tl + ul)).  Exact while the product's and c's exponents stay in
 * [-90, 120] and |a|, |b| below 2^100; beyond, a product 2^50 below c
 * gives c (as the fused result), and otherwise the unfused a * b + c (no
 * optimizer or loss value gets there).  Every operation `precise`.
 */

void tt_two_sum(float a, float b, out float s, out float e)
{
    precise float x = a + b;
    precise float bv = x - a;
    precise float av = x - bv;
    precise float err = (a - av) + (b - bv);
    s = x;
    e = err;
}

void tt_split(float a, out float hi, out float lo)
{
    precise float t = 4097.0 * a;
    precise float h = t - (t - a);
    precise float l = a - h;
    hi = h;
    lo = l;
}

/* the neighbour of RN(a + b) with an odd significand when a + b is inexact */
float tt_round_odd_sum(float a, float b)
{
    float s, e;
    tt_two_sum(a, b, s, e);
    if (e == 0.0 || (floatBitsToUint(s) & 1u) != 0u) return s;
    return uintBitsToFloat((e > 0.0) == (s > 0.0) ? floatBitsToUint(s) + 1u
                                                   : floatBitsToUint(s) - 1u);
}

float tt_fma(float a, float b, float c)
{
    precise float plain = a * b + c;
    if (isinf(a) || isnan(a) || isinf(b) || isnan(b) || isinf(c) || isnan(c) || a == 0.0 ||
        b == 0.0)
        return plain;
    int ea, eb, ec;
    frexp(a, ea);
    frexp(b, eb);
    frexp(c, ec);
    int ep = ea + eb;
    if (c != 0.0 && ec - ep > 50) return c;
    if (ea > 100 || eb > 100 || ea < -100 || eb < -100 || ep < -90 || ep > 120 || ec > 120)
        return plain;
    float ah, al, bh, bl, th, tl;
    tt_split(a, ah, al);
    tt_split(b, bh, bl);
    precise float uh = a * b;
    precise float ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl;
    tt_two_sum(c, uh, th, tl);
    precise float v = tt_round_odd_sum(tl, ul);
    precise float z = th + v;
    return z;
}
