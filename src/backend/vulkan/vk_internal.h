/* Private state of the Vulkan backend, shared by its files:
 *   vk_errors.c   VkResult names, errors, validation messages
 *   vk_device.c   instance, device listing and selection, logical device
 *   vk_commands.c the command buffer: recording, barriers, submission
 *   vk_memory.c   device memory in blocks, sub-allocated
 *   vk_buffer.c   buffers and transfers
 *   vk_pipeline.c SPIR-V modules, their specialization constants, pipelines
 *   vk_pipeline_cache.c the pipeline cache on disk
 *   vk_launch.c   a tt_launch as bindings, push constants and a dispatch
 *   vk_profile.c  timestamp queries around dispatches (profiling)
 *   vk_address.c  the table of device addresses of addressed dispatches
 *   vk_blas.c     GEMM, im2col and col2im through shaders/blas/
 *   vk_backend.c  the table of functions and the constructor
 *   vk_loader.c   the Vulkan loader opened at run time (vk_api.h) */
#ifndef TT_VK_INTERNAL_H
#define TT_VK_INTERNAL_H

#include "backend/vulkan/vk_api.h"

#include "backend/backend.h"
#include "backend/profile.h"
#include "core/status.h"

/* Dispatches recorded before the command buffer is submitted (and the
 * descriptor sets they use are recycled). */
#define TT_VK_BATCH 256
/* Command buffers in the ring (vk_commands.c): while the device runs one
 * submitted batch, the host records the next. */
#define TT_VK_FRAMES 2
/* Storage buffers a launch may bind (lavapipe's per-stage limit is 32). */
#define TT_VK_MAX_BINDINGS 32
/* Push constants a launch may use: the portable minimum. */
#define TT_VK_PUSH_BYTES 128
/* The binding of the addressed shaders' table of buffer addresses
 * (TT_ADDRESS_BINDING in shaders/common.glsl). */
#define TT_VK_ADDRESS_BINDING 32

typedef struct tt_vk_pipeline tt_vk_pipeline; /* vk_pipeline.c */
typedef struct tt_vk_block tt_vk_block;       /* vk_memory.c */

/* Device memory of one type in blocks that buffers are placed in
 * (vk_memory.c). */
typedef struct tt_vk_pool {
    uint32_t type;              /* the memory type of its blocks */
    int map;                    /* blocks stay mapped while they live */
    VkDeviceSize block_bytes;   /* a full block; a need above an eighth gets its own */
    tt_vk_block *blocks;        /* a list, oldest first */
    int block_count;
    VkDeviceSize held, held_peak; /* device bytes in its blocks: now, most */
} tt_vk_pool;

/* What the debug messenger saw (validation on). */
typedef struct tt_vk_messages {
    int enabled;          /* the validation layer is on */
    uint64_t count;       /* warnings and errors so far */
    uint64_t reported;    /* of those, already returned as errors */
    char first[1024];     /* the first one not yet reported */
} tt_vk_messages;

/* Profiling (tt_backend_request.profiling): a timestamp before and after
 * every dispatch of the recorded commands, read back when they complete. */
typedef struct tt_vk_profiler {
    VkQueryPool pool;         /* VK_NULL_HANDLE without profiling */
    uint32_t capacity;        /* queries in the pool: two per dispatch of a batch */
    uint32_t used;            /* queries the recorded commands write */
    char (*kinds)[TT_PROFILE_KIND_BYTES]; /* the kind of each timed dispatch (capacity / 2) */
    uint64_t *ticks;          /* read-back space (capacity) */
    double ns_per_tick;       /* the device's timestampPeriod */
    uint64_t valid_mask;      /* the queue family's timestampValidBits, as a mask */
    tt_profile *profile;      /* the backend's, where the durations go */
} tt_vk_profiler;

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
    tt_vk_pool buffer_pool;   /* of memory_type: every tt_buffer */
    tt_vk_pool staging_pool;  /* of staging_type: staging buffers */
    VkDeviceSize heap_held[VK_MAX_MEMORY_HEAPS]; /* bytes in blocks, per heap */

    VkCommandPool command_pool;
    /* the ring (vk_commands.c): each frame a command buffer, the fence of
     * its submission and the descriptor sets of its dispatches */
    struct tt_vk_frame {
        VkCommandBuffer commands;
        VkFence fence;
        VkDescriptorPool descriptors;
        int submitted;        /* in flight: its fence not yet waited for */
    } frames[TT_VK_FRAMES];
    int frame;                /* the one recorded now */
    int recording;            /* its commands begun, not yet submitted */
    int recorded;             /* commands recorded since the begin */
    int dispatches;           /* descriptor sets it used since the begin */
    int lost;                 /* a submission or a wait said VK_ERROR_DEVICE_LOST */
    char lost_at[160];        /* that call, for every later call's error */

    tt_vk_pipeline *pipelines; /* a list */
    tt_vk_pipeline *prepared;  /* noted by prepared launches, not yet made */
    VkPipelineCache pipeline_cache;
    char cache_file[1024];    /* "" without a cache folder */
    int cache_loaded;         /* a valid file was given to the driver */
    int cache_dirty;          /* pipelines were made since */
    tt_vk_messages messages;
    tt_vk_profiler profiler;

    /* addressed dispatches (vk_address.c): one slot of buffer addresses per
     * descriptor set of a batch, recycled with them */
    VkBuffer address_ring;
    VkDeviceMemory address_memory;
    void *address_mapped;
    /* dispatches recorded with each shader variant (tests, measurements) */
    uint64_t bound_dispatches, addressed_dispatches;
} tt_vk_backend;

