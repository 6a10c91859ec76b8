/* A build without the Vulkan backend: no backend is a Vulkan one (see
 * harness_vulkan.h). */
#include "harness_vulkan.h"

int th_vulkan_messages(const tt_backend *be, uint64_t *count, const char **first)
{
    (void)be;
    *count = 0;
    *first = "";
    return -1;
}
