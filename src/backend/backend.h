/*
 * The backend interface: what the ops and the trainer may ask of a device.
 *
 * A backend is a table of function pointers (OpenCL today, Vulkan next);
 * the ops never test which backend they run on.  Memory is addressed as
 * (buffer, byte offset) pairs, never as sub-buffers, so that alignment rules
 * of sub-buffers never bite and BLAS libraries can take offsets directly.
 *
 * Kernels are named by program (opencl/<program>.cl) and kernel name.  A
 * buffer argument reaches the kernel as two parameters: the global pointer
 * and a ulong byte offset (see opencl/common.cl, TT_AT).
 *
 * All calls go to one in-order queue; reads block, everything else may run
 * asynchronously until tt_backend_finish().
 */
#ifndef TT_BACKEND_H
#define TT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/memstats.h"
#include "tiletrain.h"

typedef struct tt_backend tt_backend;

/* One device allocation, accounted under its name and category. */
typedef struct tt_buffer {
    tt_backend *backend;
    void *handle;          /* cl_mem for OpenCL, tt_vk_buffer * for Vulkan */
    size_t bytes;
    tt_mem_record record;  /* name, category, live-list links */
} tt_buffer;

/* A place in device memory: a buffer and a byte offset into it. */
typedef struct tt_mem {
    tt_buffer *buffer;
    size_t offset;
} tt_mem;

static inline tt_mem tt_mem_of(tt_buffer *buffer) { return (tt_mem){buffer, 0}; }
/* The same buffer, `bytes` further on. */
static inline tt_mem tt_mem_at(tt_mem mem, size_t bytes)
{
    return (tt_mem){mem.buffer, mem.offset + bytes};
}
/* The same buffer, `count` floats further on. */
static inline tt_mem tt_mem_f32(tt_mem mem, size_t count)
{
    return tt_mem_at(mem, count * sizeof(float));
}

/* ---- kernel arguments --------------------------------------------------- */

typedef enum tt_arg_kind {
    TT_ARG_MEM,    /* pointer + ulong byte offset: two kernel parameters */
    TT_ARG_I32,
    TT_ARG_U64,
    TT_ARG_F32,
    TT_ARG_LOCAL,  /* __local scratch of `local_bytes` */
} tt_arg_kind;

typedef struct tt_arg {
    tt_arg_kind kind;
    union {
        tt_mem mem;
        int32_t i32;
        uint64_t u64;
        float f32;
        size_t local_bytes;
    } value;
} tt_arg;

static inline tt_arg tt_arg_mem(tt_mem m) { return (tt_arg){TT_ARG_MEM, {.mem = m}}; }
static inline tt_arg tt_arg_i32(int32_t v) { return (tt_arg){TT_ARG_I32, {.i32 = v}}; }
static inline tt_arg tt_arg_u64(uint64_t v) { return (tt_arg){TT_ARG_U64, {.u64 = v}}; }
static inline tt_arg tt_arg_f32(float v) { return (tt_arg){TT_ARG_F32, {.f32 = v}}; }
static inline tt_arg tt_arg_local(size_t bytes) { return (tt_arg){TT_ARG_LOCAL, {.local_bytes = bytes}}; }

/* Expands to "count, array" for tt_launch_kernel's last two parameters. */
#define TT_ARGS(...)                                                           \
    (int)(sizeof((tt_arg[]){__VA_ARGS__}) / sizeof(tt_arg)), (tt_arg[]){__VA_ARGS__}

#define TT_MAX_KERNEL_ARGS 32

typedef struct tt_launch {
    const char *program;  /* opencl/<program>.cl */
    const char *kernel;
    const char *options;  /* -D tuning defines; NULL for none */
    int dims;             /* 1, 2 or 3 */
    size_t global[3];     /* work-items; rounded up to a multiple of local */
    size_t local[3];      /* 0 lets the runtime choose */
    int arg_count;
    const tt_arg *args;
} tt_launch;

