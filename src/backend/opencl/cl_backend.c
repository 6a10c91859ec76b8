/* The OpenCL backend: context, queue, buffers and kernel launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "backend/backend_internal.h"
#include "backend/opencl/cl_internal.h"
#include "backend/opencl/cl_tuning.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

static void cl_destroy(tt_backend *backend)
{
    tt_cl_backend *cl = backend->impl;
    if (cl) {
        /* let queued work end before the runtime's threads can be torn down */
        if (cl->queue) clFinish(cl->queue);
        tt_cl_profile_collect(backend);
        free(cl->events);
        free(cl->event_kinds);
        /* CLBlast caches programs by context; a later context at the same
         * address must not find this one's programs */
        CLBlastClearCache();
        tt_cl_programs_release(backend);
        if (cl->queue) clReleaseCommandQueue(cl->queue);
        if (cl->context) clReleaseContext(cl->context);
        free(cl);
    }
    free(backend->profile);
    free(backend);
}

static tt_status cl_buffer_create(tt_backend *backend, tt_buffer *buf)
{
    tt_cl_backend *cl = backend->impl;
    cl_int err;
    cl_mem mem = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, buf->bytes, NULL, &err);
    if (err != CL_SUCCESS) return tt_error_cl(err, "clCreateBuffer");
    buf->handle = mem;
    return NULL;
}

static void cl_buffer_release(tt_backend *backend, tt_buffer *buf)
{
    (void)backend;
    if (buf->handle) clReleaseMemObject((cl_mem)buf->handle);
}

static tt_status cl_write(tt_backend *backend, tt_mem dst, const void *src, size_t bytes)
{
    tt_cl_backend *cl = backend->impl;
    cl_int err = clEnqueueWriteBuffer(cl->queue, (cl_mem)dst.buffer->handle, CL_TRUE, dst.offset,
                                      bytes, src, 0, NULL,
                                      tt_cl_profile_slot(backend, "transfer", "write"));
    if (err != CL_SUCCESS)
        return tt_error_cl(err, "clEnqueueWriteBuffer('%s')", dst.buffer->record.name);
    return NULL;
}

static tt_status cl_read(tt_backend *backend, void *dst, tt_mem src, size_t bytes)
{
    tt_cl_backend *cl = backend->impl;
    cl_int err = clEnqueueReadBuffer(cl->queue, (cl_mem)src.buffer->handle, CL_TRUE, src.offset,
                                     bytes, dst, 0, NULL,
                                     tt_cl_profile_slot(backend, "transfer", "read"));
    if (err != CL_SUCCESS)
        return tt_error_cl(err, "clEnqueueReadBuffer('%s')", src.buffer->record.name);
    return NULL;
}

static tt_status cl_copy(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes)
{
    tt_cl_backend *cl = backend->impl;
    cl_int err = clEnqueueCopyBuffer(cl->queue, (cl_mem)src.buffer->handle,
                                     (cl_mem)dst.buffer->handle, src.offset, dst.offset, bytes, 0,
                                     NULL, NULL);
    if (err != CL_SUCCESS)
        return tt_error_cl(err, "clEnqueueCopyBuffer('%s' -> '%s')", src.buffer->record.name,
                           dst.buffer->record.name);
    return NULL;
}

static tt_status cl_launch(tt_backend *backend, const tt_launch *launch)
{
    tt_cl_backend *cl = backend->impl;
    cl_kernel kernel;
    size_t most = 0;
    TT_TRY(tt_cl_kernel_get(backend, launch->program, launch->kernel, launch->options, &kernel,
                            &most));
    TT_TRY(tt_launch_check_group(backend, launch, most));
    cl_uint index = 0;
    for (int i = 0; i < launch->arg_count; i++) {
        const tt_arg *a = &launch->args[i];
        cl_int err = CL_SUCCESS;
        switch (a->kind) {
        case TT_ARG_MEM: {
            cl_mem mem = (cl_mem)a->value.mem.buffer->handle;
            cl_ulong offset = a->value.mem.offset;
            err = clSetKernelArg(kernel, index++, sizeof mem, &mem);
            if (err == CL_SUCCESS) err = clSetKernelArg(kernel, index++, sizeof offset, &offset);
            break;
        }
        case TT_ARG_I32: err = clSetKernelArg(kernel, index++, sizeof(cl_int), &a->value.i32); break;
        case TT_ARG_U64: {
            cl_ulong v = a->value.u64;
            err = clSetKernelArg(kernel, index++, sizeof v, &v);
            break;
        }
        case TT_ARG_F32: err = clSetKernelArg(kernel, index++, sizeof(cl_float), &a->value.f32); break;
        case TT_ARG_LOCAL: err = clSetKernelArg(kernel, index++, a->value.local_bytes, NULL); break;
        }
        if (err != CL_SUCCESS)
            return tt_error_cl(err, "clSetKernelArg(%s/%s, argument %d)", launch->program,
                               launch->kernel, i);
    }
    size_t global[3], local[3];
    int has_local = launch->local[0] != 0;
    for (int d = 0; d < launch->dims; d++) {
        global[d] = launch->global[d];
        local[d] = launch->local[d];
        if (has_local && local[d]) global[d] = (global[d] + local[d] - 1) / local[d] * local[d];
    }
    cl_int err = clEnqueueNDRangeKernel(cl->queue, kernel, (cl_uint)launch->dims, NULL, global,
                                        has_local ? local : NULL, 0, NULL,
                                        tt_cl_profile_slot(backend, launch->program, launch->kernel));
    if (err != CL_SUCCESS)
        return tt_error_cl(err, "clEnqueueNDRangeKernel(%s/%s)", launch->program, launch->kernel);
    return NULL;
}

