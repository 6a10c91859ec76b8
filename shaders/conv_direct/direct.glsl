/* Shared by the shaders/conv_direct/ shaders (opencl/conv_direct.cl, whose
 * header says how the work is shared; src/ops/conv_direct.c launches them).
 * Include after common.glsl.
 *
 * - Every TT_DIRECT_* -D define of the OpenCL program is a specialization
 *   constant of the same name (src/ops/conv_direct.c passes all of them to
 *   every launch; the defaults here are never used).
 * - The geometry arguments N .. DW arrive as 15 ints at the end of the
 *   push constants: one tt_geometry member `g`.
 * - OpenCL's float8 is float[8] here; tt_load8 and tt_store8 of
 *   opencl/common.cl are TT_LOAD8 and TT_STORE8, and a float8's sum
 *   across (lo + hi, then x + y + z + w) is tt_hsum8, in the same order.
 * - Indices are int: a binding addresses at most maxStorageBufferRange
 *   bytes, far below 2^31 floats on the devices that run this.
 */

/* channels per work-item: forward (out), backward data (in) */
layout(constant_id = 3) const int TT_DIRECT_COB = 8;
layout(constant_id = 4) const int TT_DIRECT_CIB = 8;
/* backward weight: taps and output channels per work-group, its size */
layout(constant_id = 5) const int TT_DIRECT_TAPS = 9;
layout(constant_id = 6) const int TT_DIRECT_WCOB = 4;
layout(constant_id = 7) const int TT_DIRECT_WG = 64;
/* tiled forward: the output tile (the work-group) */
layout(constant_id = 8) const int TT_DIRECT_TW = 16;
layout(constant_id = 9) const int TT_DIRECT_TH = 8;
/* backward weight (w8): kernel columns per work-item */
layout(constant_id = 10) const int TT_DIRECT_KXB = 3;
/* 3x3 kernels: output rows and channels per work-item, column chunks of 8
 * per work-group */
layout(constant_id = 11) const int TT_DIRECT_ROWS = 2;
layout(constant_id = 12) const int TT_DIRECT_K3_COB = 4;
layout(constant_id = 13) const int TT_DIRECT_K3_CHUNKS = 4;

/* N, Cin, H, W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW */
struct tt_geometry {
    int N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
};

/* The forward kernels' buffers and push constants: out, inp, weight, bias,
 * has_bias, accumulate, then the geometry. */
#define TT_FORWARD_BUFFERS        \
    TT_BUFFER(0, float, outp);    \
    TT_BUFFER(1, float, inp);     \
    TT_BUFFER(2, float, weight);  \
    TT_BUFFER(3, float, bias)
#define TT_FORWARD_ARGS                                                                     \
    layout(push_constant) uniform Args {                                                    \
        uint out_offset; uint inp_offset; uint weight_offset; uint bias_offset;             \
        int has_bias; int accumulate; tt_geometry g;                                        \
    } args

/* dst_[0 .. 7] = buf_[row_ + x0_ .. + 7], 0 for the columns outside [0, w_)
 * (the address clamped, so that nothing outside the row is read). */
#define TT_LOAD8(dst_, buf_, row_, x0_, w_)                                              \
    for (int l_ = 0; l_ < 8; l_++) {                                                     \
        int x_ = (x0_) + l_;                                                             \
        float v_ = TT_B(buf_)[(row_) + clamp(x_, 0, (w_) - 1)];                          \
        dst_[l_] = x_ >= 0 && x_ < (w_) ? v_ : 0.0;                                      \
    }

/* buf_[row_ + x0_ .. + 7] (+)= v_[0 .. 7], only the columns inside [0, w_). */
#define TT_STORE8(buf_, row_, x0_, w_, v_, accumulate_)                                  \
    for (int l_ = 0; l_ < 8 && (x0_) + l_ < (w_); l_++) {                                \
        int at_ = (row_) + (x0_) + l_;                                                   \
        TT_B(buf_)[at_] = ((accumulate_) ? TT_B(buf_)[at_] : 0.0) + v_[l_];              \
    }

/* A float8's sum across, as opencl/conv_direct.cl: h = lo + hi, then
 * h.x + h.y + h.z + h.w. */
float tt_hsum8(float v[8])
{
    return (v[0] + v[4]) + (v[1] + v[5]) + (v[2] + v[6]) + (v[3] + v[7]);
}
