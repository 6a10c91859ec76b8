/*
 * The Vulkan pipeline cache on disk: one file per device and driver under
 * the "pipelines" cache folder (core/fs.h), named by tt_device_key() and
 * the driver's pipelineCacheUUID, loaded when the backend opens and saved
 * when it closes if pipelines were made.  A file is used only when its
 * header names this device and cache UUID and its size is plausible;
 * anything else is ignored and rewritten, never trusted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/fs.h"

#define HEADER_BYTES 32 /* VkPipelineCacheHeaderVersionOne */
#define MAX_FILE_BYTES (256u << 20)

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The file's bytes if they carry this device's header; NULL otherwise. */
static void *read_valid(const tt_vk_backend *vk, size_t *size)
{
    FILE *f = fopen(vk->cache_file, "rb");
    if (!f) return NULL;
    unsigned char *data = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len >= HEADER_BYTES && (unsigned long)len <= MAX_FILE_BYTES && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)len)) && fread(data, 1, (size_t)len, f) != (size_t)len) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (!data) return NULL;
    const VkPhysicalDeviceProperties *p = &vk->properties;
    int valid = u32_at(data) >= HEADER_BYTES && u32_at(data) <= (uint32_t)len &&
                u32_at(data + 4) == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
                u32_at(data + 8) == p->vendorID && u32_at(data + 12) == p->deviceID &&
                memcmp(data + 16, p->pipelineCacheUUID, VK_UUID_SIZE) == 0;
    if (!valid) {
        free(data);
        return NULL;
    }
    *size = (size_t)len;
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
    void *data = vk->cache_file[0] ? read_valid(vk, &size) : NULL;
    vk->cache_loaded = data != NULL;
    VkPipelineCacheCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                      .initialDataSize = size,
                                      .pInitialData = data};
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
    void *data = NULL;
    if (vk->cache_file[0] && vk->cache_dirty &&
        vkGetPipelineCacheData(vk->device, vk->pipeline_cache, &size, NULL) == VK_SUCCESS &&
        size >= HEADER_BYTES && (data = malloc(size)) &&
        vkGetPipelineCacheData(vk->device, vk->pipeline_cache, &size, data) == VK_SUCCESS) {
        char dir[sizeof vk->cache_file];
        snprintf(dir, sizeof dir, "%s", vk->cache_file);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        /* best effort: a cache that cannot be written is only slower */
        tt_status_free(tt_make_dirs(dir));
        tt_status_free(tt_file_save_atomic(vk->cache_file, data, size));
    }
    free(data);
    vkDestroyPipelineCache(vk->device, vk->pipeline_cache, NULL);
    vk->pipeline_cache = VK_NULL_HANDLE;
}
