/* The Vulkan loader opened at run time (see vk_api.h). */
#include "backend/vulkan/vk_api.h"

#include <dlfcn.h>
#include <stddef.h>

#include "core/knobs.h"

#define TT_VK_DEFINE(name) PFN_##name name;
TT_VK_LOADER_FUNCTIONS(TT_VK_DEFINE)
TT_VK_FUNCTIONS(TT_VK_DEFINE)
PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#undef TT_VK_DEFINE

static void *library;

tt_status tt_vk_load(void)
{
    if (vkGetInstanceProcAddr) return NULL;
    const char *path = tt_knob_str(TT_KNOB_VULKAN_LOADER);
    if (!path || !*path) path = "libvulkan.so.1";
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "the Vulkan loader '%s' could not be opened (%s): install it "
                            "(Debian: libvulkan1, with a driver such as mesa-vulkan-drivers) "
                            "or use the OpenCL devices (--backend opencl)",
                            path, why ? why : "no reason given");
    }
    /* POSIX allows a function pointer through void *; C11 does not say */
    void *symbol = dlsym(library, "vkGetInstanceProcAddr");
    if (!symbol) {
        dlclose(library);
        library = NULL;
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "'%s' is not a Vulkan loader (no vkGetInstanceProcAddr); install "
                            "libvulkan1 or use --backend opencl", path);
    }
    *(void **)&vkGetInstanceProcAddr = symbol;
#define TT_VK_GLOBAL(name) name = (PFN_##name)vkGetInstanceProcAddr(NULL, #name);
    TT_VK_LOADER_FUNCTIONS(TT_VK_GLOBAL)
#undef TT_VK_GLOBAL
    if (!vkCreateInstance || !vkEnumerateInstanceLayerProperties) {
        vkGetInstanceProcAddr = NULL;
        dlclose(library);
        library = NULL;
        return tt_error_new(TT_ERR_NO_DEVICE, "the Vulkan loader '%s' does not answer "
                            "vkCreateInstance; reinstall libvulkan1 or use --backend opencl",
                            path);
    }
    return NULL;
}

void tt_vk_load_instance(VkInstance instance)
{
#define TT_VK_INSTANCE(name) name = (PFN_##name)vkGetInstanceProcAddr(instance, #name);
    TT_VK_FUNCTIONS(TT_VK_INSTANCE)
#undef TT_VK_INSTANCE
}
