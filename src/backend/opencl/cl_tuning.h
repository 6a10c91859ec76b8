/*
 * Per-device tuning of CLBlast's GEMM kernels.
 *
 * CLBlast ships kernel parameters tuned for GPUs; on other devices (PoCL on
 * a CPU above all) they are several times off.  `tiletrain tune` searches
 * CLBlast's parameter space on the GEMM shapes a model actually runs, timing
 * the whole CLBlastSgemm call (pre/post-processing kernels included), and
 * stores the winner per device in the cache folder:
 *   $TT_CACHE_DIR/clblast-<hash>.json, else $XDG_CACHE_HOME/tiletrain/...,
 *   else $HOME/.cache/tiletrain/...
 * where <hash> is tt_device_key() (the key of every device cache).
 * Creating the OpenCL backend applies the file through
 * CLBlastOverrideParameters (unless TT_NO_TUNING=1); a corrupt file or one
 * written for another device is ignored with a warning.
 *
 * Three CLBlast "kernels" are tuned together, because CLBlast's GEMM picks
 * between them by size: Xgemm (the indirect GEMM, with padding/transposing
 * helpers), XgemmDirect (one kernel, no helpers) and GemmRoutine, whose
 * XGEMM_MIN_INDIRECT_SIZE s sends m*n*k < s^3 to the direct kernel.
 * Overrides are process-wide in CLBlast (per device id), not per backend.
 *
 * This header is the table the backend reads when it starts; the search
 * that fills it (`tiletrain tune`) is in src/tune/.
 */
#ifndef TT_CL_TUNING_H
#define TT_CL_TUNING_H

#include <stdio.h>

#include "backend/backend.h"

typedef enum tt_clblast_kernel {
    TT_CLBLAST_XGEMM = 0,
    TT_CLBLAST_XGEMM_DIRECT,
    TT_CLBLAST_GEMM_ROUTINE,
    TT_CLBLAST_KERNEL_COUNT
} tt_clblast_kernel;

#define TT_CLBLAST_MAX_PARAMS 16

/* A kernel's name in CLBlast and its parameters, all of which an override
 * must give (CLBlast 1.5). */
typedef struct tt_clblast_kernel_desc {
    const char *name;
    int count;
    const char *params[TT_CLBLAST_MAX_PARAMS];
} tt_clblast_kernel_desc;

extern const tt_clblast_kernel_desc tt_clblast_kernels[TT_CLBLAST_KERNEL_COUNT];

/* Index of a named parameter of a kernel, or -1. */
int tt_clblast_param_index(tt_clblast_kernel kernel, const char *param);

/* One device's parameters for single precision. */
typedef struct tt_cl_tuning {
    char device[128];            /* CL_DEVICE_NAME */
    char driver_version[128];    /* CL_DRIVER_VERSION */
    char platform_version[128];  /* CL_PLATFORM_VERSION */
    size_t values[TT_CLBLAST_KERNEL_COUNT][TT_CLBLAST_MAX_PARAMS]; /* in desc order */
    double gflops_before;        /* informational: over the tuned shapes; 0 unknown */
    double gflops_after;
} tt_cl_tuning;

/* Shorthands into tuning->values. */
static inline size_t *tt_cl_tuning_xgemm(tt_cl_tuning *t) { return t->values[TT_CLBLAST_XGEMM]; }
static inline size_t *tt_cl_tuning_direct(tt_cl_tuning *t)
{
    return t->values[TT_CLBLAST_XGEMM_DIRECT];
}

/* Copies the device's identity (name, driver, platform version) into t. */
void tt_cl_tuning_set_device(tt_cl_tuning *t, const tt_device_info *device);

/* NULL if the values of `kernel` satisfy CLBlast's constraints on this
 * device (divisibility, work-group size, local memory); otherwise an error
 * naming the broken rule. */
tt_status tt_cl_tuning_check_kernel(tt_clblast_kernel kernel, const size_t *values,
                                    const tt_device_info *device);
/* All three kernels. */
tt_status tt_cl_tuning_check(const tt_cl_tuning *t, const tt_device_info *device);

/* Where the device's file lives; "" (and 0) when no cache folder is known
 * (no TT_CACHE_DIR, XDG_CACHE_HOME or HOME).  Returns 1 when path is set. */
int tt_cl_tuning_path(const tt_device_info *device, char *path, size_t size);

/* Writes t as JSON, atomically (temporary file, fsync, rename); creates the
 * folder.  Errors name the file. */
tt_status tt_cl_tuning_save(const char *path, const tt_cl_tuning *t);

/* Reads a file written by tt_cl_tuning_save.  TT_ERR_IO: cannot be read;
 * TT_ERR_FORMAT: not a valid tuning file (the message says what is wrong);
 * TT_ERR_INVALID_ARGUMENT: written for another device than `device` (NULL
 * skips that check) or values that break CLBlast's constraints. */
tt_status tt_cl_tuning_load(const char *path, const tt_device_info *device, tt_cl_tuning *out);

/* Hands the parameters to CLBlast for the backend's device (process-wide;
 * the next GEMM recompiles).  Checks them first; on an error nothing of
 * the failing kernel is applied. */
tt_status tt_cl_tuning_apply(tt_backend *backend, const tt_cl_tuning *t);

/* What the OpenCL backend calls when it is created: applies the device's
 * cached file if there is one, unless TT_NO_TUNING is set to anything but
 * "" or "0".
 * A file that cannot be used prints one warning line to `warnings` (if not
 * NULL) and is ignored.  Returns 1 if parameters were applied. */
int tt_cl_tuning_apply_cached(tt_backend *backend, FILE *warnings);

#endif