static tt_status cl_finish(tt_backend *backend)
{
    tt_cl_backend *cl = backend->impl;
    cl_int err = clFinish(cl->queue);
    if (err != CL_SUCCESS) return tt_error_cl(err, "clFinish");
    if (cl->event_count) tt_cl_profile_collect(backend);
    return NULL;
}

static const tt_backend_ops cl_ops = {
    .name = "opencl",
    .destroy = cl_destroy,
    .buffer_create = cl_buffer_create,
    .buffer_release = cl_buffer_release,
    .write = cl_write,
    .read = cl_read,
    .copy = cl_copy,
    .launch = cl_launch,
    .prepare = tt_cl_prepare,
    .build_prepared = tt_cl_build_prepared,
    .kernel_limit = tt_cl_kernel_limit,
    .each_kernel_limit = tt_cl_each_kernel_limit,
    .gemm = tt_cl_gemm,
    .finish = cl_finish,
    .im2col = tt_cl_im2col,
    .col2im = tt_cl_col2im,
};

/* Whether program binaries are best kept when the backend ends rather
 * than when built: PoCL (unless its cache is off) compiles a kernel when
 * it is first launched, for that launch's work-group size, and caches
 * that; asking it for a program's binary makes it compile every kernel of
 * the program for a generic work-group first, launched or not (on the
 * quick start's first run, 36 s before the first step).  Yet without our
 * binary every process runs clang on every program again (0.4 s of a
 * 1-step train's 0.6 s of CPU): kept at the end, the first run's first
 * step waits for none of it and later runs load the binaries
 * (docs/ops.md, "The first run on a device"). */
static int driver_keeps_builds(cl_platform_id platform)
{
    char name[128] = "";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, NULL);
    const char *off = getenv("POCL_KERNEL_CACHE");
    return strstr(name, "Portable Computing Language") && !(off && strcmp(off, "0") == 0);
}

tt_status tt_opencl_backend_create(const char *selector, int profiling, tt_backend **out)
{
    int index = -1;
    *out = NULL;
    TT_TRY(tt_device_select(selector, &index));
    tt_backend *backend = tt_calloc(1, sizeof *backend);
    tt_cl_backend *cl = tt_calloc(1, sizeof *cl);
    if (!backend || !cl) {
        free(backend);
        free(cl);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "creating the OpenCL backend: out of host memory");
    }
    backend->ops = &cl_ops;
    backend->impl = cl;
    tt_status status = NULL;
    TT_CHECK(tt_cl_device_handle(index, &cl->platform, &cl->device));
    tt_cl_device_describe(cl->platform, cl->device, &backend->device);
    backend->device.index = index;
    tt_status_free(tt_cache_path("programs", cl->cache_dir, sizeof cl->cache_dir)); /* or "" */
    cl->keep_late = driver_keeps_builds(cl->platform);

    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl->platform, 0};
    cl->context = clCreateContext(props, 1, &cl->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        status = tt_error_cl(err, "clCreateContext(device '%s')", backend->device.name);
        goto cleanup;
    }
    cl->queue = clCreateCommandQueue(cl->context, cl->device,
                                     profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        status = tt_error_cl(err, "clCreateCommandQueue(device '%s')", backend->device.name);
        goto cleanup;
    }
    if (profiling && !(backend->profile = tt_calloc(1, sizeof *backend->profile))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "profiling: out of host memory");
        goto cleanup;
    }
    tt_cl_tuning_apply_cached(backend, stderr); /* `tiletrain tune`'s CLBlast parameters */
    *out = backend;
    return NULL;
cleanup:
    cl_destroy(backend);
    return status;
}
