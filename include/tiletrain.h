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

/* ---- front ends: the Python package (python/tiletrain) -------------------
 * Options go in as `tiletrain train`'s flags (argv-style strings, parsed by
 * the command line's own table), results come out as JSON text; strings
 * the library returns are freed with tt_string_free(). */

const char *tt_version(void);
/* Frees a string returned below; NULL allowed. */
void tt_string_free(char *text);

/* Every device of tt_devices_list() as a JSON array of objects. */
tt_status tt_devices_json(char **json);

/* The plan `tiletrain plan` makes for train's flags argv[0..argc) (--data
 * DIR and any flags that set its inputs: --format, --device, --mem-limit,
 * --model ...), as plan.json's JSON; nothing is written. */
tt_status tt_plan_args(int argc, char **argv, char **json);

/* train's option table as a JSON array of {"name", "flag", "metavar",
 * "help", "default"}: what tt_train_args and tt_plan_args take. */
tt_status tt_train_options_json(char **json);

/* Runs what `tiletrain train` runs for the flags argv[0..argc) (without the
 * "train" word): parse, plan, train, validate, checkpoint, report.  Every
 * line of train.jsonl also goes to on_log_line (may be NULL).  A non-zero
 * *interrupt (may be NULL) stops at the end of the current micro-batch,
 * the window dropped, OUT/last.safetensors holding the steps before it.
 * *outcome (may be NULL; JSON: steps, skipped_steps, interrupted,
 * stopped_early, out) on success. */
tt_status tt_train_args(int argc, char **argv, void (*on_log_line)(void *ctx, const char *line),
                        void *ctx, volatile int *interrupt, char **outcome);

/* A checkpoint opened for prediction on a device (selector as
 * tt_device_select; NULL: the default), tiles of tile_h x tile_w, `batch`
 * tiles a forward pass.  *out: tt_predictor_close(). */
typedef struct tt_predictor tt_predictor;
tt_status tt_predictor_open(const char *checkpoint, const char *device, int tile_h, int tile_w,
                            int batch, tt_predictor **out);
/* JSON: {"classes", "names", "kind" ("multi-label" or "class-index"),
 * "device", "tile"}. */
tt_status tt_predictor_info(const tt_predictor *predictor, char **json);
/* Predicts a height x width RGB image (interleaved bytes, row-major) with
 * the sliding window, `overlap` between tiles: probs (classes x height x
 * width floats) receives the per-class probabilities (sigmoid for a
 * multi-label model, softmax otherwise); masks (may be NULL) what `tiletrain
 * predict` writes: classes x height x width 0/1 planes (multi-label, the
 * checkpoint's thresholds and minimum sizes, else 0.5 and none), or height
 * x width class indices. */
tt_status tt_predictor_run(tt_predictor *predictor, const uint8_t *rgb, int height, int width,
                           double overlap, float *probs, uint8_t *masks);
void tt_predictor_close(tt_predictor *predictor);

#ifdef __cplusplus
}
#endif
#endif
