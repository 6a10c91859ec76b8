/*
 * A Vulkan 1.0 loader, for tests/cli/check.sh: the system's libvulkan.so.1
 * behind vkGetInstanceProcAddr, except that it answers no
 * vkEnumerateInstanceVersion (Vulkan 1.1's), as a 1.0 loader does.  Run
 * with TT_VULKAN_LOADER=<this library>.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name);

PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name)
{
    static PFN_vkGetInstanceProcAddr real;
    if (!real) {
        void *library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
        void *symbol = library ? dlsym(library, "vkGetInstanceProcAddr") : NULL;
        if (!symbol) return NULL;
        *(void **)&real = symbol; /* POSIX allows a function pointer through void * */
    }
    if (strcmp(name, "vkEnumerateInstanceVersion") == 0) return NULL;
    return real(instance, name);
}
