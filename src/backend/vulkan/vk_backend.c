/* The Vulkan backend: its table of functions, its constructor and finish
 * (the parts are listed in vk_internal.h). */
#include <stdlib.h>

#include "backend/backend_internal.h"
#include "backend/vulkan/vk_internal.h"
#include "core/alloc.h"

static void vk_destroy(tt_backend *backend)
{
    tt_vk_backend *vk = backend->impl;
    if (vk) {
        if (vk->device) {
            tt_status_free(tt_vk_flush(vk, "destroying the backend"));
            vkDeviceWaitIdle(vk->device);
        }
        tt_vk_profile_destroy(vk);
        tt_vk_pipelines_release(vk);
        if (vk->device) tt_vk_addresses_release(vk);
        if (vk->device) tt_vk_pipeline_cache_close(vk);
        tt_vk_commands_destroy(vk);
        tt_vk_close(vk);
        free(vk);
    }
    free(backend->profile);
    free(backend);
}

static tt_status vk_finish(tt_backend *backend)
{
    return tt_vk_flush(backend->impl, "finish");
}

static const tt_backend_ops vk_ops = {
    .name = "vulkan",
    .destroy = vk_destroy,
    .buffer_create = tt_vk_buffer_create,
    .buffer_release = tt_vk_buffer_release,
    .write = tt_vk_write,
    .read = tt_vk_read,
    .copy = tt_vk_copy,
    .launch = tt_vk_launch,
    .prepare = tt_vk_prepare,
    .build_prepared = tt_vk_build_prepared,
    .gemm = tt_vk_gemm,
    .finish = vk_finish,
    .im2col = tt_vk_im2col,
    .col2im = tt_vk_col2im,
    .has_program = tt_vk_has_program,
    .memory_held = tt_vk_memory_held,
};

tt_status tt_vulkan_backend_create(const char *selector, int profiling, tt_backend **out)
{
    *out = NULL;
    tt_backend *backend = tt_calloc(1, sizeof *backend);
    tt_vk_backend *vk = tt_calloc(1, sizeof *vk);
    if (!backend || !vk) {
        free(backend);
        free(vk);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY,
                            "creating the Vulkan backend: out of host memory");
    }
    backend->ops = &vk_ops;
    backend->impl = vk;
    tt_status status = NULL;
    TT_CHECK(tt_vk_open(vk, selector, &backend->device));
    TT_CHECK(tt_vk_commands_create(vk));
    if (profiling) {
        if (!(backend->profile = tt_calloc(1, sizeof *backend->profile))) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "profiling: out of host memory");
            goto cleanup;
        }
        TT_CHECK(tt_vk_profile_create(vk, backend->device.name, backend->profile));
    }
    TT_CHECK(tt_vk_pipeline_cache_open(vk, &backend->device));
    *out = backend;
    return NULL;
cleanup:
    vk_destroy(backend);
    return status;
}
