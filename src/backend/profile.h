/*
 * What every backend that profiles shares (backend->profile, see
 * tt_profile in backend.h): the kind a launch's device time counts under,
 * and adding one timed launch to the profile.  The OpenCL backend times
 * launches with profiling events (opencl/cl_profile.c), the Vulkan backend
 * with timestamp queries (vulkan/vk_profile.c); both name and sum them
 * here, so a bench reads the same kinds on either.
 */
#ifndef TT_BACKEND_PROFILE_H
#define TT_BACKEND_PROFILE_H

#include <stdio.h>

#include "backend/backend.h"

/* Bytes of a kind's name, with its terminator (tt_profile.kind). */
#define TT_PROFILE_KIND_BYTES ((int)sizeof(((tt_profile *)0)->kind[0]))

/* The op family of a kernel program: conv_direct, blas, gemm... -> conv;
 * "other" for a program the table does not know. */
const char *tt_profile_family(const char *program);

/* The kind a launch of (program, kernel) counts under now:
 * "<phase>/<family>", or "<phase>/<kernel>" with by_kernel; the phase is
 * the one tt_backend_phase() set last ("other" when none).  Truncated to
 * fit `out` (TT_PROFILE_KIND_BYTES). */
void tt_profile_kind(const tt_backend *backend, const char *program, const char *kernel,
                     char *out);

/* Adds one launch of `kind` that took `seconds` to `profile`: a new kind
 * is appended (kinds keep the order of their first launch); once the
 * table is full, the kinds not in it count together under its last,
 * TT_PROFILE_OTHER_KINDS, so that no time goes missing from the sums. */
#define TT_PROFILE_OTHER_KINDS "(other kinds)"
void tt_profile_add(tt_profile *profile, const char *kind, double seconds);

/* ---- reading a profile (bench, train --profile) ---- */

/* The device seconds of every kind together. */
double tt_profile_seconds(const tt_profile *profile);
/* The kinds as a table on `out`, a line each, `indent` before each:
 * kind, seconds, share of the whole, launches. */
void tt_profile_print(const tt_profile *profile, FILE *out, const char *indent);
/* The kinds as a JSON object {kind: seconds}; NULL when host memory runs
 * out.  The caller owns it (cJSON_Delete). */
struct cJSON;
struct cJSON *tt_profile_json(const tt_profile *profile);

#endif
