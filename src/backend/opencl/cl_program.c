/*
 * Kernel programs: sources embedded from opencl/ (or read from
 * $TT_KERNEL_DIR while developing), built per (device, source, options),
 * cached in memory and as program binaries on disk under
 * $XDG_CACHE_HOME/tiletrain/programs (or $TT_CACHE_DIR), so that a second
 * run does not recompile.  Every program is prefixed with opencl/common.cl.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/kernels_embedded.h"
#include "backend/opencl/cl_errors.h"
#include "backend/opencl/cl_internal.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/hash.h"
#include "core/knobs.h"
#include "core/parallel.h"
#include "core/status.h"

static const tt_embedded_kernel *embedded(const char *name)
{
    for (size_t i = 0; i < tt_embedded_kernel_count; i++)
        if (strcmp(tt_embedded_kernels[i].name, name) == 0) return &tt_embedded_kernels[i];
    return NULL;
}

/* Reads a whole file (`what` names it in errors); *out is malloc'd and
 * NUL-terminated.  A read that fails (EIO, or TT_FAULT=read) is TT_ERR_IO. */
static tt_status read_file(const char *what, const char *path, char **out, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tt_error_new(TT_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    tt_status status = tt_read_fault(what, path);
    char *buf = NULL;
    if (status) goto done;
    if (fseek(f, 0, SEEK_END) != 0) goto io_error;
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) goto io_error;
    buf = tt_malloc((size_t)len + 1);
    if (!buf) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading '%s': out of host memory", path);
        goto done;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) goto io_error;
    buf[len] = '\0';
    *out = buf;
    *size = (size_t)len;
    buf = NULL;
    goto done;
io_error:
    status = tt_error_new(TT_ERR_IO, "cannot read %s '%s': %s", what, path, strerror(errno));
done:
    free(buf);
    fclose(f);
    return status;
}

/* One kernel file's text: from $TT_KERNEL_DIR if set, else embedded. */
static tt_status source_text(const char *program, char **out, size_t *size)
{
    const char *dir = tt_knob_str(TT_KNOB_KERNEL_DIR);
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.cl", dir, program);
        return tt_error_prefix(read_file("the kernel source", path, out, size),
                               "loading kernel program (TT_KERNEL_DIR)");
    }
    const tt_embedded_kernel *k = embedded(program);
    if (!k)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "no kernel program '%s' is built in (opencl/%s.cl)", program, program);
    *out = tt_malloc(k->size + 1);
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "loading kernel program: out of memory");
    memcpy(*out, k->data, k->size + 1);
    *size = k->size;
    return NULL;
}

/* The file a program is built from: its own, or for a program that is
 * another's source built with its row's defines, that source.  Such a
 * program has a name of its own so that a backend without its kernels
 * says so (Vulkan's has_program). */
static const char *source_of(const char *program)
{
    static const char *const same_source[][2] = {
        {"conv_direct_w8", "conv_direct"}, /* -DTT_DIRECT_VW=8 (src/ops/conv_direct.c) */
        {"convt_tiles_w8", "convt_tiles"}, /* its _w8 kernels (src/ops/convt_tiles.c) */
    };
    for (size_t i = 0; i < sizeof same_source / sizeof same_source[0]; i++)
        if (strcmp(program, same_source[i][0]) == 0) return same_source[i][1];
    return program;
}

/* common.cl followed by the program's own text. */
static tt_status full_source(const char *program, char **out)
{
    char *common = NULL, *own = NULL;
    size_t common_size = 0, own_size = 0;
    tt_status status = NULL;
    program = source_of(program);
    TT_CHECK(source_text("common", &common, &common_size));
    TT_CHECK(source_text(program, &own, &own_size));
    *out = tt_malloc(common_size + own_size + 64);
    if (!*out) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "loading kernel program: out of memory");
        goto cleanup;
    }
    sprintf(*out, "%s\n#line 1 \"%s.cl\"\n%s", common, program, own);
cleanup:
    free(common);
    free(own);
    return status;
}

