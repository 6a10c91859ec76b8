/* FNV-1a, 64 bits: cache keys, not security. */
#ifndef TT_CORE_HASH_H
#define TT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TT_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t tt_hash_bytes(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= p[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

#endif
