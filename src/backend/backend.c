/* Backend-independent half of the backend interface: accounting and checks. */
#include "backend/backend.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fault.h"
#include "core/hash.h"
#include "core/knobs.h"
#include "core/status.h"

/* ---- device facts ---------------------------------------------------------- */

uint64_t tt_device_key(const tt_device_info *d)
{
    const char *parts[] = {d->platform, d->platform_version, d->name, d->vendor,
                           d->driver_version, d->device_version};
    uint64_t h = TT_HASH_INIT;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        h = tt_hash_bytes(h, parts[i], strlen(parts[i]) + 1);
    return h;
}

cJSON *tt_device_info_json(const tt_device_info *d)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "index", d->index);
    cJSON_AddStringToObject(o, "platform", d->platform);
    cJSON_AddStringToObject(o, "platform_version", d->platform_version);
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddStringToObject(o, "driver_version", d->driver_version);
    cJSON_AddStringToObject(o, "device_version", d->device_version);
    cJSON_AddStringToObject(o, "opencl_c_version", d->opencl_c_version);
    cJSON_AddStringToObject(o, "type", d->type);
    cJSON_AddBoolToObject(o, "integrated", d->integrated);
    cJSON_AddNumberToObject(o, "compute_units", d->compute_units);
    cJSON_AddNumberToObject(o, "global_mem_bytes", (double)d->global_mem_bytes);
    cJSON_AddNumberToObject(o, "max_alloc_bytes", (double)d->max_alloc_bytes);
    cJSON_AddNumberToObject(o, "max_binding_bytes", (double)d->max_binding_bytes);
    cJSON_AddNumberToObject(o, "local_mem_bytes", (double)d->local_mem_bytes);
    cJSON_AddNumberToObject(o, "base_align_bytes", d->base_align_bytes);
    cJSON_AddNumberToObject(o, "max_work_group_size", (double)d->max_work_group_size);
    cJSON_AddBoolToObject(o, "fp16", d->fp16);
    cJSON_AddBoolToObject(o, "fp64", d->fp64);
    return o;
}

/* ---- creation ------------------------------------------------------------ */

void tt_backend_destroy(tt_backend *backend)
{
    if (!backend) return;
    while (backend->mem.live) {
        tt_buffer *buf = (tt_buffer *)((char *)backend->mem.live - offsetof(tt_buffer, record));
        tt_buffer_free(buf);
    }
    backend->ops->destroy(backend);
}

tt_status tt_buffer_alloc(tt_backend *backend, size_t bytes, tt_mem_category category,
                          const char *name, tt_buffer **out)
{
    char want[32], limit[32];
    *out = NULL;
    if (bytes == 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "allocating '%s': zero bytes requested",
                            name);
    if ((unsigned)category >= TT_MEM_CATEGORY_COUNT)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "allocating '%s': unknown category %d",
                            name, (int)category);
    if (bytes > backend->device.max_alloc_bytes)
        return tt_error_new(
            TT_ERR_TOO_LARGE,
            "allocating '%s' (%s, %s): larger than the largest single allocation of "
            "device '%s' (%s, CL_DEVICE_MAX_MEM_ALLOC_SIZE); split it into several "
            "buffers or use a smaller tile or micro-batch",
            name, tt_mem_category_name(category), tt_format_bytes(bytes, want, sizeof want),
            backend->device.name,
            tt_format_bytes(backend->device.max_alloc_bytes, limit, sizeof limit));

    tt_buffer *buf = tt_calloc(1, sizeof *buf);
    if (!buf) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "allocating '%s': out of host memory", name);
    buf->backend = backend;
    buf->bytes = bytes;
    snprintf(buf->record.name, sizeof buf->record.name, "%s", name);
    buf->record.category = category;
    buf->record.bytes = bytes;
    tt_status status = tt_fault_hit(TT_FAULT_ALLOC)
                           ? tt_error_new(TT_ERR_OUT_OF_MEMORY, "the device is out of memory "
                                          "(TT_FAULT)")
                           : backend->ops->buffer_create(backend, buf);
    if (status) {
        free(buf);
        return tt_error_prefix(status, "allocating '%s' (%s, %s)", name,
                               tt_mem_category_name(category),
                               tt_format_bytes(bytes, want, sizeof want));
    }
    tt_memstats_add(&backend->mem, &buf->record);
    *out = buf;
    return NULL;
}

