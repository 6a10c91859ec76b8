/*
 * A small deterministic random generator for the data side (splitmix64).
 *
 * The sampler derives one generator per sample from (seed, epoch, position),
 * so any sample can be reproduced from those three numbers alone: that is
 * what makes an exact resume possible without saving generator internals.
 */
#ifndef TT_DATA_RNG_H
#define TT_DATA_RNG_H

#include <stdint.h>

typedef struct tt_rng {
    uint64_t state;
} tt_rng;

/* Mixes a 64-bit value (the splitmix64 finaliser). */
static inline uint64_t tt_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A generator seeded from up to three numbers (e.g. seed, epoch, position). */
static inline tt_rng tt_rng_from(uint64_t a, uint64_t b, uint64_t c)
{
    tt_rng r;
    r.state = tt_rng_mix(a + 0x9e3779b97f4a7c15ULL);
    r.state = tt_rng_mix(r.state ^ (b + 0x632be59bd9b4e019ULL));
    r.state = tt_rng_mix(r.state ^ (c + 0x85157af5ULL));
    return r;
}

static inline uint64_t tt_rng_u64(tt_rng *r)
{
    return tt_rng_mix(r->state += 0x9e3779b97f4a7c15ULL);
}

/* Uniform in [0, 1). */
static inline double tt_rng_uniform(tt_rng *r)
{
    return (double)(tt_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n); n >= 1.  (Modulo bias below 2^-40 for n < 2^24.) */
static inline uint64_t tt_rng_below(tt_rng *r, uint64_t n)
{
    return tt_rng_u64(r) % n;
}

/* Uniform integer in [lo, hi] (inclusive); lo <= hi. */
static inline int64_t tt_rng_range(tt_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)tt_rng_below(r, (uint64_t)(hi - lo + 1));
}

#endif
