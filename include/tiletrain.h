/*
 * tiletrain public C API.
 *
 * Every fallible function returns a tt_status: NULL on success, otherwise an
 * owned error object that the caller inspects and frees with
 * tt_status_free().  Library code never exits; only the command line does.
 */
#ifndef TILETRAIN_H
#define TILETRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TT_VERSION
#define TT_VERSION "0.1.0"
#endif

/* ---- status ------------------------------------------------------------ */

typedef enum tt_code {
    TT_OK = 0,
    TT_ERR_INVALID_ARGUMENT, /* a caller passed something that cannot work */
    TT_ERR_NO_DEVICE,        /* no device, or the selector matched none */
    TT_ERR_BACKEND,          /* a backend's call failed; see tt_status_backend_code */
    TT_ERR_BUILD,            /* a kernel program failed to build; see detail */
    TT_ERR_OUT_OF_MEMORY,    /* host or device memory ran out */
    TT_ERR_TOO_LARGE,        /* one allocation above the device's limit */
    TT_ERR_IO,               /* a file could not be read or written */
    TT_ERR_FORMAT,           /* a file or value is malformed */
    TT_ERR_UNSUPPORTED,      /* valid, but not implemented for this case */
    TT_ERR_INTERNAL,         /* a bug: an invariant did not hold */
    TT_ERR_PEER,             /* another rank of a data-parallel job failed, or MPI did */
} tt_code;

typedef struct tt_error tt_error;
typedef tt_error *tt_status; /* NULL means success */

tt_code tt_status_code(tt_status status);
/* One line: the operation, what went wrong, and what to do. */
const char *tt_status_message(tt_status status);
/* Long detail such as a program build log; "" when there is none. */
const char *tt_status_detail(tt_status status);
/* The backend's own code of a backend failure (OpenCL: the cl_int), 0
 * otherwise; also kept when the code maps to another tt_code (an OpenCL
 * CL_OUT_OF_RESOURCES is TT_ERR_OUT_OF_MEMORY). */
int tt_status_backend_code(tt_status status);
/* The name of the backend that failed ("opencl"), "" for other errors. */
const char *tt_status_backend(tt_status status);
const char *tt_code_name(tt_code code);
/* Frees an error; tt_status_free(NULL) is allowed. */
void tt_status_free(tt_status status);


/* ---- devices ----------------------------------------------------------- */

/* What the engine knows of one compute device (OpenCL today). */
typedef struct tt_device_info {
    int index;                  /* position in tt_devices_list() */
    char platform[128];         /* platform name */
    char platform_version[128];
    char name[128];
    char vendor[128];
    char driver_version[128];
    char device_version[128];
    char opencl_c_version[64];
    char type[16];              /* "GPU", "CPU", "ACCELERATOR", "OTHER" */
    int integrated;             /* a GPU that shares the host's memory (an iGPU, an APU):
                                   CL_DEVICE_HOST_UNIFIED_MEMORY, Vulkan's INTEGRATED_GPU */
    int compute_units;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    uint64_t max_binding_bytes; /* the most of one buffer a kernel can address from one
                                   place: a whole allocation on OpenCL, and on Vulkan
                                   where the device has buffer device addresses (tensors
                                   past a storage binding run the addressed shaders);
                                   else Vulkan's maxStorageBufferRange */
    uint64_t local_mem_bytes;
    uint32_t base_align_bytes;  /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
    size_t max_work_group_size;
    int float_vector_width;     /* CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT; 0: not known */
    int fp16;                   /* cl_khr_fp16 */
    int fp64;                   /* cl_khr_fp64 */
} tt_device_info;

/* Every device of every platform (CL_DEVICE_TYPE_ALL).  *devices is owned by
 * the caller (free()).  No platform at all is TT_ERR_NO_DEVICE. */
tt_status tt_devices_list(tt_device_info **devices, int *count);

/* Resolves a selector to an index into tt_devices_list(): NULL or "" means
 * $TT_DEVICE, else the first GPU, else the first device; digits are an
 * index; anything else is a case-insensitive substring of the device's name,
 * vendor, version or platform.  No match is TT_ERR_NO_DEVICE, and the message
 * lists the devices there are. */
tt_status tt_device_select(const char *selector, int *index);

#ifdef __cplusplus
}
#endif
#endif
