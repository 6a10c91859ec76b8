/* Enumerating OpenCL devices of every platform and choosing one. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/device_match.h"
#include "backend/opencl/cl_internal.h"
#include "core/alloc.h"
#include "core/knobs.h"
#include "core/status.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

/* All (platform, device) pairs in enumeration order. */
static tt_status enumerate(cl_platform_id *platforms, cl_device_id *devices, int *count)
{
    cl_uint nplat = 0;
    cl_platform_id plats[MAX_PLATFORMS];
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, plats, &nplat);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && nplat == 0))
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "no OpenCL platform found: install a driver for your GPU, or "
                            "PoCL for the CPU (apt-get install pocl-opencl-icd)");
    if (err != CL_SUCCESS) return tt_error_cl(err, "clGetPlatformIDs");
    int n = 0;
    for (cl_uint p = 0; p < nplat && n < MAX_DEVICES; p++) {
        cl_uint ndev = 0;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES - n, devices + n, &ndev);
        if (err == CL_DEVICE_NOT_FOUND) continue;
        if (err != CL_SUCCESS) return tt_error_cl(err, "clGetDeviceIDs (platform %u)", p);
        for (cl_uint d = 0; d < ndev; d++) platforms[n + d] = plats[p];
        n += (int)ndev;
    }
    if (n == 0)
        return tt_error_new(TT_ERR_NO_DEVICE,
                            "OpenCL platforms exist but offer no device: check the driver, "
                            "or install PoCL for the CPU (apt-get install pocl-opencl-icd)");
    *count = n;
    return NULL;
}

static void info_string(cl_device_id d, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, size, buf, NULL) != CL_SUCCESS) snprintf(buf, size, "?");
    buf[size - 1] = '\0';
    /* drivers pad with spaces */
    for (size_t n = strlen(buf); n > 0 && isspace((unsigned char)buf[n - 1]); n--) buf[n - 1] = 0;
}

void tt_cl_device_describe(cl_platform_id platform, cl_device_id device, tt_device_info *info)
{
    memset(info, 0, sizeof *info);
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof info->platform, info->platform, NULL);
    clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof info->platform_version,
                      info->platform_version, NULL);
    info_string(device, CL_DEVICE_NAME, info->name, sizeof info->name);
    info_string(device, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    info_string(device, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    info_string(device, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
    info_string(device, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version,
                sizeof info->opencl_c_version);

    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    snprintf(info->type, sizeof info->type, "%s",
             type & CL_DEVICE_TYPE_GPU         ? "GPU"
             : type & CL_DEVICE_TYPE_CPU       ? "CPU"
             : type & CL_DEVICE_TYPE_ACCELERATOR ? "ACCELERATOR"
                                               : "OTHER");
    cl_uint cu = 0, align_bits = 0;
    cl_ulong global = 0, max_alloc = 0, local = 0;
    size_t wg = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    cl_uint float_width = 0; /* PoCL on AVX-512: 16 */
    clGetDeviceInfo(device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof float_width,
                    &float_width, NULL);
    cl_bool unified = CL_FALSE; /* deprecated in OpenCL 2.0, still answered */
    clGetDeviceInfo(device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    info->integrated = (type & CL_DEVICE_TYPE_GPU) && unified;
    info->compute_units = (int)cu;
    info->global_mem_bytes = global;
    info->max_alloc_bytes = max_alloc;
    info->max_binding_bytes = max_alloc;
    info->local_mem_bytes = local;
    info->base_align_bytes = align_bits / 8;
    info->max_work_group_size = wg;
    info->float_vector_width = (int)float_width;

    size_t ext_size = 0;
    clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size);
    char *ext = tt_calloc(ext_size + 1, 1);
    if (ext && clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, ext_size, ext, NULL) == CL_SUCCESS) {
        info->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
        info->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    }
    free(ext);
}

tt_status tt_devices_list(tt_device_info **devices, int *count)
{
    cl_platform_id plats[MAX_DEVICES];
    cl_device_id devs[MAX_DEVICES];
    int n = 0;
    *devices = NULL;
    *count = 0;
    TT_TRY(enumerate(plats, devs, &n));
    tt_device_info *list = tt_calloc((size_t)n, sizeof *list);
    if (!list) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "listing devices: out of host memory");
    for (int i = 0; i < n; i++) {
        tt_cl_device_describe(plats[i], devs[i], &list[i]);
        list[i].index = i;
    }
    *devices = list;
    *count = n;
    return NULL;
}

tt_status tt_cl_device_handle(int index, cl_platform_id *platform, cl_device_id *device)
{
    cl_platform_id plats[MAX_DEVICES];
    cl_device_id devs[MAX_DEVICES];
    int n = 0;
    TT_TRY(enumerate(plats, devs, &n));
    if (index < 0 || index >= n)
        return tt_error_new(TT_ERR_NO_DEVICE, "device index %d out of range (0..%d)", index, n - 1);
    *platform = plats[index];
    *device = devs[index];
    return NULL;
}

tt_status tt_device_select(const char *selector, int *index)
{
    tt_device_info *list = NULL;
    int n = 0;
    tt_status status = NULL;
    const char *from = "--device";
    if (!selector || !*selector) {
        selector = tt_knob_str(TT_KNOB_DEVICE);
        from = "TT_DEVICE";
    }
    TT_CHECK(tt_devices_list(&list, &n));
    *index = tt_device_match(list, n, selector, 0);
    if (*index < 0) status = tt_device_match_error(list, n, from, selector, "OpenCL");
cleanup:
    free(list);
    return status;
}
