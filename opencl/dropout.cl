/*
 * Dropout and drop-path with masks regenerated from a seed (src/ops/
 * dropout.h states the hash, the threshold and the scale exactly; the host
 * turns the 64-bit seed into key_a and key_b).  Element i's hash index is
 * i / group: 1 for dropout (a draw per element), the sample's size for
 * drop-path (a draw per sample).  One work-item per element.
 *
 * keep = fmix32(fmix32(index ^ key_a) + key_b) >= threshold, unsigned.
 * Nothing is contracted (the pragma): the backward rounds the product
 * before the sum, as the shaders and tests/ref_dropout.c do.
 */
#pragma OPENCL FP_CONTRACT OFF

/* MurmurHash3's 32-bit finaliser. */
uint dropout_fmix32(uint h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* scale where element i is kept, else 0. */
float dropout_factor(int i, int group, uint key_a, uint key_b, uint threshold, float scale)
{
    uint index = (uint)(i / group);
    uint hash = dropout_fmix32(dropout_fmix32(index ^ key_a) + key_b);
    return hash >= threshold ? scale : 0.0f;
}

/* out[i] = inp[i] * (keep ? scale : 0); out may be inp. */
__kernel void dropout_forward(TT_MEM(float, out), TT_MEM(const float, inp), const int key_a,
                              const int key_b, const int threshold, const float scale,
                              const int n, const int group)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    out[i] = inp[i] * dropout_factor(i, group, (uint)key_a, (uint)key_b, (uint)threshold, scale);
}

/* dinp[i] += dout[i] * (keep ? scale : 0). */
__kernel void dropout_backward(TT_MEM(float, dinp), TT_MEM(const float, dout), const int key_a,
                               const int key_b, const int threshold, const float scale,
                               const int n, const int group)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    int i = get_global_id(0);
    if (i >= n) return;
    float g = dout[i] * dropout_factor(i, group, (uint)key_a, (uint)key_b, (uint)threshold, scale);
    dinp[i] = dinp[i] + g;
}
