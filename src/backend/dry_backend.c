/*
 * The dry backend: a device that allocates nothing and runs nothing, so the
 * engine's own allocation code can be run to estimate memory exactly before
 * a real run ("what would this configuration take on that device?").
 *
 * Buffers get no storage; writes, reads, copies, launches and GEMMs succeed
 * without effect (reads return zeros).  The accounting is the real one.
 *
 * A recording dry backend also tells a recorder, for every operation it is
 * asked to run, the places that operation touches (every buffer argument
 * of a launch, both ends of a copy, a GEMM's three matrices, an image and
 * its columns, a write's or read's device end): a model's memory plan
 * takes its tensors' lifetimes from that record (model/arena_plan.c).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "core/alloc.h"
#include "core/status.h"

typedef struct recorder {
    void (*record)(void *ctx, const tt_mem *places, int count);
    void *ctx;
} recorder;

/* Tells the recorder (if any) about one operation touching `places`. */
static void record(tt_backend *b, const tt_mem *places, int count)
{
    const recorder *r = b->impl;
    if (r) r->record(r->ctx, places, count);
}

static void dry_destroy(tt_backend *backend)
{
    free(backend->impl);
    free(backend);
}

static tt_status dry_buffer_create(tt_backend *backend, tt_buffer *buf)
{
    (void)backend;
    buf->handle = NULL;
    return NULL;
}

static void dry_buffer_release(tt_backend *backend, tt_buffer *buf) { (void)backend, (void)buf; }

static tt_status dry_write(tt_backend *b, tt_mem dst, const void *src, size_t bytes)
{
    (void)src, (void)bytes;
    record(b, &dst, 1);
    return NULL;
}

static tt_status dry_read(tt_backend *b, void *dst, tt_mem src, size_t bytes)
{
    record(b, &src, 1);
    memset(dst, 0, bytes);
    return NULL;
}

static tt_status dry_copy(tt_backend *b, tt_mem dst, tt_mem src, size_t bytes)
{
    (void)bytes;
    record(b, (tt_mem[]){dst, src}, 2);
    return NULL;
}

static tt_status dry_launch(tt_backend *b, const tt_launch *launch)
{
    tt_mem places[TT_MAX_KERNEL_ARGS];
    int count = 0;
    for (int i = 0; i < launch->arg_count; i++)
        if (launch->args[i].kind == TT_ARG_MEM) places[count++] = launch->args[i].value.mem;
    record(b, places, count);
    return NULL;
}

static tt_status dry_gemm(tt_backend *b, const tt_gemm *gemm)
{
    record(b, (tt_mem[]){gemm->a, gemm->b, gemm->c}, 3);
    return NULL;
}

static tt_status dry_columns(tt_backend *b, const tt_im2col *geometry)
{
    record(b, (tt_mem[]){geometry->im, geometry->col}, 2);
    return NULL;
}

static tt_status dry_finish(tt_backend *b)
{
    (void)b;
    return NULL;
}

/* The programs of the backend it stands in for (tt_backend.kernels_of). */
static int dry_has_program(const tt_backend *backend, const char *program)
{
    if (backend->kernels_of == TT_BACKEND_VULKAN) return tt_vulkan_has_program(program);
    return 1; /* OpenCL: every program is built in */
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
    .has_program = dry_has_program,
};

tt_status tt_dry_backend_create(const tt_device_info *device,
                                void (*record)(void *ctx, const tt_mem *places, int count),
                                void *record_ctx, tt_backend **out)
{
    *out = NULL;
    tt_backend *backend = tt_calloc(1, sizeof *backend);
    recorder *r = record ? tt_malloc(sizeof *r) : NULL;
    if (!backend || (record && !r)) {
        free(backend), free(r);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "dry backend: out of host memory");
    }
    if (r) *r = (recorder){record, record_ctx};
    backend->ops = &dry_ops;
    backend->device = *device;
    backend->impl = r;
    *out = backend;
    return NULL;
}
