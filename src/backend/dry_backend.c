/*
 * The dry backend: a device that allocates nothing and runs nothing, so the
 * engine's own allocation code can be run to estimate memory exactly before
 * a real run ("what would this configuration take on that device?").
 *
 * Buffers get no storage; writes, reads, copies, launches and GEMMs succeed
 * without effect (reads return zeros).  The accounting is the real one.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "core/status.h"

static void dry_destroy(tt_backend *backend) { free(backend); }

static tt_status dry_buffer_create(tt_backend *backend, tt_buffer *buf)
{
    (void)backend;
    buf->handle = NULL;
    return NULL;
}

static void dry_buffer_release(tt_backend *backend, tt_buffer *buf) { (void)backend, (void)buf; }

static tt_status dry_write(tt_backend *b, tt_mem dst, const void *src, size_t bytes)
{
    (void)b, (void)dst, (void)src, (void)bytes;
    return NULL;
}

static tt_status dry_read(tt_backend *b, void *dst, tt_mem src, size_t bytes)
{
    (void)b, (void)src;
    memset(dst, 0, bytes);
    return NULL;
}

static tt_status dry_copy(tt_backend *b, tt_mem dst, tt_mem src, size_t bytes)
{
    (void)b, (void)dst, (void)src, (void)bytes;
    return NULL;
}

static tt_status dry_launch(tt_backend *b, const tt_launch *launch)
{
    (void)b, (void)launch;
    return NULL;
}

static tt_status dry_gemm(tt_backend *b, const tt_gemm *gemm)
{
    (void)b, (void)gemm;
    return NULL;
}

static tt_status dry_columns(tt_backend *b, const tt_im2col *geometry)
{
    (void)b, (void)geometry;
    return NULL;
}

static tt_status dry_finish(tt_backend *b)
{
    (void)b;
    return NULL;
}

static const tt_backend_ops dry_ops = {
    .name = "dry",
    .runs_nothing = 1,
    .destroy = dry_destroy,
    .buffer_create = dry_buffer_create,
    .buffer_release = dry_buffer_release,
    .write = dry_write,
    .read = dry_read,
    .copy = dry_copy,
    .launch = dry_launch,
    .gemm = dry_gemm,
    .finish = dry_finish,
    .im2col = dry_columns,
    .col2im = dry_columns,
};

tt_status tt_dry_backend_create(const tt_device_info *device, tt_backend **out)
{
    tt_backend *backend = calloc(1, sizeof *backend);
    if (!backend) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "dry backend: out of host memory");
    backend->ops = &dry_ops;
    backend->device = *device;
    *out = backend;
    return NULL;
}