void tt_buffer_free(tt_buffer *buffer)
{
    if (!buffer) return;
    tt_backend *backend = buffer->backend;
    tt_memstats_remove(&backend->mem, &buffer->record);
    backend->ops->buffer_release(backend, buffer);
    free(buffer);
}

static tt_status check_range(const char *what, tt_mem mem, size_t bytes)
{
    return tt_mem_check(what, "the range", mem, bytes);
}

tt_status tt_write(tt_backend *backend, tt_mem dst, const void *src, size_t bytes)
{
    if (bytes == 0 || backend->preparing) return NULL;
    TT_TRY(check_range("writing to the device", dst, bytes));
    return backend->ops->write(backend, dst, src, bytes);
}

tt_status tt_read(tt_backend *backend, void *dst, tt_mem src, size_t bytes)
{
    if (bytes == 0 || backend->preparing) return NULL;
    TT_TRY(check_range("reading from the device", src, bytes));
    return backend->ops->read(backend, dst, src, bytes);
}

tt_status tt_copy(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes)
{
    if (bytes == 0 || backend->preparing) return NULL;
    TT_TRY(check_range("copying on the device (source)", src, bytes));
    TT_TRY(check_range("copying on the device (destination)", dst, bytes));
    return backend->ops->copy(backend, dst, src, bytes);
}

tt_status tt_finish(tt_backend *backend)
{
    return backend->preparing ? NULL : backend->ops->finish(backend);
}

void tt_backend_prepare_begin(tt_backend *backend)
{
    backend->preparing = backend->ops->prepare && backend->ops->build_prepared;
}

tt_status tt_backend_prepare_end(tt_backend *backend)
{
    if (!backend->preparing) return NULL;
    backend->preparing = 0;
    return backend->ops->build_prepared(backend);
}

/* a * b + c, or SIZE_MAX when it overflows */
static size_t mul_add(size_t a, size_t b, size_t c)
{
    if (a && b > (SIZE_MAX - c) / a) return SIZE_MAX;
    return a * b + c;
}

/* One GEMM operand, `rows` x `cols` as stored (row-major, leading dimension
 * ld, `batch` of them `stride` floats apart), fits at `mem`. */
static tt_status check_gemm_operand(const char *name, tt_mem mem, size_t rows, size_t cols,
                                    size_t ld, size_t stride, size_t batch)
{
    char what[160];
    if (batch > 1)
        snprintf(what, sizeof what,
                 "%s (%zu x %zu as stored, leading dimension %zu, %zu of them %zu floats apart)",
                 name, rows, cols, ld, batch, stride);
    else
        snprintf(what, sizeof what, "%s (%zu x %zu as stored, leading dimension %zu)", name, rows,
                 cols, ld);
    if (ld < cols)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "GEMM: %s: the leading dimension is below the %zu columns; give at "
                            "least the row length of the stored matrix",
                            what, cols);
    /* the last element's index + 1 */
    size_t floats = mul_add(rows - 1, ld, cols);
    if (batch > 1) floats = floats == SIZE_MAX ? SIZE_MAX : mul_add(batch - 1, stride, floats);
    size_t bytes = floats == SIZE_MAX ? SIZE_MAX : mul_add(floats, sizeof(float), 0);
    return tt_mem_check("GEMM", what, mem, bytes);
}