/* Row-major single-precision GEMM: C = alpha * op(A) * op(B) + beta * C,
 * op(A) is m x k, op(B) is k x n; leading dimensions and strides count
 * floats.  batch > 1 runs `batch` GEMMs with the given strides. */
typedef struct tt_gemm {
    int trans_a, trans_b;
    size_t m, n, k;
    float alpha, beta;
    tt_mem a;
    size_t lda, stride_a;
    tt_mem b;
    size_t ldb, stride_b;
    tt_mem c;
    size_t ldc, stride_c;
    size_t batch;         /* 0 or 1: one GEMM */
} tt_gemm;

/* One image <-> its convolution columns (Caffe layout, cross-correlation):
 * the image is (channels, height, width); the columns are
 * (channels * kernel_h * kernel_w, out_h * out_w) with
 * out_h = (height + 2 pad_h - dilation_h (kernel_h - 1) - 1) / stride_h + 1
 * (likewise out_w), row index (c * kernel_h + kh) * kernel_w + kw.
 * im2col overwrites `col`; col2im ADDS every column entry into `im`. */
typedef struct tt_im2col {
    size_t channels, height, width;
    size_t kernel_h, kernel_w;
    size_t pad_h, pad_w;
    size_t stride_h, stride_w;      /* >= 1 */
    size_t dilation_h, dilation_w;  /* >= 1 */
    tt_mem im;                      /* (channels, height, width) */
    tt_mem col;                     /* (channels * kernel_h * kernel_w, out_h * out_w) */
} tt_im2col;

/* Device memory a backend holds for its buffers when it places them in
 * larger blocks (Vulkan): at least the bytes accounted in the buffers; the
 * rest is alignment, free space in blocks and a spare block. */
typedef struct tt_memory_held {
    uint64_t current_bytes;
    uint64_t peak_bytes;   /* the most since the backend was made */
    int blocks;            /* device allocations now */
} tt_memory_held;

typedef struct tt_backend_ops {
    const char *name;
    /* Runs nothing (the dry backend): launches return at once and read back
     * nothing, so nothing may be timed or trusted on it (the autotuner
     * neither times nor records there). */
    int runs_nothing;
    void (*destroy)(tt_backend *backend);
    /* Creates buf->handle for buf->bytes; accounting is done by the caller. */
    tt_status (*buffer_create)(tt_backend *backend, tt_buffer *buf);
    void (*buffer_release)(tt_backend *backend, tt_buffer *buf);
    tt_status (*write)(tt_backend *backend, tt_mem dst, const void *src, size_t bytes);
    tt_status (*read)(tt_backend *backend, void *dst, tt_mem src, size_t bytes);
    tt_status (*copy)(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes);
    tt_status (*launch)(tt_backend *backend, const tt_launch *launch);
    tt_status (*gemm)(tt_backend *backend, const tt_gemm *gemm);
    tt_status (*finish)(tt_backend *backend);
    /* Optional (NULL: TT_ERR_UNSUPPORTED from the wrappers). */
    tt_status (*im2col)(tt_backend *backend, const tt_im2col *geometry);
    tt_status (*col2im)(tt_backend *backend, const tt_im2col *geometry);
    /* Optional (NULL: every program): whether the backend has the kernels
     * of `program` (opencl/<program>.cl, shaders/<program>/), so that ops
     * choose among the algorithms it can run. */
    int (*has_program)(const tt_backend *backend, const char *program);
    /* Optional (NULL: each buffer is an allocation of its own size): the
     * device memory the backend holds for buffers (tt_backend_memory_held). */
    void (*memory_held)(const tt_backend *backend, tt_memory_held *out);
    /* Optional, both or neither (NULL: kernels are built as launches meet
     * them): `prepare` notes what `launch` would build (an OpenCL program,
     * a Vulkan pipeline) where it is not built yet, and runs nothing;
     * `build_prepared` builds everything noted, in parallel (tt_parallel_for),
     * and forgets the notes.  A build that fails there is dropped: the
     * launch that needs it builds it again and fails with its whole log. */
    tt_status (*prepare)(tt_backend *backend, const tt_launch *launch);
    tt_status (*build_prepared)(tt_backend *backend);
    /* Optional (NULL: the device's max_work_group_size for every kernel):
     * the most work-items a work-group of this kernel may have on the
     * device, built as launches build it (OpenCL: CL_KERNEL_WORK_GROUP_SIZE,
     * which register use can hold below the device's). */
    tt_status (*kernel_limit)(tt_backend *backend, const char *program, const char *kernel,
                              const char *options, size_t *max_work_group);
    /* Optional (NULL: none to report): calls `fn` with the limit of every
     * kernel built so far (`doctor` lists those held below the device's). */
    void (*each_kernel_limit)(const tt_backend *backend,
                              void (*fn)(void *ctx, const char *program, const char *kernel,
                                         size_t max_work_group),
                              void *ctx);
} tt_backend_ops;

