/*
 * fn(ctx, i) for every i in [0, n), on as many threads as the host has
 * cores (at most n): the first run's kernel builds (backend/, prepare).
 * Each i runs exactly once; the calls of different i may run at the same
 * time, so fn touches only what its i owns.  Where a thread cannot be
 * started, the calling thread runs what is left.
 */
#ifndef TT_CORE_PARALLEL_H
#define TT_CORE_PARALLEL_H

#include <stddef.h>

void tt_parallel_for(size_t n, void (*fn)(void *ctx, size_t i), void *ctx);

/* The host's cores online (at least 1). */
int tt_host_cores(void);

#endif
