/* Test faults; see fault.h. */
#include "core/fault.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/knobs.h"

static const char *const names[] = {"write", "alloc", "launch"};
static atomic_long calls[sizeof names / sizeof names[0]];

int tt_fault_hit(tt_fault_kind kind)
{
    const char *spec = tt_knob_str(TT_KNOB_FAULT);
    size_t len = strlen(names[kind]);
    if (!spec || strncmp(spec, names[kind], len) != 0 || spec[len] != ':') return 0;
    long n = strtol(spec + len + 1, NULL, 10);
    return n >= 1 && atomic_fetch_add(&calls[kind], 1) + 1 == n;
}