/* The usage of every tt_buffer's VkBuffer, and of a staging buffer's. */
static inline VkBufferUsageFlags tt_vk_buffer_usage(const tt_vk_backend *vk)
{
    return VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
           VK_BUFFER_USAGE_TRANSFER_DST_BIT |
           (vk->addresses ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0);
}
#define TT_VK_STAGING_USAGE (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/* The storage behind a tt_buffer of `bytes`: whole 32-bit words, so a
 * shader may read the last bytes of a byte tensor (labels) as a word; the
 * accounting keeps the bytes asked for. */
static inline size_t tt_vk_storage_bytes(size_t bytes) { return (bytes + 3) / 4 * 4; }

/* A place in a block of a pool. */
typedef struct tt_vk_allocation {
    tt_vk_block *block;
    VkDeviceMemory memory;    /* the block's */
    VkDeviceSize offset, size; /* in the block; size rounded to the alignment */
    char *mapped;             /* mapped pools: the place's first byte */
} tt_vk_allocation;

/* One tt_buffer's handle. */
typedef struct tt_vk_buffer {
    VkBuffer buffer;
    tt_vk_allocation memory;  /* bound at memory.offset of memory.memory */
    void *mapped;             /* host_visible: the buffer's first byte */
    VkDeviceAddress address;  /* vk->addresses: the buffer's device address */
} tt_vk_buffer;

/* A pool's blocks, counted (tests, the memory report). */
typedef struct tt_vk_pool_stats {
    int blocks, dedicated, empty;
    int live;                 /* places handed out */
    int free_ranges;
    VkDeviceSize free_bytes;  /* in shared blocks */
    VkDeviceSize dedicated_bytes;
    VkDeviceSize held, held_peak;
} tt_vk_pool_stats;

/* ---- vk_errors.c ---- */
/* "VK_ERROR_DEVICE_LOST" etc.; "VK_UNKNOWN_RESULT" for others. */
const char *tt_vk_result_name(VkResult result);
/* "OP failed: VK_NAME (N)": TT_ERR_BACKEND of backend "vulkan" keeping the
 * VkResult; TT_ERR_OUT_OF_MEMORY for VK_ERROR_OUT_OF_{HOST,DEVICE}_MEMORY
 * (as OpenCL's allocation failures); VK_ERROR_DEVICE_LOST, from any call,
 * is prefixed "the Vulkan device was lost ...; the last checkpoint is
 * kept ...". */
tt_status tt_error_vk(VkResult result, const char *fmt, ...) TT_PRINTF(2, 3);
/* The debug messenger's callback: counts warnings and errors into the
 * tt_vk_messages at user_data. */
VKAPI_ATTR VkBool32 VKAPI_CALL tt_vk_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                void *user_data);
/* An error for the validation messages not yet reported (NULL: none). */
tt_status tt_vk_messages_check(tt_vk_messages *messages, const char *during);

/* ---- vk_memory.c ---- */
/* An empty pool of memory type `type` (mapped blocks when `map`); its full
 * block is min(256 MiB, an eighth of the heap, max_alloc). */
void tt_vk_pool_init(tt_vk_backend *vk, tt_vk_pool *pool, uint32_t type, int map,
                     VkDeviceSize max_alloc);
/* A place for a resource with requirements `req`, aligned to req->alignment
 * and minStorageBufferOffsetAlignment.  A block that does not fit the heap
 * (by our count) or that the driver refuses is TT_ERR_OUT_OF_MEMORY, after
 * the empty blocks were released and smaller blocks tried. */
tt_status tt_vk_memory_alloc(tt_vk_backend *vk, tt_vk_pool *pool, const VkMemoryRequirements *req,
                             tt_vk_allocation *out);
/* Returns a place (no queued work may use it); an empty block is released
 * unless it is its pool's one spare.  A zeroed allocation is allowed. */
