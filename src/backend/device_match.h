/* The device selector's rules, shared by the OpenCL and Vulkan device
 * lists: which entry of a list of tt_device_info a selector names. */
#ifndef TT_DEVICE_MATCH_H
#define TT_DEVICE_MATCH_H

#include "tiletrain.h"

/* How a device ranks for the default choice: 3 a discrete GPU, 2 an
 * integrated one (a laptop's iGPU beside its discrete GPU, an APU), 1
 * anything else (CPUs: PoCL, lavapipe). */
int tt_device_rank(const tt_device_info *d);
/* The index of the default device in `list`: the highest rank, then the
 * most global memory, then the first; -1 for an empty list. */
int tt_device_default(const tt_device_info *list, int n);
/* Whether the default of list a (na entries) is better than list b's: a
 * higher rank, or GPUs of the same rank and a with more memory (ties, and
 * CPUs of both, go to b). */
int tt_device_default_better(const tt_device_info *a, int na, const tt_device_info *b, int nb);

/* The index in `list` (n entries) that `selector` names, or -1: NULL or ""
 * is tt_device_default's; digits are an index; anything else
 * is the first entry whose name, vendor, platform, platform version or
 * device version (and driver version with `match_driver`) contains it,
 * case-insensitively. */
int tt_device_match(const tt_device_info *list, int n, const char *selector, int match_driver);

/* TT_ERR_NO_DEVICE: "<from> '<selector>' matches no <api> device; ...",
 * listing the devices there are. */
tt_status tt_device_match_error(const tt_device_info *list, int n, const char *from,
                                const char *selector, const char *api);

#endif