/* Counters of the program cache, for tests and the report. */
typedef struct tt_program_stats {
    uint64_t built_from_source;
    uint64_t loaded_from_disk;
    uint64_t memory_hits;
    uint64_t to_keep; /* built from source, their binaries written when the backend
                         ends (OpenCL on PoCL) */
} tt_program_stats;

/* Device time per kind of work, from the device's own timers (benchmarks):
 * OpenCL profiling events of launches and transfers, Vulkan timestamp
 * queries around every dispatch (backend/profile.h names and sums them).
 * A kind is "<phase>/<family>": the phase the caller set (forward,
 * backward, loss, optimizer) and the op family of the kernel's program;
 * with by_kernel set, "<phase>/<kernel name>".  Kinds keep the order of
 * their first launch; the time is added when the queue is finished. */
#define TT_PROFILE_MAX_KINDS 128 /* the last one, when reached, is "(other kinds)" */
typedef struct tt_profile {
    int by_kernel;
    int count;
    char kind[TT_PROFILE_MAX_KINDS][64];
    double seconds[TT_PROFILE_MAX_KINDS];
    uint64_t launches[TT_PROFILE_MAX_KINDS];
} tt_profile;

/* Kernel variants a caller forces on one backend instead of the device's
 * own choice, so that a test reaches every variant on one machine (and a
 * benchmark times one): zero, as a backend starts, forces nothing. */
typedef enum tt_variant_force {
    TT_VARIANT_DEVICE = 0, /* the device's choice */
    TT_VARIANT_OFF,
    TT_VARIANT_ON,
} tt_variant_force;

typedef enum tt_gemm_force {
    TT_GEMM_DEVICE = 0, /* the device type's and the shape's choice */
    TT_GEMM_REGISTERS,  /* the Vulkan GEMM's variants (src/backend/vulkan/vk_blas.c) */
    TT_GEMM_TILED,
    TT_GEMM_SPLIT_K,
} tt_gemm_force;

typedef struct tt_forced_variants {
    tt_variant_force w8;              /* fill, the bias gradient and max pooling: float8
                                         kernels (ON, as on CPUs) or scalar ones (OFF) */
    tt_variant_force norm_interleave; /* the norm kernels share a plane interleaved (ON, as
                                         on GPUs) or in contiguous runs (OFF, as on CPUs) */
    tt_gemm_force gemm;               /* the Vulkan GEMM's shader (OpenCL's is CLBlast's) */
} tt_forced_variants;

#define TT_BACKEND_PROGRAM_ANSWERS 32
typedef struct tt_program_answer {
    char program[32];
    int has;
} tt_program_answer;

