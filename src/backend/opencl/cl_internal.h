/* Private state of the OpenCL backend, shared by its files. */
#ifndef TT_CL_INTERNAL_H
#define TT_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend/backend.h"
#include "backend/opencl/cl_errors.h"
#include "backend/profile.h"

typedef struct tt_cl_kernel_entry {
    char name[64];
    cl_kernel kernel;
    size_t max_work_group; /* CL_KERNEL_WORK_GROUP_SIZE on the device */
} tt_cl_kernel_entry;

typedef struct tt_cl_program_entry {
    char program[64];
    char *options;
    cl_program handle;
    tt_cl_kernel_entry *kernels;
    int kernel_count;
    char *keep_path; /* built from source, its binary kept here at the end (cl_program.c) */
} tt_cl_program_entry;

typedef struct tt_cl_backend {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    tt_cl_program_entry *programs;
    int program_count;
    /* programs a prepared launch needs, not yet built (cl_program.c) */
    tt_cl_program_entry *prepared;
    int prepared_count;
    char cache_dir[1024];  /* "" disables the disk cache */
    int keep_late;         /* binaries kept when the backend ends, not when built */
    /* profiling: events of launches not yet collected, with their kind */
    cl_event *events;
    char (*event_kinds)[TT_PROFILE_KIND_BYTES];
    int event_count, event_capacity;
} tt_cl_backend;

/* Finds the platform and device behind tt_devices_list()'s index. */
tt_status tt_cl_device_handle(int index, cl_platform_id *platform, cl_device_id *device);
/* Fills a tt_device_info from the handles. */
void tt_cl_device_describe(cl_platform_id platform, cl_device_id device, tt_device_info *info);

/* The built kernel for (program, options); builds and caches on first use.
 * *max_work_group (optional): its CL_KERNEL_WORK_GROUP_SIZE. */
tt_status tt_cl_kernel_get(tt_backend *backend, const char *program, const char *kernel,
                           const char *options, cl_kernel *out, size_t *max_work_group);
/* The backend's each_kernel_limit (backend.h): every kernel in the cache. */
void tt_cl_each_kernel_limit(const tt_backend *backend,
                             void (*fn)(void *ctx, const char *program, const char *kernel,
                                        size_t max_work_group),
                             void *ctx);
/* The backend's kernel_limit (backend.h): the kernel's CL_KERNEL_WORK_GROUP_SIZE. */
tt_status tt_cl_kernel_limit(tt_backend *backend, const char *program, const char *kernel,
                             const char *options, size_t *max_work_group);
/* Keeps the binary of every program built from source and not kept yet
 * (keep_late), on every core; then releases the programs. */
void tt_cl_programs_release(tt_backend *backend);
/* The backend's prepare and build_prepared (backend.h): the programs of
 * prepared launches, built on every core. */
tt_status tt_cl_prepare(tt_backend *backend, const tt_launch *launch);
tt_status tt_cl_build_prepared(tt_backend *backend);

/* With profiling on: an event slot for a launch of `program` (NULL when
 * off); the event is collected at the next finish. */
cl_event *tt_cl_profile_slot(tt_backend *backend, const char *program, const char *kernel);
/* Adds the device time of every pending event to backend->profile. */
void tt_cl_profile_collect(tt_backend *backend);

/* The GEMM of the OpenCL backend, through CLBlast. */
tt_status tt_cl_gemm(tt_backend *backend, const tt_gemm *gemm);
/* im2col / col2im of one image, through CLBlast (col2im adds). */
tt_status tt_cl_im2col(tt_backend *backend, const tt_im2col *geometry);
tt_status tt_cl_col2im(tt_backend *backend, const tt_im2col *geometry);


#endif
