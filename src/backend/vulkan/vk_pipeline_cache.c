/*
 * The Vulkan pipeline cache on disk: one file per device and driver under
 * the "pipelines" cache folder (core/fs.h), named by tt_device_key() and
 * the driver's pipelineCacheUUID, loaded when the backend opens and saved
 * (atomically) when it closes if pipelines were made.
 *
 * The file is our header, then the driver's data:
 *   0  "TTVKPIPE"                 8  u32 format version (1)
 *   12 u32 vendorID               16 u32 deviceID
 *   20 u32 driverVersion          24 pipelineCacheUUID (16 bytes)
 *   40 u64 bytes of driver data   48 u64 FNV-1a hash of them
 *   56 the driver's data, itself starting with VkPipelineCacheHeaderVersionOne
 * (little-endian).  Drivers are not required to survive bad data, so a file
 * is handed to the driver only when every field names this device and
 * driver, the size is exact, the hash matches and the driver's own header
 * agrees; anything else (garbage, a truncated file, another driver's) is
 * ignored and rewritten, never trusted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/hash.h"

#define MAGIC "TTVKPIPE"
#define FORMAT_VERSION 1
#define OUR_HEADER_BYTES 56
#define DRIVER_HEADER_BYTES 32 /* VkPipelineCacheHeaderVersionOne */
#define MAX_FILE_BYTES (256u << 20)

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64_at(const unsigned char *p)
{
    return (uint64_t)u32_at(p) | (uint64_t)u32_at(p + 4) << 32;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

/* Our header for `bytes` of driver data at data + OUR_HEADER_BYTES. */
static void write_header(const tt_vk_backend *vk, unsigned char *data, size_t bytes)
{
    const VkPhysicalDeviceProperties *p = &vk->properties;
    memcpy(data, MAGIC, 8);
    put_u32(data + 8, FORMAT_VERSION);
    put_u32(data + 12, p->vendorID);
    put_u32(data + 16, p->deviceID);
    put_u32(data + 20, p->driverVersion);
    memcpy(data + 24, p->pipelineCacheUUID, VK_UUID_SIZE);
    put_u64(data + 40, bytes);
    put_u64(data + 48, tt_hash_bytes(TT_HASH_INIT, data + OUR_HEADER_BYTES, bytes));
}

/* Whether the file's `len` bytes are ours for this device and driver. */
static int valid(const tt_vk_backend *vk, const unsigned char *data, size_t len)
{
    const VkPhysicalDeviceProperties *p = &vk->properties;
    if (len < OUR_HEADER_BYTES + DRIVER_HEADER_BYTES) return 0;
    size_t bytes = len - OUR_HEADER_BYTES;
    const unsigned char *driver = data + OUR_HEADER_BYTES;
    return memcmp(data, MAGIC, 8) == 0 && u32_at(data + 8) == FORMAT_VERSION &&
           u32_at(data + 12) == p->vendorID && u32_at(data + 16) == p->deviceID &&
           u32_at(data + 20) == p->driverVersion &&
           memcmp(data + 24, p->pipelineCacheUUID, VK_UUID_SIZE) == 0 &&
           u64_at(data + 40) == bytes &&
           u64_at(data + 48) == tt_hash_bytes(TT_HASH_INIT, driver, bytes) &&
           u32_at(driver) >= DRIVER_HEADER_BYTES && u32_at(driver) <= bytes &&
           u32_at(driver + 4) == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
           u32_at(driver + 8) == p->vendorID && u32_at(driver + 12) == p->deviceID &&
           memcmp(driver + 16, p->pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

/* The driver's data of the file if it is valid (*size its bytes; the
 * caller frees the returned block, which starts OUR_HEADER_BYTES earlier);
 * NULL otherwise: none, invalid, or a read that failed (EIO, TT_FAULT=read),
 * all an empty cache that is written whole again. */
static unsigned char *read_valid(const tt_vk_backend *vk, size_t *size)
{
    FILE *f = fopen(vk->cache_file, "rb");
    if (!f) return NULL;
    unsigned char *data = NULL;
    long len = -1;
    tt_status unreadable = tt_read_fault("the Vulkan pipeline cache", vk->cache_file);
    if (unreadable) {
        tt_status_free(unreadable);
        fclose(f);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && (unsigned long)len <= MAX_FILE_BYTES && fseek(f, 0, SEEK_SET) == 0 &&
        (data = tt_malloc((size_t)len)) && fread(data, 1, (size_t)len, f) != (size_t)len) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data && !valid(vk, data, (size_t)len)) {
        free(data);
        data = NULL;
    }
    if (data) *size = (size_t)len - OUR_HEADER_BYTES;
    return data;
}

tt_status tt_vk_pipeline_cache_open(tt_vk_backend *vk, const tt_device_info *device)
{
    char dir[900];
    vk->cache_file[0] = '\0';
    tt_status s = tt_cache_path("pipelines", dir, sizeof dir);
    if (!s) {
        char uuid[2 * VK_UUID_SIZE + 1];
        for (unsigned i = 0; i < VK_UUID_SIZE; i++)
            snprintf(uuid + 2 * i, 3, "%02x", vk->properties.pipelineCacheUUID[i]);
        snprintf(vk->cache_file, sizeof vk->cache_file, "%s/vulkan-%016llx-%s.bin", dir,
                 (unsigned long long)tt_device_key(device), uuid);
    }
    tt_status_free(s); /* no cache folder: no disk cache */
    size_t size = 0;
    unsigned char *data = vk->cache_file[0] ? read_valid(vk, &size) : NULL;
    vk->cache_loaded = data != NULL;
    VkPipelineCacheCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                      .initialDataSize = size,
                                      .pInitialData = data ? data + OUR_HEADER_BYTES : NULL};
    VkResult r = vkCreatePipelineCache(vk->device, &info, NULL, &vk->pipeline_cache);
    free(data);
    if (r != VK_SUCCESS && vk->cache_loaded) { /* the driver refused it: start empty */
        vk->cache_loaded = 0;
        info.initialDataSize = 0;
        info.pInitialData = NULL;
        r = vkCreatePipelineCache(vk->device, &info, NULL, &vk->pipeline_cache);
    }
    if (r != VK_SUCCESS) return tt_error_vk(r, "vkCreatePipelineCache");
    return NULL;
}

void tt_vk_pipeline_cache_close(tt_vk_backend *vk)
{
    if (!vk->pipeline_cache) return;
    size_t size = 0;
    unsigned char *data = NULL;
    if (vk->cache_file[0] && vk->cache_dirty &&
        vkGetPipelineCacheData(vk->device, vk->pipeline_cache, &size, NULL) == VK_SUCCESS &&
        size >= DRIVER_HEADER_BYTES && size <= MAX_FILE_BYTES - OUR_HEADER_BYTES &&
        (data = tt_malloc(OUR_HEADER_BYTES + size)) &&
        vkGetPipelineCacheData(vk->device, vk->pipeline_cache, &size, data + OUR_HEADER_BYTES) ==
            VK_SUCCESS) {
        write_header(vk, data, size);
        char dir[sizeof vk->cache_file];
        snprintf(dir, sizeof dir, "%s", vk->cache_file);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        /* best effort: a cache that cannot be written is only slower */
        tt_status_free(tt_make_dirs(dir));
        tt_status_free(tt_file_save_atomic(vk->cache_file, data, OUR_HEADER_BYTES + size));
    }
    free(data);
    vkDestroyPipelineCache(vk->device, vk->pipeline_cache, NULL);
    vk->pipeline_cache = VK_NULL_HANDLE;
}