tt_status tt_gemm_run(tt_backend *backend, const tt_gemm *gemm)
{
    if (!backend->ops->gemm)
        return tt_error_new(TT_ERR_UNSUPPORTED, "GEMM is not available on backend %s",
                            backend->ops->name);
    if (gemm->m == 0 || gemm->n == 0 || gemm->k == 0 || backend->preparing) return NULL;
    size_t batch = gemm->batch > 1 ? gemm->batch : 1;
    const tt_gemm *g = gemm;
    TT_TRY(check_gemm_operand("A", g->a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k,
                              g->lda, g->stride_a, batch));
    TT_TRY(check_gemm_operand("B", g->b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n,
                              g->ldb, g->stride_b, batch));
    TT_TRY(check_gemm_operand("C", g->c, g->m, g->n, g->ldc, g->stride_c, batch));
    return backend->ops->gemm(backend, gemm);
}

/* Checks an im2col geometry and the two buffers it touches. */
static tt_status check_im2col(const char *what, tt_backend *backend, const tt_im2col *g,
                              int available)
{
    if (!available)
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s is not available on backend %s", what,
                            backend->ops->name);
    size_t span_h = g->dilation_h * (g->kernel_h - 1) + 1;
    size_t span_w = g->dilation_w * (g->kernel_w - 1) + 1;
    if (!g->stride_h || !g->stride_w || !g->dilation_h || !g->dilation_w || !g->kernel_h ||
        !g->kernel_w || g->height + 2 * g->pad_h < span_h || g->width + 2 * g->pad_w < span_w)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: kernel %zux%zu (dilation %zux%zu, stride %zux%zu) does not fit "
                            "image %zux%zu padded by %zux%zu",
                            what, g->kernel_h, g->kernel_w, g->dilation_h, g->dilation_w,
                            g->stride_h, g->stride_w, g->height, g->width, g->pad_h, g->pad_w);
    size_t out_h = (g->height + 2 * g->pad_h - span_h) / g->stride_h + 1;
    size_t out_w = (g->width + 2 * g->pad_w - span_w) / g->stride_w + 1;
    size_t f = sizeof(float);
    TT_TRY(check_range(what, g->im, g->channels * g->height * g->width * f));
    TT_TRY(check_range(what, g->col, g->channels * g->kernel_h * g->kernel_w * out_h * out_w * f));
    return NULL;
}

tt_status tt_im2col_run(tt_backend *backend, const tt_im2col *g)
{
    if (g->channels == 0 || g->height == 0 || g->width == 0) return NULL;
    TT_TRY(check_im2col("im2col", backend, g, backend->ops->im2col != NULL));
    return backend->preparing ? NULL : backend->ops->im2col(backend, g);
}

tt_status tt_col2im_run(tt_backend *backend, const tt_im2col *g)
{
    if (g->channels == 0 || g->height == 0 || g->width == 0) return NULL;
    TT_TRY(check_im2col("col2im", backend, g, backend->ops->col2im != NULL));
    return backend->preparing ? NULL : backend->ops->col2im(backend, g);
}

int tt_backend_has_program(const tt_backend *backend, const char *program)
{
    if (!backend->ops->has_program) return 1;
    /* the conv dispatch asks on every call: each program is asked once and
     * the answer kept (a cache, so the backend stays logically const; every
     * backend is allocated writable by its constructor) */
    tt_backend *cache = (tt_backend *)backend;
    for (int i = 0; i < cache->program_answer_count; i++)
        if (strcmp(cache->program_answers[i].program, program) == 0)
            return cache->program_answers[i].has;
    int has = backend->ops->has_program(backend, program);
    if (cache->program_answer_count < TT_BACKEND_PROGRAM_ANSWERS &&
        strlen(program) < sizeof cache->program_answers[0].program) {
        tt_program_answer *a = &cache->program_answers[cache->program_answer_count++];
        snprintf(a->program, sizeof a->program, "%s", program);
        a->has = has;
    }
    return has;
}

