/*
 * The host allocations of the library and the command line: malloc,
 * calloc, realloc and strdup, through which TT_FAULT=host:N (core/fault.h)
 * makes the Nth fail as memory running out would (NULL, errno ENOMEM), so
 * that every caller's handling of it is walked by tests/fault/check.sh.  Free with free().
 * An error (core/status.c) that finds no memory is a static "out of host
 * memory" one.  core/knobs.c alone allocates directly: TT_FAULT is one of
 * its knobs, read by every call here, so its copies cannot wait on one.
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
