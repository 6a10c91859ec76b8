/* The Vulkan backend's constructor in a build without Vulkan (CMake picks
 * this file instead of src/backend/vulkan/ when TT_VULKAN is OFF). */
#include "backend/backend_internal.h"
#include "core/status.h"

tt_status tt_vulkan_backend_create(const char *selector, int profiling, tt_backend **out)
{
    (void)selector;
    (void)profiling;
    *out = NULL;
    return tt_error_new(TT_ERR_UNSUPPORTED,
                        "the vulkan backend is not available: built without Vulkan: "
                        "-DTT_VULKAN=ON (it needs libvulkan-dev and glslc)");
}

tt_status tt_vulkan_devices_list(tt_device_info **devices, int *count)
{
    *devices = NULL;
    *count = 0;
    return tt_error_new(TT_ERR_UNSUPPORTED, "built without Vulkan: -DTT_VULKAN=ON (it needs "
                        "libvulkan-dev and glslc)");
}

int tt_vulkan_has_program(const char *program)
{
    (void)program;
    return 0;
}
