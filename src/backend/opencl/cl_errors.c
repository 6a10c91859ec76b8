/* Names for OpenCL 1.2 error codes and CLBlast's own codes (-1024 and below),
 * and the OpenCL backend's errors built from them. */
#include "backend/opencl/cl_errors.h"

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    int code;
    const char *name;
} error_name;

static const error_name names[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1024, "CLBLAST_NOT_IMPLEMENTED"},
    {-1022, "CLBLAST_INVALID_MATRIX_A"},
    {-1021, "CLBLAST_INVALID_MATRIX_B"},
    {-1020, "CLBLAST_INVALID_MATRIX_C"},
    {-1019, "CLBLAST_INVALID_VECTOR_X"},
    {-1018, "CLBLAST_INVALID_VECTOR_Y"},
    {-1017, "CLBLAST_INVALID_DIMENSION"},
    {-1016, "CLBLAST_INVALID_LEAD_DIM_A"},
    {-1015, "CLBLAST_INVALID_LEAD_DIM_B"},
    {-1014, "CLBLAST_INVALID_LEAD_DIM_C"},
    {-1013, "CLBLAST_INVALID_INCREMENT_X"},
    {-1012, "CLBLAST_INVALID_INCREMENT_Y"},
    {-1011, "CLBLAST_INSUFFICIENT_MEMORY_A"},
    {-1010, "CLBLAST_INSUFFICIENT_MEMORY_B"},
    {-1009, "CLBLAST_INSUFFICIENT_MEMORY_C"},
    {-1008, "CLBLAST_INSUFFICIENT_MEMORY_X"},
    {-1007, "CLBLAST_INSUFFICIENT_MEMORY_Y"},
    {-2050, "CLBLAST_INSUFFICIENT_MEMORY_TEMP"},
    {-2049, "CLBLAST_INVALID_BATCH_COUNT"},
    {-2048, "CLBLAST_INVALID_OVERRIDE_KERNEL"},
    {-2047, "CLBLAST_MISSING_OVERRIDE_PARAMETER"},
    {-2046, "CLBLAST_INVALID_LOCAL_MEM_USAGE"},
    {-2045, "CLBLAST_NO_HALF_PRECISION"},
    {-2044, "CLBLAST_NO_DOUBLE_PRECISION"},
    {-2043, "CLBLAST_INVALID_VECTOR_SCALAR"},
    {-2042, "CLBLAST_INSUFFICIENT_MEMORY_SCALAR"},
    {-2041, "CLBLAST_DATABASE_ERROR"},
    {-2040, "CLBLAST_UNKNOWN_ERROR"},
    {-2039, "CLBLAST_UNEXPECTED_ERROR"},
};

const char *tt_cl_error_name(int cl_error)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == cl_error) return names[i].name;
    return "CL_UNKNOWN_ERROR";
}

tt_status tt_error_cl(int cl_error, const char *fmt, ...)
{
    tt_code kind = cl_error == -4    /* CL_MEM_OBJECT_ALLOCATION_FAILURE */
                           || cl_error == -5 /* CL_OUT_OF_RESOURCES */
                           || cl_error == -6 /* CL_OUT_OF_HOST_MEMORY */
                       ? TT_ERR_OUT_OF_MEMORY
                       : TT_ERR_BACKEND;
    va_list ap;
    va_start(ap, fmt);
    tt_status s = tt_error_backend_v("opencl", cl_error, tt_cl_error_name(cl_error), kind, fmt, ap);
    va_end(ap);
    return s;
}