struct tt_backend {
    const tt_backend_ops *ops;
    int kernels_of;           /* the tt_backend_kind whose kernels it has: its own kind,
                                 or for a dry backend the kind it stands in for */
    tt_profile *profile;      /* NULL unless created with profiling */
    const char *phase;        /* tag for the profile: "forward", "backward", ... */
    tt_device_info device;
    tt_memstats mem;
    tt_program_stats programs;
    void *impl;
    /* has_program's answers so far: tt_backend_has_program asks the backend
     * once per program */
    tt_program_answer program_answers[TT_BACKEND_PROGRAM_ANSWERS];
    int program_answer_count;
    int preparing;            /* between tt_backend_prepare_begin and _end */
    tt_forced_variants forced; /* zero: every variant the device's choice */
    /* optional: every convolution the ops run on this backend is noted
     * there (ops/conv_log.h); a model's recorded step sets it */
    struct tt_conv_log *conv_log;
    char layer[48];           /* the layer the caller runs now (tt_backend_layer), for
                                 conv_log: "" when untold */
};

/* ---- device facts ------------------------------------------------------ */

/* A hash of what identifies a device and its software: platform and its
 * version, device name, vendor, driver and device version.  Every cache of
 * device-specific results keys on it (the program cache, the CLBlast
 * tuning, the convolution find-db), so all of them are invalidated by the
 * same changes (a new driver, another device). */
uint64_t tt_device_key(const tt_device_info *device);

/* The device as a JSON object, one schema wherever a device is written
 * (devices --json, mem --json, the memory report, train.jsonl): every
 * field of tt_device_info by its own name, booleans for fp16 and fp64.
 * The caller owns it (cJSON_Delete); NULL when host memory runs out. */
struct cJSON;
struct cJSON *tt_device_info_json(const tt_device_info *device);

/* ---- creation ---------------------------------------------------------- */

/* The kinds of backend; tt_backend_kind_name() names each. */
typedef enum tt_backend_kind {
    TT_BACKEND_OPENCL,
    TT_BACKEND_DRY,  /* allocates and runs nothing: exact memory estimates */
    TT_BACKEND_VULKAN, /* Vulkan compute (shaders/); TT_ERR_UNSUPPORTED when built without */
    TT_BACKEND_KIND_COUNT
} tt_backend_kind;

/* What tt_backend_create() should make. */
typedef struct tt_backend_request {
    tt_backend_kind kind;
    const char *device;          /* selector (tt_device_select); NULL or "": the default */
    int profiling;               /* per-kind device time into backend->profile
                                    (OpenCL, Vulkan; not dry) */
    const tt_device_info *like;  /* dry: the device it behaves like; NULL: the
                                    device `device` selects */
    /* dry, optional: called once for every operation the backend is asked
     * to run (launch, copy, GEMM, im2col, col2im, write, read) with the
     * places in device memory it touches (model/arena_plan.c plans from it) */
    void (*record)(void *ctx, const tt_mem *places, int count);
    void *record_ctx;
    /* dry: the kind of backend it stands in for, so that ops choose the
     * algorithms that one has (TT_BACKEND_OPENCL, 0, by default) */
    int stands_for;
    /* optional, any kind: the log the convolutions run on it go to
     * (ops/conv_log.h; the caller owns it and keeps it alive) */
    struct tt_conv_log *conv_log;
} tt_backend_request;

/* The one way to make a backend.  The OpenCL backend opens the selected
 * device (with profiling, every launch's device time is added to
 * backend->profile when the queue is finished by tt_finish; the Vulkan
 * backend's likewise, TT_ERR_UNSUPPORTED when its compute queue has no
 * timestamps).  The dry backend behaves like `like` (or the selected
 * device) for allocation limits and accounting but allocates and runs
 * nothing: running the engine's setup on it gives an exact memory
 * estimate; it takes no profiling.  The Vulkan backend opens the Vulkan device `device` selects
 * among the Vulkan devices (same rules; default: the first GPU, else the
 * first device); TT_ERR_UNSUPPORTED in a build without it (-DTT_VULKAN=OFF).
 * *out is owned by the caller: tt_backend_destroy(). */
tt_status tt_backend_create(const tt_backend_request *request, tt_backend **out);
/* The devices a kind of backend can open, in the order its --device
 * indices count (OpenCL: tt_devices_list; Vulkan: its physical devices).
 * The dry backend has none of its own (TT_ERR_INVALID_ARGUMENT); a build
 * without Vulkan answers TT_ERR_UNSUPPORTED.  *devices: free(). */
