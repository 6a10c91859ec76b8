/*
 * Shared by the shaders of shaders/loss/ (opencl/loss.cl): the work-group
 * size TT_WG (a power of two, from -DTT_WG), byte arrays read from words,
 * the overflow-free sigmoid, log1p, the focal loss's term and derivative,
 * and the group reduction of the (sum, count, invalid) triple in shared
 * memory.
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

/* The focal loss of opencl/loss.cl (tt_focal_*; the derivation is there):
 * for logit x and target t in {0, 1}, q = 1 - pt = sigmoid(-s x),
 * term = a_t q^gamma b and its derivative -s a_t q^gamma (gamma pt b + q),
 * gamma = 0 taken apart (GLSL leaves pow(0, 0) undefined), alpha < 0 for
 * a_t = 1. */
float tt_focal_pow(float q, float gamma)
{
    if (gamma == 1.0) return q;
    if (gamma == 2.0) {
        precise float r = q * q;
        return r;
    }
    return q > 0.0 ? pow(q, gamma) : 0.0;
}

float tt_focal_alpha(int t, float alpha)
{
    return alpha < 0.0 ? 1.0 : (t != 0 ? alpha : 1.0 - alpha);
}

/* b = BCE(x, t), as bce_forward computes it */
float tt_focal_bce(float x, int t)
{
    precise float b = max(x, 0.0) - (t != 0 ? x : 0.0) + tt_log1p(exp(-abs(x)));
    return b;
}

float tt_focal_term(float x, int t, float gamma, float alpha)
{
    precise float term = tt_focal_bce(x, t);
    if (gamma != 0.0) term = tt_focal_pow(tt_sigmoid(t != 0 ? -x : x), gamma) * term;
    if (alpha >= 0.0) term = tt_focal_alpha(t, alpha) * term;
    return term;
}

float tt_focal_grad(float x, int t, float gamma, float alpha)
{
    float sx = t != 0 ? x : -x;
    float q = tt_sigmoid(-sx);
    precise float g = q;
    if (gamma != 0.0)
        g = tt_focal_pow(q, gamma) * (gamma * tt_sigmoid(sx) * tt_focal_bce(x, t) + q);
    if (alpha >= 0.0) g *= tt_focal_alpha(t, alpha);
    return t != 0 ? -g : g;
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
