/* Private state of the Vulkan backend, shared by its files:
 *   vk_errors.c   VkResult names, errors, validation messages
 *   vk_device.c   instance, device listing and selection, logical device
 *   vk_commands.c the command buffer: recording, barriers, submission
 *   vk_buffer.c   buffers and transfers
 *   vk_pipeline.c SPIR-V modules, their specialization constants, pipelines
 *   vk_pipeline_cache.c the pipeline cache on disk
 *   vk_launch.c   a tt_launch as bindings, push constants and a dispatch
 *   vk_address.c  the table of device addresses of addressed dispatches
 *   vk_blas.c     GEMM, im2col and col2im through shaders/blas/
 *   vk_backend.c  the table of functions and the constructor */
#ifndef TT_VK_INTERNAL_H
#define TT_VK_INTERNAL_H

#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "core/status.h"

/* Dispatches recorded before the command buffer is submitted (and the
 * descriptor sets they use are recycled). */
#define TT_VK_BATCH 256
/* Storage buffers a launch may bind (lavapipe's per-stage limit is 32). */
#define TT_VK_MAX_BINDINGS 32
/* Push constants a launch may use: the portable minimum. */
#define TT_VK_PUSH_BYTES 128
/* The binding of the addressed shaders' table of buffer addresses
 * (TT_ADDRESS_BINDING in shaders/common.glsl). */
#define TT_VK_ADDRESS_BINDING 32

typedef struct tt_vk_pipeline tt_vk_pipeline; /* vk_pipeline.c */

/* What the debug messenger saw (validation on). */
typedef struct tt_vk_messages {
    int enabled;          /* the validation layer is on */
    uint64_t count;       /* warnings and errors so far */
    uint64_t reported;    /* of those, already returned as errors */
    char first[1024];     /* the first one not yet reported */
} tt_vk_messages;

typedef struct tt_vk_backend {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties properties;
    VkPhysicalDeviceMemoryProperties memory;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    uint32_t memory_type;     /* of every buffer */
    int host_visible;         /* buffers are mapped: transfers are memcpy */
    int int64, storage8;      /* shaderInt64, storageBuffer8BitAccess enabled */
    int addresses;            /* bufferDeviceAddress enabled: buffers have addresses */
    int always_addressed;     /* TT_VULKAN_ADDRESSED=1: every launch with buffers addressed */
    uint32_t staging_type;    /* host-visible type for staging (when not) */

    VkCommandPool command_pool;
    VkCommandBuffer commands;
    VkFence fence;
    VkDescriptorPool descriptors;
    int recording;            /* commands begun, not yet submitted */
    int recorded;             /* commands recorded since the begin */
    int dispatches;           /* descriptor sets used since the begin */

    tt_vk_pipeline *pipelines; /* a list */
    VkPipelineCache pipeline_cache;
    char cache_file[1024];    /* "" without a cache folder */
    int cache_loaded;         /* a valid file was given to the driver */
    int cache_dirty;          /* pipelines were made since */
    tt_vk_messages messages;

    /* addressed dispatches (vk_address.c): one slot of buffer addresses per
     * descriptor set of a batch, recycled with them */
    VkBuffer address_ring;
    VkDeviceMemory address_memory;
    void *address_mapped;
    /* dispatches recorded with each shader variant (tests, measurements) */
    uint64_t bound_dispatches, addressed_dispatches;
} tt_vk_backend;

/* The storage behind a tt_buffer of `bytes`: whole 32-bit words, so a
 * shader may read the last bytes of a byte tensor (labels) as a word; the
 * accounting keeps the bytes asked for. */
static inline size_t tt_vk_storage_bytes(size_t bytes) { return (bytes + 3) / 4 * 4; }

/* One tt_buffer's handle. */
typedef struct tt_vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;             /* host_visible: the whole buffer */
    VkDeviceAddress address;  /* vk->addresses: the buffer's device address */
} tt_vk_buffer;

/* ---- vk_errors.c ---- */
/* "VK_ERROR_DEVICE_LOST" etc.; "VK_UNKNOWN_RESULT" for others. */
const char *tt_vk_result_name(VkResult result);
/* "OP failed: VK_NAME (N)": TT_ERR_BACKEND of backend "vulkan" keeping the
 * VkResult; TT_ERR_OUT_OF_MEMORY for VK_ERROR_OUT_OF_{HOST,DEVICE}_MEMORY. */
tt_status tt_error_vk(VkResult result, const char *fmt, ...) TT_PRINTF(2, 3);
/* The debug messenger's callback: counts warnings and errors into the
 * tt_vk_messages at user_data. */