static tt_status build_log(cl_program prog, cl_device_id dev, const char *program, cl_int err)
{
    size_t size = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = tt_calloc(size + 1, 1);
    if (log) clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    const char *source = source_of(program); /* "'conv_direct.cl' as conv_direct_w8" */
    int alias = source != program;
    tt_status s = tt_error_new(TT_ERR_BUILD,
                               "building kernel program '%s.cl'%s%s failed: %s (%d); the build "
                               "log follows",
                               source, alias ? " as " : "", alias ? program : "",
                               tt_cl_error_name(err), err);
    tt_error_set_detail(s, log ? log : "(no build log)");
    free(log);
    return s;
}

/* Tries the disk cache; returns NULL program on a miss, a stale binary or
 * a file that cannot be read (the program is built from source then and
 * the file written again). */
static cl_program load_binary(tt_cl_backend *cl, const char *path, const char *options)
{
    char *bin = NULL;
    size_t size = 0;
    if (access(path, F_OK) != 0) return NULL; /* a miss */
    tt_status s = read_file("the cached program binary", path, &bin, &size);
    if (s) { /* a failing disk: as a miss, said */
        fprintf(stderr, "tiletrain: warning: %s; the program is built from source\n",
                tt_status_message(s));
        tt_status_free(s);
        return NULL;
    }
    cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
    const unsigned char *ptr = (const unsigned char *)bin;
    cl_program prog = clCreateProgramWithBinary(cl->context, 1, &cl->device, &size, &ptr,
                                                &bin_status, &err);
    free(bin);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        if (prog) clReleaseProgram(prog);
        return NULL;
    }
    if (clBuildProgram(prog, 1, &cl->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

static void store_binary(tt_cl_backend *cl, cl_program prog, const char *path)
{
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *bin = tt_malloc(size);
    if (!bin) return;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
        tt_status_free(tt_make_dirs(cl->cache_dir)); /* no cache: the write below fails quietly */
        /* atomic: readers never see half a file */
        tt_status_free(tt_file_save_atomic(path, bin, size));
    }
    free(bin);
}

/* The program (program, options): from the disk cache (*from_disk = 1) or
 * built.  Safe on several threads at once: it changes nothing of the
 * backend's (the caller counts). */
static tt_status build_program(tt_backend *backend, const char *program, const char *options,
                               cl_program *out, int *from_disk, char **keep_path)
{
    tt_cl_backend *cl = backend->impl;
    char *src = NULL;
    TT_TRY(full_source(program, &src));

    uint64_t h = tt_device_key(&backend->device);
    h = tt_hash_bytes(h, options, strlen(options) + 1);
    h = tt_hash_bytes(h, src, strlen(src));
    char path[1100] = "";
    if (cl->cache_dir[0]) {
        snprintf(path, sizeof path, "%s/%s-%016llx.bin", cl->cache_dir, program,
                 (unsigned long long)h);
        cl_program prog = load_binary(cl, path, options);
        if (prog) {
            free(src);
            *from_disk = 1;
            *out = prog;
            return NULL;
        }
    }

    cl_int err;
    const char *text = src;
    cl_program prog = clCreateProgramWithSource(cl->context, 1, &text, NULL, &err);
    free(src);
    if (err != CL_SUCCESS) return tt_error_cl(err, "clCreateProgramWithSource('%s')", program);
    err = clBuildProgram(prog, 1, &cl->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        tt_status s = build_log(prog, cl->device, program, err);
        clReleaseProgram(prog);
        return s;
    }
    *from_disk = 0;
    if (path[0] && cl->keep_late) *keep_path = tt_strdup(path); /* NULL: not kept */
    else if (path[0]) store_binary(cl, prog, path);
    *out = prog;
    return NULL;
}

static tt_cl_program_entry *find(tt_cl_program_entry *list, int count, const char *program,
                                 const char *options)
{
    for (int i = 0; i < count; i++)
        if (strcmp(list[i].program, program) == 0 && strcmp(list[i].options, options) == 0)
            return &list[i];
    return NULL;
}

/* Appends (program, options) to *list, not yet built (handle NULL). */
static tt_status append(tt_cl_program_entry **list, int *count, const char *program,
                        const char *options)
{
    if (strlen(program) >= sizeof (*list)->program)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "kernel program name '%s' is too long",
                            program);
    tt_cl_program_entry *grown = tt_realloc(*list, sizeof *grown * (size_t)(*count + 1));
    if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "program cache: out of host memory");
    *list = grown;
    tt_cl_program_entry *e = &grown[*count];
    memset(e, 0, sizeof *e);
    snprintf(e->program, sizeof e->program, "%s", program);
    e->options = tt_strdup(options);
    if (!e->options) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "program cache: out of host memory");
    (*count)++;
    return NULL;
}

