/* The device selector's rules, shared by the OpenCL and Vulkan device
 * lists: which entry of a list of tt_device_info a selector names. */
#ifndef TT_DEVICE_MATCH_H
#define TT_DEVICE_MATCH_H

#include "tiletrain.h"

/* The index in `list` (n entries) that `selector` names, or -1: NULL or ""
 * is the first "GPU" (else entry 0); digits are an index; anything else
 * is the first entry whose name, vendor, platform, platform version or
 * device version (and driver version with `match_driver`) contains it,
 * case-insensitively. */
int tt_device_match(const tt_device_info *list, int n, const char *selector, int match_driver);

/* TT_ERR_NO_DEVICE: "<from> '<selector>' matches no <api> device; ...",
 * listing the devices there are. */
tt_status tt_device_match_error(const tt_device_info *list, int n, const char *from,
                                const char *selector, const char *api);

#endif
