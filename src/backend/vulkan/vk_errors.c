/* VkResult names, the Vulkan backend's errors built from them, and the
 * validation messages the debug messenger turns into errors. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"

const char *tt_vk_result_name(VkResult result)
{
    switch (result) {
#define NAME(r) case r: return #r
        NAME(VK_SUCCESS);
        NAME(VK_NOT_READY);
        NAME(VK_TIMEOUT);
        NAME(VK_EVENT_SET);
        NAME(VK_EVENT_RESET);
        NAME(VK_INCOMPLETE);
        NAME(VK_ERROR_OUT_OF_HOST_MEMORY);
        NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY);
        NAME(VK_ERROR_INITIALIZATION_FAILED);
        NAME(VK_ERROR_DEVICE_LOST);
        NAME(VK_ERROR_MEMORY_MAP_FAILED);
        NAME(VK_ERROR_LAYER_NOT_PRESENT);
        NAME(VK_ERROR_EXTENSION_NOT_PRESENT);
        NAME(VK_ERROR_FEATURE_NOT_PRESENT);
        NAME(VK_ERROR_INCOMPATIBLE_DRIVER);
        NAME(VK_ERROR_TOO_MANY_OBJECTS);
        NAME(VK_ERROR_FORMAT_NOT_SUPPORTED);
        NAME(VK_ERROR_FRAGMENTED_POOL);
        NAME(VK_ERROR_UNKNOWN);
        NAME(VK_ERROR_OUT_OF_POOL_MEMORY);
        NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE);
        NAME(VK_ERROR_FRAGMENTATION);
        NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS);
        NAME(VK_PIPELINE_COMPILE_REQUIRED);
        NAME(VK_ERROR_VALIDATION_FAILED_EXT);
        NAME(VK_ERROR_INVALID_SHADER_NV);
#undef NAME
    default: return "VK_UNKNOWN_RESULT";
    }
}

tt_status tt_error_vk(VkResult result, const char *fmt, ...)
{
    tt_code kind = result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY
                       ? TT_ERR_OUT_OF_MEMORY
                       : TT_ERR_BACKEND;
    va_list ap;
    va_start(ap, fmt);
    tt_status s =
        tt_error_backend_v("vulkan", (int)result, tt_vk_result_name(result), kind, fmt, ap);
    va_end(ap);
    /* a lost device takes every later call with it: say so plainly */
    if (result == VK_ERROR_DEVICE_LOST)
        s = tt_error_prefix(s, "the Vulkan device was lost (a driver reset, a GPU hang or a "
                               "fault in a shader) and nothing more can run on it; the last "
                               "checkpoint is kept: restart, with --resume to continue "
                               "training");
    return s;
}

VKAPI_ATTR VkBool32 VKAPI_CALL tt_vk_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                void *user_data)
{
    tt_vk_messages *m = user_data;
    int validation = (types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) != 0;
    int counts = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ||
                 (validation && severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT);
    if (!counts) return VK_FALSE;
    /* pipelines are made on several threads at once (tt_vk_build_prepared) */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (m->count == m->reported)
        snprintf(m->first, sizeof m->first, "%s",
                 data && data->pMessage ? data->pMessage : "(no text)");
    m->count++;
    pthread_mutex_unlock(&lock);
    return VK_FALSE;
}

tt_status tt_vk_messages_check(tt_vk_messages *m, const char *during)
{
    if (m->count == m->reported) return NULL;
    uint64_t fresh = m->count - m->reported;
    m->reported = m->count;
    return tt_error_new(TT_ERR_BACKEND,
                        "Vulkan validation (TT_VULKAN_VALIDATION) reported %llu message%s by "
                        "the end of %s; the first: %s",
                        (unsigned long long)fresh, fresh == 1 ? "" : "s", during, m->first);
}
