/*
 * The backends' own constructors, behind tt_backend_create() (backend.c).
 * Only the factory includes this header; everything else asks for a backend
 * by kind through tt_backend_create().
 */
#ifndef TT_BACKEND_INTERNAL_H
#define TT_BACKEND_INTERNAL_H

#include "backend/backend.h"

/* The OpenCL backend on the device `selector` picks (tt_device_select);
 * profiling on: every launch's device time is added to backend->profile
 * when the queue is finished (src/backend/opencl/cl_backend.c). */
tt_status tt_opencl_backend_create(const char *selector, int profiling, tt_backend **out);

/* The Vulkan backend on the Vulkan device `selector` picks among the
 * Vulkan devices (src/backend/vulkan/vk_backend.c); in a build without
 * Vulkan, TT_ERR_UNSUPPORTED (src/backend/vulkan_off.c). */
tt_status tt_vulkan_backend_create(const char *selector, int profiling, tt_backend **out);

/* A backend that behaves like `like` for allocation limits and accounting
 * but allocates and runs nothing (src/backend/dry_backend.c); with a
 * `record` function, it calls it for every operation with the places the
 * operation touches (NULL: no recording). */
tt_status tt_dry_backend_create(const tt_device_info *like,
                                void (*record)(void *ctx, const tt_mem *places, int count),
                                void *record_ctx, tt_backend **out);

/* Whether Vulkan shaders of `program` are built in (or under
 * TT_SHADER_DIR); 0 in a build without Vulkan. */
int tt_vulkan_has_program(const char *program);

/* The Vulkan physical devices, described (src/backend/vulkan/vk_device.c;
 * TT_ERR_UNSUPPORTED in a build without Vulkan). *devices: free(). */
tt_status tt_vulkan_devices_list(tt_device_info **devices, int *count);

#endif
