/* The Vulkan instance (with the Khronos validation layer and a debug
 * messenger when TT_VULKAN_VALIDATION=1), the devices it offers described
 * as tt_device_info, the choice of one by the --device selector rules, and
 * the logical device with one compute queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/device_match.h"
#include "backend/vulkan/vk_internal.h"
#include "backend/vulkan/vk_memory_type.h"
#include "core/alloc.h"
#include "core/knobs.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"
#define MAX_DEVICES 16

static int layer_present(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkLayerProperties *layers = tt_calloc(n, sizeof *layers);
    int found = 0;
    if (layers && vkEnumerateInstanceLayerProperties(&n, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

/* The instance; with `messages`, validation and a messenger counting into it. */
static tt_status create_instance(tt_vk_messages *messages, VkInstance *instance,
                                 VkDebugUtilsMessengerEXT *messenger)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "tiletrain",
                             .apiVersion = VK_API_VERSION_1_2};
    VkDebugUtilsMessengerCreateInfoEXT watch = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = tt_vk_on_message,
        .pUserData = messages};
    TT_TRY(tt_vk_load());
    const char *layer = VALIDATION_LAYER, *extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pApplicationInfo = &app};
    if (messages) {
        if (!layer_present(VALIDATION_LAYER))
            return tt_error_new(TT_ERR_UNSUPPORTED,
                                "TT_VULKAN_VALIDATION=1 needs the Khronos validation layer (%s): "
                                "apt-get install vulkan-validationlayers",
                                VALIDATION_LAYER);
        info.pNext = &watch;
        info.enabledLayerCount = 1;
        info.ppEnabledLayerNames = &layer;
        info.enabledExtensionCount = 1;
        info.ppEnabledExtensionNames = &extension;
    }
    VkResult r = vkCreateInstance(&info, NULL, instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "no Vulkan driver found: install one for your GPU, or lavapipe for "
                            "the CPU (apt-get install mesa-vulkan-drivers)");
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateInstance");
    tt_vk_load_instance(*instance);
    if (messages) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(*instance, "vkCreateDebugUtilsMessengerEXT");
        r = create ? create(*instance, &watch, NULL, messenger) : VK_ERROR_EXTENSION_NOT_PRESENT;
        if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateDebugUtilsMessengerEXT");
        messages->enabled = 1;
    }
    return NULL;
}

static tt_status physical_devices(VkInstance instance, VkPhysicalDevice *devices, uint32_t *count)
{
    *count = MAX_DEVICES;
    VkResult r = vkEnumeratePhysicalDevices(instance, count, devices);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return tt_error_vk(r, "vkEnumeratePhysicalDevices");
    if (*count == 0)
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "the Vulkan loader offers no device: check the driver, or install "
                            "lavapipe for the CPU (apt-get install mesa-vulkan-drivers)");
    return NULL;
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x1002: return "AMD";
    case 0x10DE: return "NVIDIA";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x1010: return "Imagination";
    case 0x10005: return "Mesa";
    default: return NULL;
    }
}

/* Whether the device's memory is the host's (its buffers mapped). */
static int shares_host_memory(VkPhysicalDeviceType t)
{
    return t == VK_PHYSICAL_DEVICE_TYPE_CPU || t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
}