tt_status tt_backend_devices(tt_backend_kind kind, tt_device_info **devices, int *count);
/* "opencl", "dry", "vulkan"; "unknown" outside the enum. */
const char *tt_backend_kind_name(tt_backend_kind kind);
/* The kind named `name` (case-insensitive); TT_ERR_INVALID_ARGUMENT listing
 * the kinds there are for any other name. */
tt_status tt_backend_kind_parse(const char *name, tt_backend_kind *out);
/* The --backend option of every command that runs on a device. */
#define TT_BACKEND_CHOICES "auto|opencl|vulkan"
#define TT_BACKEND_HELP                                                             \
    "the compute API: auto (the best device of either: a GPU first, OpenCL before " \
    "Vulkan), opencl or vulkan; `tiletrain devices` lists both"
/* The request of a run: `backend` "opencl" or "vulkan" (the dry kind is
 * not a run's), or NULL, "" or "auto": the API of the best device, a GPU
 * first - the first OpenCL GPU, else the first Vulkan GPU, else the first
 * OpenCL device (PoCL), else the first Vulkan device (lavapipe).  With a
 * selector (`device`, else $TT_DEVICE) auto takes the first API that has a
 * device it names, OpenCL first.  Sets out->kind and out->device (the
 * selector the chosen backend must use); TT_ERR_NO_DEVICE when nothing
 * fits. */
tt_status tt_backend_choose(const char *backend, const char *device, tt_backend_request *out);
/* Data parallel without a selector: local rank r of a machine takes the
 * GPUs of out->kind in turn (GPU r mod their count), or the devices in
 * turn where there is no GPU; writes the index into spec (size bytes) and
 * points out->device at it. */
tt_status tt_backend_spread(tt_backend_request *out, int local_rank, char *spec, size_t size);

/* Sets the phase tag of later launches (a static string); NULL: "other". */
static inline void tt_backend_phase(tt_backend *backend, const char *phase)
{
    backend->phase = phase;
}

/* Names the layer whose work follows (a copy is kept; NULL: none), so
 * that a convolution log says whose each convolution is. */
static inline void tt_backend_layer(tt_backend *backend, const char *name)
{
    size_t i = 0;
    for (; name && name[i] && i + 1 < sizeof backend->layer; i++) backend->layer[i] = name[i];
    backend->layer[i] = '\0';
}

/* Frees every buffer still alive, then the backend.  NULL is allowed. */
void tt_backend_destroy(tt_backend *backend);

/* Allocates `bytes` (> 0) on the device under a name and a category.  An
 * allocation above the device's largest single allocation is refused with
 * TT_ERR_TOO_LARGE before the device is asked; an arena that needs more
 * splits itself into several buffers.  *out: tt_buffer_free(). */
tt_status tt_buffer_alloc(tt_backend *backend, size_t bytes, tt_mem_category category,
                          const char *name, tt_buffer **out);
/* NULL is allowed. */
void tt_buffer_free(tt_buffer *buffer);

tt_status tt_write(tt_backend *backend, tt_mem dst, const void *src, size_t bytes);
tt_status tt_read(tt_backend *backend, void *dst, tt_mem src, size_t bytes);
tt_status tt_copy(tt_backend *backend, tt_mem dst, tt_mem src, size_t bytes);
tt_status tt_finish(tt_backend *backend);
tt_status tt_gemm_run(tt_backend *backend, const tt_gemm *gemm);
/* Columns of one image (see tt_im2col): im2col overwrites g->col, col2im adds
 * into g->im.  Both check that the image and the columns fit their buffers. */
tt_status tt_im2col_run(tt_backend *backend, const tt_im2col *g);
tt_status tt_col2im_run(tt_backend *backend, const tt_im2col *g);

/* Whether the backend has the kernels of `program` (has_program; 1 when
 * the backend does not say). */
int tt_backend_has_program(const tt_backend *backend, const char *program);

