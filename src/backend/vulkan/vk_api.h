/* The Vulkan API as the backend calls it: the loader (libvulkan.so.1) is
 * opened at run time, not linked, so that a machine without it still runs
 * tiletrain on OpenCL and hears why Vulkan is missing.  Every vk* function
 * the backend calls is a pointer named like the function, filled by
 * tt_vk_load() (the loader's own) and tt_vk_load_instance() (the rest);
 * a function the backend starts to call goes into TT_VK_FUNCTIONS. */
#ifndef TT_VK_API_H
#define TT_VK_API_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "core/status.h"

/* Answered by the loader before an instance exists. */
#define TT_VK_LOADER_FUNCTIONS(X)                                                        \
    X(vkCreateInstance)                                                                  \
    X(vkEnumerateInstanceVersion)                                                        \
    X(vkEnumerateInstanceLayerProperties)                                                \
    X(vkEnumerateInstanceExtensionProperties)

/* Everything else, through vkGetInstanceProcAddr(instance). */
#define TT_VK_FUNCTIONS(X)                                                               \
    X(vkDestroyInstance)                                                                 \
    X(vkEnumeratePhysicalDevices)                                                        \
    X(vkGetPhysicalDeviceProperties)                                                     \
    X(vkGetPhysicalDeviceProperties2)                                                    \
    X(vkGetPhysicalDeviceFeatures)                                                       \
    X(vkGetPhysicalDeviceFeatures2)                                                      \
    X(vkGetPhysicalDeviceMemoryProperties)                                               \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                          \
    X(vkEnumerateDeviceExtensionProperties)                                              \
    X(vkCreateDevice)                                                                    \
    X(vkDestroyDevice)                                                                   \
    X(vkDeviceWaitIdle)                                                                  \
    X(vkGetDeviceQueue)                                                                  \
    X(vkQueueSubmit)                                                                     \
    X(vkQueueWaitIdle)                                                                   \
    X(vkCreateFence)                                                                     \
    X(vkDestroyFence)                                                                    \
    X(vkResetFences)                                                                     \
    X(vkWaitForFences)                                                                   \
    X(vkGetFenceStatus)                                                                  \
    X(vkAllocateMemory)                                                                  \
    X(vkFreeMemory)                                                                      \
    X(vkMapMemory)                                                                       \
    X(vkUnmapMemory)                                                                     \
    X(vkFlushMappedMemoryRanges)                                                         \
    X(vkInvalidateMappedMemoryRanges)                                                    \
    X(vkCreateBuffer)                                                                    \
    X(vkDestroyBuffer)                                                                   \
    X(vkGetBufferMemoryRequirements)                                                     \
    X(vkBindBufferMemory)                                                                \
    X(vkGetBufferDeviceAddress)                                                          \
    X(vkCreateShaderModule)                                                              \
    X(vkDestroyShaderModule)                                                             \
    X(vkCreatePipelineCache)                                                             \
    X(vkDestroyPipelineCache)                                                            \
    X(vkGetPipelineCacheData)                                                            \
    X(vkCreateComputePipelines)                                                          \
    X(vkDestroyPipeline)                                                                 \
    X(vkCreatePipelineLayout)                                                            \
    X(vkDestroyPipelineLayout)                                                           \
    X(vkCreateDescriptorSetLayout)                                                       \
    X(vkDestroyDescriptorSetLayout)                                                      \
    X(vkCreateDescriptorPool)                                                            \
    X(vkDestroyDescriptorPool)                                                           \
    X(vkResetDescriptorPool)                                                             \
    X(vkAllocateDescriptorSets)                                                          \
    X(vkUpdateDescriptorSets)                                                            \
    X(vkCreateCommandPool)                                                               \
    X(vkDestroyCommandPool)                                                              \
    X(vkAllocateCommandBuffers)                                                          \
    X(vkFreeCommandBuffers)                                                              \
    X(vkBeginCommandBuffer)                                                              \
    X(vkEndCommandBuffer)                                                                \
    X(vkResetCommandBuffer)                                                              \
    X(vkCmdBindPipeline)                                                                 \
    X(vkCmdBindDescriptorSets)                                                           \
    X(vkCmdPushConstants)                                                                \
    X(vkCmdDispatch)                                                                     \
    X(vkCmdPipelineBarrier)                                                              \
    X(vkCmdCopyBuffer)                                                                   \
    X(vkCmdFillBuffer)                                                                   \
    X(vkCreateQueryPool)                                                                 \
    X(vkDestroyQueryPool)                                                                \
    X(vkCmdResetQueryPool)                                                               \
    X(vkCmdWriteTimestamp)                                                               \
    X(vkGetQueryPoolResults)

#define TT_VK_DECLARE(name) extern PFN_##name name;
TT_VK_LOADER_FUNCTIONS(TT_VK_DECLARE)
TT_VK_FUNCTIONS(TT_VK_DECLARE)
extern PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#undef TT_VK_DECLARE

/* Opens the loader once ($TT_VULKAN_LOADER names another file, for tests);
 * TT_ERR_NO_DEVICE saying what to install when it cannot. */
tt_status tt_vk_load(void);
/* The instance-level and device-level functions through `instance`; one
 * the driver lacks stays NULL (the backend checks before it relies on an
 * optional one). */
void tt_vk_load_instance(VkInstance instance);

#endif