static void describe(VkPhysicalDevice physical, tt_device_info *info)
{
    VkPhysicalDeviceDriverProperties driver = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &m3};
    VkPhysicalDeviceProperties plain;
    vkGetPhysicalDeviceProperties(physical, &plain);
    if (plain.apiVersion >= VK_API_VERSION_1_2) m3.pNext = &driver;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = plain.apiVersion >= VK_API_VERSION_1_2 ? &f12 : NULL};
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(physical, &mem);

    memset(info, 0, sizeof *info);
    uint32_t loader = VK_API_VERSION_1_0; /* a 1.0 loader has no vkEnumerateInstanceVersion */
    if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&loader);
    snprintf(info->platform, sizeof info->platform, "Vulkan");
    snprintf(info->platform_version, sizeof info->platform_version, "Vulkan loader %u.%u.%u",
             VK_API_VERSION_MAJOR(loader), VK_API_VERSION_MINOR(loader),
             VK_API_VERSION_PATCH(loader));
    snprintf(info->name, sizeof info->name, "%.127s", p->deviceName);
    const char *vendor = vendor_name(p->vendorID);
    if (vendor) snprintf(info->vendor, sizeof info->vendor, "%s", vendor);
    else snprintf(info->vendor, sizeof info->vendor, "0x%04x", p->vendorID);
    if (driver.driverName[0])
        snprintf(info->driver_version, sizeof info->driver_version, "%.60s %.60s",
                 driver.driverName, driver.driverInfo);
    else
        snprintf(info->driver_version, sizeof info->driver_version, "0x%08x", p->driverVersion);
    snprintf(info->device_version, sizeof info->device_version, "Vulkan %u.%u.%u",
             VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion),
             VK_API_VERSION_PATCH(p->apiVersion));
    VkPhysicalDeviceType t = p->deviceType;
    snprintf(info->type, sizeof info->type, "%s",
             t == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                     t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                     t == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU
                 ? "GPU"
             : t == VK_PHYSICAL_DEVICE_TYPE_CPU ? "CPU"
                                                : "OTHER");
    info->integrated = t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    info->compute_units = 1; /* Vulkan does not say */
    /* the heap of the type the buffers will take (choose_memory; storage
     * buffers may live in any type on the drivers we know) */
    int type = tt_vk_memory_type_pick(&mem, ~0u, shares_host_memory(t) ? tt_vk_want_shared
                                                                        : tt_vk_want_buffers);
    if (type >= 0) info->global_mem_bytes = mem.memoryHeaps[mem.memoryTypes[type].heapIndex].size;
    info->max_alloc_bytes = m3.maxMemoryAllocationSize;
    if (info->global_mem_bytes && info->max_alloc_bytes > info->global_mem_bytes)
        info->max_alloc_bytes = info->global_mem_bytes;
    info->local_mem_bytes = p->limits.maxComputeSharedMemorySize;
    info->base_align_bytes = (uint32_t)p->limits.minStorageBufferOffsetAlignment;
    /* with buffer device addresses a kernel reaches a whole allocation
     * (vk_launch.c), else one binding's maxStorageBufferRange */
    info->max_binding_bytes = p->limits.maxStorageBufferRange;
    if (f12.bufferDeviceAddress && tt_knob_flag(TT_KNOB_VULKAN_ADDRESSED, -1) != 0)
        info->max_binding_bytes = info->max_alloc_bytes;
    if (info->max_binding_bytes > info->max_alloc_bytes) info->max_binding_bytes = info->max_alloc_bytes;
    info->max_work_group_size = p->limits.maxComputeWorkGroupInvocations;
    info->fp16 = f12.shaderFloat16 != 0;
    info->fp64 = f2.features.shaderFloat64 != 0;
}

tt_status tt_vulkan_devices_list(tt_device_info **devices, int *count)
{
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical[MAX_DEVICES];
    uint32_t n = 0;
    tt_status status = NULL;
    *devices = NULL;
    *count = 0;
    TT_CHECK(create_instance(NULL, &instance, NULL));
    TT_CHECK(physical_devices(instance, physical, &n));
    tt_device_info *list = tt_calloc(n, sizeof *list);
    if (!list) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "listing Vulkan devices: out of host memory");
        goto cleanup;
    }
    for (uint32_t i = 0; i < n; i++) {
        describe(physical[i], &list[i]);
        list[i].index = (int)i;
    }
    *devices = list;
    *count = (int)n;
cleanup:
    if (instance) vkDestroyInstance(instance, NULL);
    return status;
}

/* The device `selector` names among `physical` (its description in info). */
static tt_status pick(const VkPhysicalDevice *physical, uint32_t n, const char *selector,
                      int *index, tt_device_info *info)
{
    tt_device_info *list = tt_calloc(n, sizeof *list);
    if (!list)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "listing Vulkan devices: out of host memory");
    for (uint32_t i = 0; i < n; i++) {
        describe(physical[i], &list[i]);
        list[i].index = (int)i;
    }
    tt_status status = NULL;
    *index = tt_device_match(list, (int)n, selector, 1);
    if (*index < 0) status = tt_device_match_error(list, (int)n, "--device", selector, "Vulkan");
    else *info = list[*index];
    free(list);
    return status;
}

/* The memory types a buffer of `usage` may live in (a bit each): the same
 * for every buffer of that usage whatever its size, as the specification
 * promises for vkGetBufferMemoryRequirements. */
static tt_status allowed_types(tt_vk_backend *vk, VkBufferUsageFlags usage, uint32_t *out)
{
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = 256,
                               .usage = usage,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkBuffer probe;
    VkResult r = vkCreateBuffer(vk->device, &info, NULL, &probe);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateBuffer(probing memory types)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, probe, &req);
    vkDestroyBuffer(vk->device, probe, NULL);
    *out = req.memoryTypeBits;
    return NULL;
}

/* The memory type of every buffer, of those the driver allows for them
 * (vk_memory_type.h): host-visible and coherent on devices that share the
 * host's memory (CPUs, integrated GPUs), mapped; else device-local, with a
 * host-visible, cached type for staging. */