tt_status tt_launch_kernel(tt_backend *backend, const char *program, const char *kernel,
                           const char *options, int dims, const size_t *global,
                           const size_t *local, int arg_count, const tt_arg *args)
{
    TT_ASSERT(dims >= 1 && dims <= 3 && arg_count <= TT_MAX_KERNEL_ARGS);
    tt_launch launch = {.program = program, .kernel = kernel, .options = options,
                        .dims = dims, .arg_count = arg_count, .args = args};
    for (int d = 0; d < dims; d++) {
        if (global[d] == 0) return NULL; /* nothing to do */
        launch.global[d] = global[d];
        launch.local[d] = local ? local[d] : 0;
    }
    for (int i = 0; i < arg_count; i++)
        if (args[i].kind == TT_ARG_MEM && !args[i].value.mem.buffer)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "kernel %s/%s: buffer argument %d is NULL", program, kernel, i);
    if (backend->preparing) return backend->ops->prepare(backend, &launch);
    if (tt_fault_hit(TT_FAULT_LAUNCH))
        return tt_error_new(TT_ERR_BACKEND, "kernel %s/%s: the device was lost (TT_FAULT)",
                            program, kernel);
    return backend->ops->launch(backend, &launch);
}

/* ---- memory report ------------------------------------------------------ */

int tt_backend_memory_held(const tt_backend *backend, tt_memory_held *out)
{
    memset(out, 0, sizeof *out);
    if (!backend->ops->memory_held) return 0;
    backend->ops->memory_held(backend, out);
    return 1;
}

void tt_memory_report_text(const tt_backend *backend, FILE *out, size_t largest)
{
    const tt_device_info *d = &backend->device;
    char a[32], b[32];
    fprintf(out, "device      %s (%s, %s)\n", d->name, d->platform, d->type);
    fprintf(out, "global      %s, largest single allocation %s\n",
            tt_format_bytes(d->global_mem_bytes, a, sizeof a),
            tt_format_bytes(d->max_alloc_bytes, b, sizeof b));
    fprintf(out, "%-12s %14s %14s\n", "category", "current", "peak");
    for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++)
        fprintf(out, "%-12s %14s %14s\n", tt_mem_category_name(c),
                tt_format_bytes(backend->mem.current[c], a, sizeof a),
                tt_format_bytes(backend->mem.peak[c], b, sizeof b));
    fprintf(out, "%-12s %14s %14s\n", "total",
            tt_format_bytes(backend->mem.current_total, a, sizeof a),
            tt_format_bytes(backend->mem.peak_total, b, sizeof b));
    tt_memory_held held;
    if (tt_backend_memory_held(backend, &held))
        fprintf(out, "%-12s %14s %14s  device memory in %d block%s (alignment, free space, a "
                     "spare block)\n",
                "held", tt_format_bytes(held.current_bytes, a, sizeof a),
                tt_format_bytes(held.peak_bytes, b, sizeof b), held.blocks,
                held.blocks == 1 ? "" : "s");
    const tt_mem_record *top[32];
    size_t n = tt_memstats_largest(&backend->mem, top, largest < 32 ? largest : 32);
    if (n) fprintf(out, "largest live buffers:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %-40s %-12s %14s\n", top[i]->name,
                tt_mem_category_name(top[i]->category),
                tt_format_bytes(top[i]->bytes, a, sizeof a));
}

char *tt_memory_report_json(const tt_backend *backend, size_t largest)
{
    const tt_device_info *d = &backend->device;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "device", tt_device_info_json(d));
    cJSON *cats = cJSON_AddObjectToObject(root, "categories");
    for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++) {
        cJSON *o = cJSON_AddObjectToObject(cats, tt_mem_category_name(c));
        cJSON_AddNumberToObject(o, "current_bytes", (double)backend->mem.current[c]);
        cJSON_AddNumberToObject(o, "peak_bytes", (double)backend->mem.peak[c]);
    }
    cJSON_AddNumberToObject(root, "current_bytes", (double)backend->mem.current_total);
    cJSON_AddNumberToObject(root, "peak_bytes", (double)backend->mem.peak_total);
    cJSON_AddNumberToObject(root, "live_buffers", (double)backend->mem.live_count);
    tt_memory_held held;
    if (tt_backend_memory_held(backend, &held)) {
        cJSON *o = cJSON_AddObjectToObject(root, "held");
        cJSON_AddNumberToObject(o, "current_bytes", (double)held.current_bytes);
        cJSON_AddNumberToObject(o, "peak_bytes", (double)held.peak_bytes);
        cJSON_AddNumberToObject(o, "blocks", held.blocks);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "largest_buffers");
    const tt_mem_record *top[32];
    size_t n = tt_memstats_largest(&backend->mem, top, largest < 32 ? largest : 32);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", top[i]->name);
        cJSON_AddStringToObject(o, "category", tt_mem_category_name(top[i]->category));
        cJSON_AddNumberToObject(o, "bytes", (double)top[i]->bytes);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* ---- argument checks shared by the ops ---------------------------------- */

