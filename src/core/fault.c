/* Test faults; see fault.h.  Calls are counted only while TT_FAULT is set,
 * so a run without it pays one knob look-up per call. */
#include "core/fault.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/knobs.h"

static const char *const names[] = {"write", "alloc", "launch", "submit", "host", "read", "coll"};
_Static_assert(sizeof names / sizeof names[0] == TT_FAULT_KINDS, "a name for every fault kind");
static atomic_long calls[TT_FAULT_KINDS];

int tt_fault_hit(tt_fault_kind kind)
{
    const char *spec = tt_knob_str(TT_KNOB_FAULT);
    if (!spec || !*spec) return 0;
    long call = atomic_fetch_add(&calls[kind], 1) + 1;
    size_t len = strlen(names[kind]);
    if (strncmp(spec, names[kind], len) != 0 || spec[len] != ':') return 0;
    return strtol(spec + len + 1, NULL, 10) == call;
}

void tt_fault_print_counts(FILE *out)
{
    const char *spec = tt_knob_str(TT_KNOB_FAULT);
    if (!spec || strcmp(spec, "count") != 0) return;
    fprintf(out, "TT_FAULT counts:");
    for (int k = 0; k < TT_FAULT_KINDS; k++)
        fprintf(out, "%s %s %ld", k ? "," : "", names[k], atomic_load(&calls[k]));
    fprintf(out, "\n");
}