void tt_vk_memory_free(tt_vk_backend *vk, tt_vk_allocation *allocation);
/* Releases the empty blocks (the spares) of both pools. */
void tt_vk_memory_trim(tt_vk_backend *vk);
/* Releases every block of the pool (its places must be freed). */
void tt_vk_pool_release(tt_vk_backend *vk, tt_vk_pool *pool);
void tt_vk_pool_count(const tt_vk_pool *pool, tt_vk_pool_stats *out);

/* ---- vk_device.c ---- */
/* Every Vulkan device (tt_device_info, Vulkan's fields) and its handle. */
tt_status tt_vulkan_devices_list(tt_device_info **devices, int *count);
/* Opens the instance (validation per TT_VULKAN_VALIDATION), the device
 * `selector` picks, one compute queue; fills `info`. */
tt_status tt_vk_open(tt_vk_backend *vk, const char *selector, tt_device_info *info);
/* Destroys what tt_vk_open made, the memory pools' blocks included (after
 * everything else made on the device). */
void tt_vk_close(tt_vk_backend *vk);

/* ---- vk_commands.c ---- */
/* Creates the command pool and the ring's buffers, fences and descriptor pools. */
tt_status tt_vk_commands_create(tt_vk_backend *vk);
void tt_vk_commands_destroy(tt_vk_backend *vk);
/* The command buffer, begun and with a barrier after the last recorded
 * command, ready for one more (a transfer or a dispatch). */
tt_status tt_vk_record(tt_vk_backend *vk, VkCommandBuffer *out);
/* A descriptor set of `layout` for the next dispatch; submits first when
 * the batch is full, without waiting for it unless profiling (so
 * *commands may change: record after this). */
tt_status tt_vk_descriptor_set(tt_vk_backend *vk, VkDescriptorSetLayout layout,
                               VkDescriptorSet *out);
/* Submits what is recorded and waits for it and every batch still in
 * flight; `during` names the caller in errors.  Returns the validation
 * messages seen so far as an error. */
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
/* Notes the pipeline of `key` for tt_vk_build_prepared, unless made or
 * noted already. */
tt_status tt_vk_pipeline_note(tt_backend *backend, const tt_vk_pipeline_key *key);
/* The backend's build_prepared (backend.h): makes the noted pipelines on
 * every core (pipeline creation is free-threaded; the pipeline cache
 * synchronises itself). */
tt_status tt_vk_build_prepared(tt_backend *backend);

/* ---- vk_pipeline_cache.c ---- */
/* Creates vk->pipeline_cache from this device's file, if valid. */
tt_status tt_vk_pipeline_cache_open(tt_vk_backend *vk, const tt_device_info *device);
/* Saves it (when pipelines were made; best effort) and destroys it. */
void tt_vk_pipeline_cache_close(tt_vk_backend *vk);

/* ---- vk_launch.c ---- */
tt_status tt_vk_launch(tt_backend *backend, const tt_launch *launch);
/* The backend's prepare (backend.h): notes the launch's pipeline. */
tt_status tt_vk_prepare(tt_backend *backend, const tt_launch *launch);

/* ---- vk_profile.c ---- */
/* Whether a queue family with `valid_bits` timestamp bits and a device
 * with `period` ns per tick can time dispatches: an error naming `device`
 * and what to do when not. */
tt_status tt_vk_timestamps_check(const char *device, uint32_t valid_bits, float period);
/* Starts profiling into `profile`: checks that the compute queue has
 * timestamps and makes the query pool. */
tt_status tt_vk_profile_create(tt_vk_backend *vk, const char *device, tt_profile *profile);
void tt_vk_profile_destroy(tt_vk_backend *vk);
/* A new command buffer is begun: no query is written yet. */
void tt_vk_profile_restart(tt_vk_backend *vk);
/* Records the timestamp before a dispatch of (program, kernel) and returns
 * its slot for tt_vk_profile_after (-1 without profiling). */
int tt_vk_profile_before(tt_backend *backend, VkCommandBuffer commands, const char *program,
                         const char *kernel);
/* Records the timestamp after the dispatch of `slot`. */
void tt_vk_profile_after(tt_vk_backend *vk, VkCommandBuffer commands, int slot);
/* After the submitted commands completed: adds each timed dispatch's
 * duration to the profile under its kind. */
tt_status tt_vk_profile_collect(tt_vk_backend *vk, const char *during);
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
/* The buffer pool's blocks (staging buffers are not the buffers' memory). */
void tt_vk_memory_held(const tt_backend *backend, tt_memory_held *out);

/* Whether shaders of `program` are built in (or under TT_SHADER_DIR). */
int tt_vk_has_program(const tt_backend *backend, const char *program);

#endif
