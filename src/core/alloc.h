/*
 * The library's host allocations: malloc, calloc, realloc and strdup,
 * through which TT_FAULT=host:N (core/fault.h) makes the Nth fail as
 * memory running out would (NULL, errno ENOMEM), so that every caller's
 * handling of it is walked by tests/fault/check.sh.  Free with free().
 * core/status.c and core/knobs.c allocate directly: an error's text and
 * the knobs are what a failure is reported with.
 */
#ifndef TT_CORE_ALLOC_H
#define TT_CORE_ALLOC_H

#include <stddef.h>

void *tt_malloc(size_t bytes);
void *tt_calloc(size_t count, size_t size);
/* On failure `p` is untouched and still the caller's. */
void *tt_realloc(void *p, size_t bytes);
char *tt_strdup(const char *text);

#endif
