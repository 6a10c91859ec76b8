/*
 * Shared by the shaders of shaders/loss/ (opencl/loss.cl): the work-group
 * size TT_WG (a power of two, from -DTT_WG), byte arrays read from words,
 * the overflow-free sigmoid, log1p, and the group reduction of the
 * (sum, count, invalid) triple in shared memory.
 */

layout(constant_id = 3) const int TT_WG = 256;

/* Byte `index` of a uchar tensor in the uint buffer `buf_` (its TT_BUFFER
 * name, not TT_B(name)) whose remaining byte offset is `offset_`.  The
 * device enables no 8-bit storage, so bytes are read from their word; the
 * last word of a buffer whose size is not a multiple of 4 reaches past its
 * end, so such buffers must be padded to whole words (a backend with 8-bit
 * storage would lift this). */
#define TT_BYTE(buf_, offset_, index_) \
    int((TT_B(buf_)[(uint(offset_) + uint(index_)) >> 2] >>  \
         (((uint(offset_) + uint(index_)) & 3u) * 8u)) & 0xffu)

/* 1 / (1 + exp(-x)) without overflow for any finite x (tt_sigmoid) */
float tt_sigmoid(float x)
{
    if (x >= 0.0) {
        precise float r = 1.0 / (1.0 + exp(-x));
        return r;
    }
    float e = exp(x);
    precise float r = e / (1.0 + e);
    return r;
}

/* log(1 + y) for y >= 0, accurate for small y (GLSL has no log1p) */
float tt_log1p(float y)
{
    precise float u = 1.0 + y;
    if (u == 1.0) return y;
    precise float r = log(u) * (y / (u - 1.0));
    return r;
}

/* Reduces the shared arrays s (float), c and b (uint) of TT_WG into [0];
 * every work-item must reach it (tt_loss_group_reduce). */
#define TT_LOSS_GROUP_REDUCE(lid_)                                   \
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {            \
        barrier();                                                   \
        if ((lid_) < half_) {                                        \
            s[lid_] += s[(lid_) + half_];                            \
            c[lid_] += c[(lid_) + half_];                            \
            b[lid_] += b[(lid_) + half_];                            \
        }                                                            \
    }                                                                \
    barrier()