VKAPI_ATTR VkBool32 VKAPI_CALL tt_vk_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                void *user_data);
/* An error for the validation messages not yet reported (NULL: none). */
tt_status tt_vk_messages_check(tt_vk_messages *messages, const char *during);

/* ---- vk_device.c ---- */
/* Every Vulkan device (tt_device_info, Vulkan's fields) and its handle. */
tt_status tt_vulkan_devices_list(tt_device_info **devices, int *count);
/* Opens the instance (validation per TT_VULKAN_VALIDATION), the device
 * `selector` picks, one compute queue; fills `info`. */
tt_status tt_vk_open(tt_vk_backend *vk, const char *selector, tt_device_info *info);
/* Destroys what tt_vk_open made (after everything made on the device). */
void tt_vk_close(tt_vk_backend *vk);

/* ---- vk_commands.c ---- */
/* Creates the command pool and buffer, fence and descriptor pool. */
tt_status tt_vk_commands_create(tt_vk_backend *vk);
void tt_vk_commands_destroy(tt_vk_backend *vk);
/* The command buffer, begun and with a barrier after the last recorded
 * command, ready for one more (a transfer or a dispatch). */
tt_status tt_vk_record(tt_vk_backend *vk, VkCommandBuffer *out);
/* A descriptor set of `layout` for the next dispatch; submits first when
 * the batch is full (so *commands may change: record after this). */
tt_status tt_vk_descriptor_set(tt_vk_backend *vk, VkDescriptorSetLayout layout,
                               VkDescriptorSet *out);
/* Submits what is recorded and waits for it; `during` names the caller in
 * errors.  Returns the validation messages seen so far as an error. */
tt_status tt_vk_flush(tt_vk_backend *vk, const char *during);

/* ---- vk_pipeline.c ---- */
/* The pipeline of (program, kernel, options, local size, TT_ARG_LOCAL
 * sizes, binding count, push-constant bytes, variant), made on first use.
 * The addressed variant (<kernel>.addressed) reaches its `bindings` buffers
 * through the table at TT_VK_ADDRESS_BINDING, its only binding. */
typedef struct tt_vk_pipeline_key {
    const char *program, *kernel, *options;
    uint32_t local[3];
    uint32_t local_words[TT_MAX_KERNEL_ARGS]; /* each TT_ARG_LOCAL's size in words */
    int local_count;
    int bindings;
    uint32_t push_bytes;
    int addressed;
} tt_vk_pipeline_key;
tt_status tt_vk_pipeline_get(tt_backend *backend, const tt_vk_pipeline_key *key,
                             VkPipeline *pipeline, VkPipelineLayout *layout,
                             VkDescriptorSetLayout *set_layout);
void tt_vk_pipelines_release(tt_vk_backend *vk);

/* ---- vk_pipeline_cache.c ---- */
/* Creates vk->pipeline_cache from this device's file, if valid. */
tt_status tt_vk_pipeline_cache_open(tt_vk_backend *vk, const tt_device_info *device);
/* Saves it (when pipelines were made; best effort) and destroys it. */
void tt_vk_pipeline_cache_close(tt_vk_backend *vk);

/* ---- vk_launch.c ---- */
tt_status tt_vk_launch(tt_backend *backend, const tt_launch *launch);

/* ---- vk_address.c ---- */
/* Writes the `count` addresses of a dispatch into slot `slot` (the index of
 * its descriptor set in the batch) of the table, made on first use, and
 * gives that slot as the descriptor of TT_VK_ADDRESS_BINDING. */
tt_status tt_vk_address_slot(tt_vk_backend *vk, int slot, const VkDeviceAddress *addresses,
                             int count, VkDescriptorBufferInfo *out);
void tt_vk_addresses_release(tt_vk_backend *vk);

/* ---- vk_blas.c ---- */
tt_status tt_vk_gemm(tt_backend *backend, const tt_gemm *gemm);
tt_status tt_vk_im2col(tt_backend *backend, const tt_im2col *geometry);
tt_status tt_vk_col2im(tt_backend *backend, const tt_im2col *geometry);

/* ---- vk_buffer.c ---- */
tt_status tt_vk_buffer_create(tt_backend *backend, tt_buffer *buf);
void tt_vk_buffer_release(tt_backend *backend, tt_buffer *buf);
tt_status tt_vk_write(tt_backend *backend, tt_mem dst, const void *src, size_t bytes);
tt_status tt_vk_read(tt_backend *backend, void *dst, tt_mem src, size_t bytes);
tt_status tt_vk_copy(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes);

/* Whether shaders of `program` are built in (or under TT_SHADER_DIR). */
int tt_vk_has_program(const tt_backend *backend, const char *program);

#endif