/* Building kernels ahead, all at once: from tt_backend_prepare_begin to
 * tt_backend_prepare_end, launches, GEMMs, copies, reads and writes run
 * nothing and return at once (a read leaves its destination as it was);
 * each launch notes the kernel build it would need, and _end builds them
 * in parallel on every core.  The autotuner runs a layer's candidates so
 * before timing them (src/ops/conv_autotune.c), so that a first run
 * compiles on every core rather than one kernel at a time.  A backend
 * without the two ops builds nothing ahead. */
void tt_backend_prepare_begin(tt_backend *backend);
tt_status tt_backend_prepare_end(tt_backend *backend);

/* Runs one kernel.  `global` has `dims` entries; `local` may be NULL. */
tt_status tt_launch_kernel(tt_backend *backend, const char *program, const char *kernel,
                           const char *options, int dims, const size_t *global,
                           const size_t *local, int arg_count, const tt_arg *args);

/* Shorthand: a 1-D launch over n work-items, runtime-chosen work-group. */
#define TT_LAUNCH_1D(backend, program, kernel, n, ...)                         \
    tt_launch_kernel((backend), (program), (kernel), NULL, 1, (size_t[]){(n)}, \
                     NULL, TT_ARGS(__VA_ARGS__))

/* Fills *out and returns 1 when the backend places buffers in blocks of
 * device memory (memory_held); 0 (and zeros) when each buffer is its own
 * allocation. */
int tt_backend_memory_held(const tt_backend *backend, tt_memory_held *out);

/* The memory report: device facts, current and peak bytes per category and
 * the `largest` biggest live buffers, then (tt_backend_memory_held) the
 * device memory held in blocks.  Text into a FILE, or JSON (a string the
 * caller frees). */
#include <stdio.h>
void tt_memory_report_text(const tt_backend *backend, FILE *out, size_t largest);
char *tt_memory_report_json(const tt_backend *backend, size_t largest);

/* ---- argument checks shared by the ops ---------------------------------- */

/* `bytes` at `mem` lie inside its buffer.  A NULL buffer, an offset past
 * the end or a range that overruns is TT_ERR_INVALID_ARGUMENT naming `op`
 * (e.g. "conv2d forward"), `what` (e.g. "weight") and the buffer. */
tt_status tt_mem_check(const char *op, const char *what, tt_mem mem, size_t bytes);
/* `count` work-items or elements fit one launch (kernels index with int):
 * TT_ERR_UNSUPPORTED naming `op` otherwise. */
tt_status tt_launch_check_count(const char *op, size_t count);

/* The most work-items a work-group may have on `backend`'s device (at
 * least 1), lowered by the test knob $TT_KERNEL_WG_LIMIT: what ops size
 * their groups by, before a kernel's own limit (below). */
size_t tt_device_group_max(const tt_backend *backend);
/* The most work-items a work-group of `kernel` may have on `backend`'s
 * device (backend op kernel_limit, else the device's), lowered by the test
 * knob $TT_KERNEL_WG_LIMIT; ops with a free work-group size fit it.
 * While preparing, or where the kernel does not build, the device's. */
size_t tt_kernel_work_group_limit(tt_backend *backend, const char *program, const char *kernel,
                                  const char *options);
/* Calls `fn` for every kernel built so far on `backend` with its limit
 * (the kernel's own, within tt_device_group_max); nothing where the
 * backend keeps no per-kernel limit (Vulkan has none). */
void tt_backend_each_kernel_limit(const tt_backend *backend,
                                  void (*fn)(void *ctx, const char *program, const char *kernel,
                                             size_t max_work_group),
                                  void *ctx);
/* NULL, or TT_ERR_UNSUPPORTED naming the kernel when `launch`'s work-group
 * is larger than `most` (a backend's launch calls it with the kernel's
 * limit, 0 where it has none) or than tt_device_group_max. */
tt_status tt_launch_check_group(const tt_backend *backend, const tt_launch *launch, size_t most);

#endif
