/* Host allocations that a test can fail; see alloc.h. */
#include "core/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"

/* 1 (errno ENOMEM) when TT_FAULT names this allocation. */
static int refused(void)
{
    if (!tt_fault_hit(TT_FAULT_HOST)) return 0;
    errno = ENOMEM;
    return 1;
}

void *tt_malloc(size_t bytes) { return refused() ? NULL : malloc(bytes); }

void *tt_calloc(size_t count, size_t size) { return refused() ? NULL : calloc(count, size); }

void *tt_realloc(void *p, size_t bytes) { return refused() ? NULL : realloc(p, bytes); }

char *tt_strdup(const char *text) { return refused() ? NULL : strdup(text); }