tt_status tt_mem_check(const char *op, const char *what, tt_mem mem, size_t bytes)
{
    if (!mem.buffer)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %s is a NULL buffer (%zu bytes needed)",
                            op, what, bytes);
    if (mem.offset > mem.buffer->bytes || bytes > mem.buffer->bytes - mem.offset)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %s needs %zu bytes at byte offset %zu but buffer '%s' has %zu "
                            "bytes; allocate it for the whole tensor",
                            op, what, bytes, mem.offset, mem.buffer->record.name,
                            mem.buffer->bytes);
    return NULL;
}

tt_status tt_launch_check_count(const char *op, size_t count)
{
    if (count > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: %zu elements exceed one launch (%d); use a smaller micro-batch "
                            "or tile",
                            op, count, INT_MAX);
    return NULL;
}

/* The test knob's limit on every kernel's work-group; 0: none. */
static size_t knob_group_limit(void)
{
    const char *v = tt_knob_str(TT_KNOB_KERNEL_WG_LIMIT);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : 0;
}

size_t tt_device_group_max(const tt_backend *backend)
{
    size_t most = backend->device.max_work_group_size, knob = knob_group_limit();
    if (knob && (!most || knob < most)) most = knob;
    return most ? most : 1;
}

size_t tt_kernel_work_group_limit(tt_backend *backend, const char *program, const char *kernel,
                                  const char *options)
{
    size_t most = tt_device_group_max(backend);
    if (backend->ops->kernel_limit && !backend->preparing) {
        size_t own = 0;
        tt_status s = backend->ops->kernel_limit(backend, program, kernel, options, &own);
        if (s) tt_status_free(s); /* the launch builds it again and reports the error */
        else if (own && own < most) most = own;
    }
    return most;
}

typedef struct limit_relay {
    void (*fn)(void *ctx, const char *program, const char *kernel, size_t max_work_group);
    void *ctx;
    size_t device;
} limit_relay;

static void relay_limit(void *ctx, const char *program, const char *kernel, size_t most)
{
    limit_relay *r = ctx;
    r->fn(r->ctx, program, kernel, most && most < r->device ? most : r->device);
}

void tt_backend_each_kernel_limit(const tt_backend *backend,
                                  void (*fn)(void *ctx, const char *program, const char *kernel,
                                             size_t max_work_group),
                                  void *ctx)
{
    limit_relay r = {fn, ctx, tt_device_group_max(backend)};
    if (backend->ops->each_kernel_limit) backend->ops->each_kernel_limit(backend, relay_limit, &r);
}

tt_status tt_launch_check_group(const tt_backend *backend, const tt_launch *launch, size_t most)
{
    size_t device = tt_device_group_max(backend), items = 1;
    if (!most || device < most) most = device;
    if (!launch->local[0]) return NULL;
    for (int d = 0; d < launch->dims; d++) items *= launch->local[d] ? launch->local[d] : 1;
    if (items <= most) return NULL;
    return tt_error_new(TT_ERR_UNSUPPORTED,
                        "kernel %s/%s: a work-group of %zu work-items, and %s runs this kernel "
                        "in groups of at most %zu (its registers or local memory hold it "
                        "there); for a convolution choose another algorithm (--algo), else "
                        "report it with the output of `tiletrain doctor --json`",
                        launch->program, launch->kernel, items, backend->device.name, most);
}