static void count_build(tt_backend *backend, int from_disk, const tt_cl_program_entry *e)
{
    if (from_disk) backend->programs.loaded_from_disk++;
    else backend->programs.built_from_source++;
    if (e->keep_path) backend->programs.to_keep++;
}

static tt_status program_get(tt_backend *backend, const char *program, const char *options,
                             tt_cl_program_entry **out)
{
    tt_cl_backend *cl = backend->impl;
    if ((*out = find(cl->programs, cl->program_count, program, options))) return NULL;
    TT_TRY(append(&cl->programs, &cl->program_count, program, options));
    tt_cl_program_entry *e = &cl->programs[cl->program_count - 1];
    int from_disk = 0;
    tt_status s = build_program(backend, program, options, &e->handle, &from_disk, &e->keep_path);
    if (s) {
        free(e->options);
        cl->program_count--;
        return s;
    }
    count_build(backend, from_disk, e);
    *out = e;
    return NULL;
}

tt_status tt_cl_prepare(tt_backend *backend, const tt_launch *launch)
{
    tt_cl_backend *cl = backend->impl;
    const char *options = launch->options ? launch->options : "";
    if (find(cl->programs, cl->program_count, launch->program, options) ||
        find(cl->prepared, cl->prepared_count, launch->program, options))
        return NULL;
    return append(&cl->prepared, &cl->prepared_count, launch->program, options);
}

typedef struct prepared_build {
    tt_backend *backend;
    tt_cl_program_entry *entries;
    tt_status *failed;
    int *from_disk;
} prepared_build;

static void build_one(void *ctx, size_t i)
{
    prepared_build *b = ctx;
    tt_cl_program_entry *e = &b->entries[i];
    b->failed[i] = build_program(b->backend, e->program, e->options, &e->handle, &b->from_disk[i],
                                 &e->keep_path);
}

tt_status tt_cl_build_prepared(tt_backend *backend)
{
    tt_cl_backend *cl = backend->impl;
    int n = cl->prepared_count;
    tt_cl_program_entry *built = cl->prepared;
    cl->prepared = NULL, cl->prepared_count = 0;
    tt_status *failed = tt_calloc((size_t)n + 1, sizeof *failed);
    int *from_disk = tt_calloc((size_t)n + 1, sizeof *from_disk);
    tt_cl_program_entry *grown =
        tt_realloc(cl->programs, sizeof *grown * (size_t)(cl->program_count + n + 1));
    tt_status status = NULL;
    if (!failed || !from_disk || !grown) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "program cache: out of host memory");
    } else {
        cl->programs = grown;
        prepared_build b = {backend, built, failed, from_disk};
        tt_parallel_for((size_t)n, build_one, &b);
    }
    for (int i = 0; i < n; i++) {
        if (status || failed[i]) { /* the launch that needs it fails with the log */
            tt_status_free(failed ? failed[i] : NULL);
            free(built[i].options);
            continue;
        }
        count_build(backend, from_disk[i], &built[i]);
        cl->programs[cl->program_count++] = built[i];
    }
    free(built);
    free(failed);
    free(from_disk);
    return status;
}

/* `kernel` of the program entry `e`, created (with its work-group limit)
 * on first use. */
