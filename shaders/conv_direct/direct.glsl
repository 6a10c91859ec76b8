/* Shared by the shaders/conv_direct/ shaders (opencl/conv_direct.cl, whose
 * header says how the work is shared; src/ops/conv_direct.c launches them).
 * Include after common.glsl.
 *
 * - Every TT_DIRECT_* -D define of the OpenCL program is a specialization
 *   constant of the same name (src/ops/conv_direct.c passes all of them to
 *   every launch; the defaults here are never used).
 * - The geometry arguments N .. DW arrive as 15 ints at the end of the
 *   push constants: one tt_geometry member `g`.
 * - The w8 kernels (float8 a work-item) are OpenCL's alone: Vulkan's CPU
 *   device runs the scalar ones faster, GPUs the tiled ones
 *   (src/ops/device_traits.c).
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
/* N, Cin, H, W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW */
struct tt_geometry {
    int N, Cin, H, W, Cout, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
};

/* The forward kernels' buffers and push constants: out, inp, weight, bias,
 * has_bias, accumulate, the geometry, then the band's first output row. */
#define TT_FORWARD_BUFFERS        \
    TT_BUFFER(0, float, outp);    \
    TT_BUFFER(1, float, inp);     \
    TT_BUFFER(2, float, weight);  \
    TT_BUFFER(3, float, bias)
#define TT_FORWARD_ARGS                                                                     \
    layout(push_constant) uniform Args {                                                    \
        uint out_offset; uint inp_offset; uint weight_offset; uint bias_offset;             \
        int has_bias; int accumulate; tt_geometry g; int row0;                              \
    } args
