/* Shared by the shaders/norm/ shaders (opencl/norm.cl, whose header says
 * how the work is shared: a grid (chunks, planes), work-item (k, p) owning
 * share k of plane p's groups of 8 floats, work-item 0 also the plane's
 * last hw % 8).  OpenCL's float8 is 8 floats in a loop here, summed
 * across in OpenCL's order (norm_hsum).  -DNORM_INTERLEAVE=1 (GPUs) picks
 * the interleaved share.  Include after common.glsl and half.glsl. */

layout(constant_id = 3) const int NORM_INTERLEAVE = 0;

/* How x, the normalised tensor, is stored (opencl/norm.cl's NORM_X16):
 * 0 fp32; 1 fp16 or 2 bf16, two a 32-bit word, the first in the low bits
 * (half.glsl).  x is a uint buffer in every shader that reads it. */
layout(constant_id = 4) const int NORM_X16 = 0;

/* The index in x of plane p's first element, for x at byte offset
 * `offset` from its binding: in floats, or in 16-bit halves. */
int norm_x_first(uint offset, int p, int hw)
{
    return (NORM_X16 != 0 ? int(offset / 2u) : TT_AT(offset, 4)) + p * hw;
}

/* Element e of a tensor stored as `format` (0 fp32, 1 fp16, 2 bf16) as a
 * float, from the word that holds it. */
float norm_stored_value(uint word, int e, int format)
{
    if (format == 0) return uintBitsToFloat(word);
    uint bits = (word >> uint(16 * (e & 1))) & 0xffffu;
    return uintBitsToFloat(format == 1 ? tt_f16_to_f32(bits) : tt_bf16_to_f32(bits));
}

/* Element e of x (an index from norm_x_first) as a float, from the word
 * that holds it (NORM_X). */
float norm_x_value(uint word, int e) { return norm_stored_value(word, e, NORM_X16); }
#define NORM_X(e) norm_x_value(TT_B(x)[NORM_X16 != 0 ? (e) >> 1 : (e)], (e))

/* How the backward's gradients dy and dinp are stored (opencl/norm.cl's
 * NORM_G16): 0 fp32; 1 fp16 or 2 bf16, two a word as x's, rounded where
 * written with half.glsl's conversions.  dy and dinp are uint buffers. */
layout(constant_id = 5) const int NORM_G16 = 0;

/* The index of plane p's first gradient, for a gradient at byte offset
 * `offset` from its binding: in floats, or in 16-bit halves. */
int norm_g_first(uint offset, int p, int hw)
{
    return (NORM_G16 != 0 ? int(offset / 2u) : TT_AT(offset, 4)) + p * hw;
}

/* Gradient e (an index from norm_g_first) as a float, from its word. */
float norm_g_value(uint word, int e) { return norm_stored_value(word, e, NORM_G16); }
#define NORM_G(buf, e) norm_g_value(TT_B(buf)[NORM_G16 != 0 ? (e) >> 1 : (e)], (e))

/* v rounded to the gradients' 16 bits (NORM_G16 1 or 2). */
uint norm_g_bits(float v)
{
    uint bits = floatBitsToUint(v);
    return NORM_G16 == 1 ? tt_f32_to_f16(bits) : tt_f32_to_bf16(bits);
}

/* The first float of vector j of work-item k's share. */
int norm_vec(int k, int j, int chunks, int chunk_vecs)
{
    return 8 * (NORM_INTERLEAVE != 0 ? j * chunks + k : k * chunk_vecs + j);
}

/* How many vectors work-item k owns among a plane's nv. */
int norm_share(int k, int nv, int chunks, int chunk_vecs)
{
    if (NORM_INTERLEAVE != 0) return k < nv ? (nv - k + chunks - 1) / chunks : 0;
    return clamp(nv - k * chunk_vecs, 0, chunk_vecs);
}

/* The tail floats (hw % 8) belong to work-item 0. */
int norm_tail(int k, int hw) { return k == 0 ? hw % 8 : 0; }

/* OpenCL's norm_hsum of a float8: (lo + hi), then its halves, then across. */
float norm_hsum(float v[8])
{
    float a0 = v[0] + v[4], a1 = v[1] + v[5], a2 = v[2] + v[6], a3 = v[3] + v[7];
    return (a0 + a2) + (a1 + a3);
}

/* (x - mean) * r * w + b, the one formula of every kernel (one fma). */
float norm_value(float x, float mean, float r, float w, float b)
{
    precise float t = (x - mean) * r;
    precise float v = fma(t, w, b);
    return v;
}

/* The buffers and push constants of NORM_PLANE_ARGS (opencl/norm.cl), the
 * buffers from binding `first`; include norm_plane.glsl after them. */
#define NORM_PLANE_BUFFERS(first)      \
    TT_BUFFER(first, float, mean);     \
    TT_BUFFER(first + 1, float, stat); \
    TT_BUFFER(first + 2, float, weight); \
    TT_BUFFER(first + 3, float, bias)
#define NORM_PLANE_PUSH                                                                \
    uint mean_offset; uint stat_offset; uint weight_offset; uint bias_offset;          \
    int relu; int stat_is_var; float eps; int has_weight; int has_bias; int channels;  \
    int hw; int stat_n_stride; int channels_per_stat; int chunks; int chunk_vecs