static tt_status kernel_entry(tt_backend *backend, tt_cl_program_entry *e, const char *program,
                              const char *kernel, tt_cl_kernel_entry **out)
{
    for (int i = 0; i < e->kernel_count; i++)
        if (strcmp(e->kernels[i].name, kernel) == 0) {
            *out = &e->kernels[i];
            return NULL;
        }
    tt_cl_kernel_entry *grown = tt_realloc(e->kernels, sizeof *grown * (size_t)(e->kernel_count + 1));
    if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "kernel cache: out of host memory");
    e->kernels = grown;
    cl_int err;
    cl_kernel k = clCreateKernel(e->handle, kernel, &err);
    if (err != CL_SUCCESS) return tt_error_cl(err, "clCreateKernel('%s' in %s.cl)", kernel, program);
    tt_cl_backend *cl = backend->impl;
    /* register use can hold a kernel below the device's largest group */
    size_t most = 0;
    if (clGetKernelWorkGroupInfo(k, cl->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most,
                                 NULL) != CL_SUCCESS)
        most = 0;
    tt_cl_kernel_entry *entry = &e->kernels[e->kernel_count++];
    snprintf(entry->name, sizeof entry->name, "%s", kernel);
    entry->kernel = k;
    entry->max_work_group = most ? most : backend->device.max_work_group_size;
    *out = entry;
    return NULL;
}

tt_status tt_cl_kernel_get(tt_backend *backend, const char *program, const char *kernel,
                           const char *options, cl_kernel *out, size_t *max_work_group)
{
    tt_cl_program_entry *e = NULL;
    tt_cl_kernel_entry *entry = NULL;
    uint64_t built = backend->programs.built_from_source + backend->programs.loaded_from_disk;
    TT_TRY(program_get(backend, program, options ? options : "", &e));
    TT_TRY(kernel_entry(backend, e, program, kernel, &entry));
    if (built == backend->programs.built_from_source + backend->programs.loaded_from_disk)
        backend->programs.memory_hits++;
    *out = entry->kernel;
    if (max_work_group) *max_work_group = entry->max_work_group;
    return NULL;
}

void tt_cl_each_kernel_limit(const tt_backend *backend,
                             void (*fn)(void *ctx, const char *program, const char *kernel,
                                        size_t max_work_group),
                             void *ctx)
{
    const tt_cl_backend *cl = backend->impl;
    for (int i = 0; i < cl->program_count; i++)
        for (int k = 0; k < cl->programs[i].kernel_count; k++)
            fn(ctx, cl->programs[i].program, cl->programs[i].kernels[k].name,
               cl->programs[i].kernels[k].max_work_group);
}

tt_status tt_cl_kernel_limit(tt_backend *backend, const char *program, const char *kernel,
                             const char *options, size_t *max_work_group)
{
    tt_cl_program_entry *e = NULL;
    tt_cl_kernel_entry *entry = NULL;
    TT_TRY(program_get(backend, program, options ? options : "", &e));
    TT_TRY(kernel_entry(backend, e, program, kernel, &entry));
    *max_work_group = entry->max_work_group;
    return NULL;
}

static void keep_one(void *ctx, size_t i)
{
    tt_cl_backend *cl = ctx;
    tt_cl_program_entry *e = &cl->programs[i];
    if (e->keep_path) store_binary(cl, e->handle, e->keep_path);
}

void tt_cl_programs_release(tt_backend *backend)
{
    tt_cl_backend *cl = backend->impl;
    int keep = 0;
    for (int i = 0; i < cl->program_count; i++) keep += cl->programs[i].keep_path != NULL;
    if (keep && isatty(STDERR_FILENO)) /* seconds on a first run: a user is told why */
        fprintf(stderr, "tiletrain: keeping the %d kernel programs built for %s for later runs "
                        "(first run on this device only)\n",
                keep, backend->device.name);
    if (keep) tt_parallel_for((size_t)cl->program_count, keep_one, cl);
    for (int i = 0; i < cl->program_count; i++) {
        tt_cl_program_entry *e = &cl->programs[i];
        for (int k = 0; k < e->kernel_count; k++) clReleaseKernel(e->kernels[k].kernel);
        free(e->kernels);
        free(e->options);
        free(e->keep_path);
        clReleaseProgram(e->handle);
    }
    free(cl->programs);
    cl->programs = NULL;
    cl->program_count = 0;
    for (int i = 0; i < cl->prepared_count; i++) free(cl->prepared[i].options);
    free(cl->prepared);
    cl->prepared = NULL;
    cl->prepared_count = 0;
}
