/* The one thing the harness needs from inside the Vulkan backend: its
 * validation messages (tests/harness_vulkan.c; harness_vulkan_off.c in a
 * build without Vulkan). */
#ifndef TT_TESTS_HARNESS_VULKAN_H
#define TT_TESTS_HARNESS_VULKAN_H

#include <stdint.h>

#include "backend/backend.h"

/* For a Vulkan backend: 1 with the validation layer on, *count the messages
 * it has reported since the backend was made and *first the first of them
 * not yet returned as an error (else the last so returned); 0 with the
 * layer off.  -1 for any other backend. */
int th_vulkan_messages(const tt_backend *be, uint64_t *count, const char **first);

#endif