static tt_status choose_memory(tt_vk_backend *vk, const tt_device_info *info)
{
    uint32_t buffers, staging;
    TT_TRY(allowed_types(vk, tt_vk_buffer_usage(vk), &buffers));
    TT_TRY(allowed_types(vk, TT_VK_STAGING_USAGE, &staging));
    int shared = shares_host_memory(vk->properties.deviceType);
    if (tt_knob_flag(TT_KNOB_VULKAN_STAGING, 0)) shared = 0; /* tests: the discrete GPUs' path */
    int mapped = tt_vk_memory_type_pick(&vk->memory, buffers, tt_vk_want_shared);
    int local = tt_vk_memory_type_pick(&vk->memory, buffers, tt_vk_want_buffers);
    int stage = tt_vk_memory_type_pick(&vk->memory, staging, tt_vk_want_staging);
    if (shared && mapped >= 0) {
        vk->memory_type = (uint32_t)mapped;
        vk->host_visible = 1;
    } else if (local >= 0 && stage >= 0) {
        vk->memory_type = (uint32_t)local;
        vk->staging_type = (uint32_t)stage;
    } else {
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "Vulkan device '%s' has no device-local and host-visible memory "
                            "types to use",
                            info->name);
    }
    return NULL;
}

tt_status tt_vk_open(tt_vk_backend *vk, const char *selector, tt_device_info *info)
{
    VkPhysicalDevice physical[MAX_DEVICES];
    uint32_t n = 0;
    int index = -1;
    int validation = tt_knob_flag(TT_KNOB_VULKAN_VALIDATION, 0);
    TT_TRY(create_instance(validation ? &vk->messages : NULL, &vk->instance, &vk->messenger));
    TT_TRY(physical_devices(vk->instance, physical, &n));
    TT_TRY(pick(physical, n, selector, &index, info));
    vk->physical = physical[index];
    vkGetPhysicalDeviceProperties(vk->physical, &vk->properties);
    vkGetPhysicalDeviceMemoryProperties(vk->physical, &vk->memory);
    if (vk->properties.apiVersion < VK_API_VERSION_1_2)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "Vulkan device '%s' offers Vulkan %s; tiletrain's shaders need 1.2",
                            info->name, info->device_version);

    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &families, NULL);
    VkQueueFamilyProperties props[16];
    if (families > 16) families = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &families, props);
    int family = -1;
    for (uint32_t i = 0; i < families && family < 0; i++)
        if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = (int)i;
    if (family < 0)
        return tt_error_new(TT_ERR_UNSUPPORTED, "Vulkan device '%s' has no compute queue",
                            info->name);
    vk->queue_family = (uint32_t)family;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = vk->queue_family,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    /* the features shaders may use where the device has them: 64-bit
     * integers (TT_ARG_U64 push constants), 8/16-bit storage (labels) and
     * buffer device addresses (the addressed shaders; TT_VULKAN_ADDRESSED=0
     * does without them, as on a device that lacks them) */
    VkPhysicalDeviceVulkan12Features has12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 has = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = &has12};
    vkGetPhysicalDeviceFeatures2(vk->physical, &has);
    VkPhysicalDeviceVulkan12Features on12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .storageBuffer8BitAccess = has12.storageBuffer8BitAccess,
        .shaderInt8 = has12.shaderInt8};
    int addressed = tt_knob_flag(TT_KNOB_VULKAN_ADDRESSED, -1);
    if (addressed == 1 && !has12.bufferDeviceAddress)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "TT_VULKAN_ADDRESSED=1, but Vulkan device '%s' has no buffer device "
                            "addresses (bufferDeviceAddress)",
                            info->name);
    on12.bufferDeviceAddress = addressed != 0 ? has12.bufferDeviceAddress : VK_FALSE;
    VkPhysicalDeviceFeatures2 on = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &on12};
    on.features.shaderInt64 = has.features.shaderInt64;
    on.features.shaderInt16 = has.features.shaderInt16;
    vk->int64 = has.features.shaderInt64 == VK_TRUE;
    vk->storage8 = has12.storageBuffer8BitAccess == VK_TRUE;
    vk->addresses = on12.bufferDeviceAddress == VK_TRUE;
    vk->always_addressed = addressed == 1;
    VkDeviceCreateInfo create = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                 .pNext = &on,
                                 .queueCreateInfoCount = 1,
                                 .pQueueCreateInfos = &queue};
    VkResult r = vkCreateDevice(vk->physical, &create, NULL, &vk->device);
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreateDevice('%s')", info->name);
    vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
    TT_TRY(choose_memory(vk, info));
    tt_vk_pool_init(vk, &vk->buffer_pool, vk->memory_type, vk->host_visible,
                    info->max_alloc_bytes);
    tt_vk_pool_init(vk, &vk->staging_pool, vk->staging_type, 1, info->max_alloc_bytes);
    return tt_vk_messages_check(&vk->messages, "opening the Vulkan device");
}

void tt_vk_close(tt_vk_backend *vk)
{
    if (vk->device) {
        tt_vk_pool_release(vk, &vk->buffer_pool);
        tt_vk_pool_release(vk, &vk->staging_pool);
        vkDestroyDevice(vk->device, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance) vkDestroyInstance(vk->instance, NULL);
    vk->device = VK_NULL_HANDLE;
    vk->messenger = VK_NULL_HANDLE;
    vk->instance = VK_NULL_HANDLE;
}
