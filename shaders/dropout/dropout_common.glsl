/* The mask of opencl/dropout.cl (src/ops/dropout.h states it): element i's
 * hash index is i / group; kept when
 * fmix32(fmix32(index ^ key_a) + key_b) >= threshold (unsigned). */

/* MurmurHash3's 32-bit finaliser (uint arithmetic wraps modulo 2^32). */
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
    uint index = uint(i / group);
    uint hash = dropout_fmix32(dropout_fmix32(index ^ key_a) + key_b);
    return hash >= threshold ? scale : 0.0;
}
