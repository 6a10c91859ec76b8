/* Dropout and drop-path reference (see ref_dropout.h). */
#include "ref_dropout.h"

/* MurmurHash3's finaliser. */
static uint32_t fmix(uint32_t h)
{
    h = (h ^ (h >> 16)) * 0x85ebca6bu;
    h = (h ^ (h >> 13)) * 0xc2b2ae35u;
    return h ^ (h >> 16);
}

uint32_t ref_dropout_hash(uint64_t seed, uint32_t index)
{
    uint32_t lo = (uint32_t)(seed & 0xffffffffu), hi = (uint32_t)(seed >> 32);
    uint32_t key_a = fmix(lo ^ fmix(hi ^ 0x9e3779b9u));
    uint32_t key_b = fmix(hi ^ fmix(lo ^ 0x7f4a7c15u));
    return fmix(fmix(index ^ key_a) + key_b);
}

int ref_dropout_keep(uint64_t seed, uint32_t index, float p)
{
    /* p * 2^32 is exact in double; truncation toward zero */
    double threshold = (double)p * 4294967296.0;
    return (double)ref_dropout_hash(seed, index) >= (double)(uint32_t)threshold;
}

float ref_dropout_scale(float p) { return (float)(1.0 / (1.0 - (double)p)); }

void ref_dropout_forward(float *out, const float *inp, float p, uint64_t seed, size_t n,
                         size_t group)
{
    float scale = ref_dropout_scale(p);
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] * (ref_dropout_keep(seed, (uint32_t)(i / group), p) ? scale : 0.0f);
}

void ref_dropout_backward(float *dinp, const float *dout, float p, uint64_t seed, size_t n,
                          size_t group)
{
    float scale = ref_dropout_scale(p);
    for (size_t i = 0; i < n; i++) {
        float g = dout[i] * (ref_dropout_keep(seed, (uint32_t)(i / group), p) ? scale : 0.0f);
        dinp[i] = dinp[i] + g;
    }
}
