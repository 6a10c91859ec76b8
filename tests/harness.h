/*
 * Shared test helpers: one backend per test program, seeded random data,
 * device round trips, error measures, and central-difference gradients in
 * float64 for checking backward kernels.
 *
 * The backend is the kind $TH_BACKEND names: opencl (the default; the
 * device TT_DEVICE or the default picks, PoCL on a machine without a GPU)
 * or vulkan (lavapipe, "llvmpipe", unless TT_DEVICE names another, with the
 * Khronos validation layer on).  CTest runs each TH_EVERY suite once per
 * backend (th_run_suite, tests/CMakeLists.txt).  On Vulkan, th_run_suite
 * fails every test after which a validation message has arrived.
 */
#ifndef TT_TESTS_HARNESS_H
#define TT_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <CUnit/CUnit.h>

#include "backend/backend.h"
#include "core/precision.h"

/* The python3 that runs the PyTorch twins: tt_python (tests/tt_python.c,
 * CMake passes its path), which forks them from a server that imported
 * torch once, or runs /usr/bin/python3 itself. */
#ifndef TH_PYTHON
#define TH_PYTHON "/usr/bin/python3"
#endif

/* Fails the current test fatally, printing the status message (and build
 * log), when expr returns an error. */
#define TH_OK(expr)                                                            \
    do {                                                                       \
        tt_status th_status_ = (expr);                                         \
        if (th_status_) {                                                      \
            th_report_status(#expr, th_status_, __FILE__, __LINE__);           \
            CU_FAIL_FATAL("call returned an error (printed above)");           \
        }                                                                      \
    } while (0)

void th_report_status(const char *what, tt_status status, const char *file, int line);

/* The process-wide backend, created on first use; NULL (after printing why)
 * when no device can be opened. */
tt_backend *th_backend(void);
void th_backend_release(void);

/* The kind of backend the tests run on ($TH_BACKEND; OpenCL when unset),
 * and its name ("opencl", "vulkan"). An unknown name fails every test. */
tt_backend_kind th_backend_kind(void);
const char *th_backend_name(void);
/* The device selector th_backend() uses (for backends the tests make
 * themselves, a trainer's): TT_DEVICE, else NULL on OpenCL (the default
 * device) and "llvmpipe" on Vulkan. */
const char *th_backend_device(void);
/* A backend of the test backend's kind and device, of its own, that counts
 * launches per kernel (tt_backend_destroy it); NULL after a failed check. */
tt_backend *th_profiling_backend(void);
/* The launches of `kernel` (phase "other") in such a backend's profile,
 * counted when tt_finish ran. */
uint64_t th_launches(const tt_backend *be, const char *kernel);

/* Says that `what` is left out on the test backend and why.  OpenCL has
 * every kernel and library, so there nothing may be left out: the test
 * fails. */
void th_left_out(const char *what, const char *why);
/* Whether the test backend has the kernels of `program`; when it does not,
 * says `what` is left out (th_left_out) and returns 0.  For tests that
 * force a kernel variant a backend may lack. */
int th_has_program(const char *program, const char *what);

/* Fails the current test when validation reported a message on `be` (a
 * Vulkan backend with validation on; any other backend passes) since the
 * last check, printing the first; waits for its queue first.  th_run_suite
 * checks th_backend() after every test; tests that make backends of their
 * own (a trainer's) check those before destroying them. */
void th_check_validation(tt_backend *be);

/* Deterministic uniform numbers in [lo, hi) from a 64-bit state. */
double th_uniform(uint64_t *state, double lo, double hi);
void th_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t *state);

/* Device buffers from host floats, and back.  Fail the test on error. */
tt_buffer *th_upload(const float *host, size_t n, const char *name);
tt_buffer *th_zeros(size_t n, const char *name);
void th_download(float *host, tt_buffer *buffer, size_t n);

/* Device copies of host arrays, each `pad` floats into its own buffer
 * behind poison (1e30, never to be read), freed together: what an op
 * sees at a non-zero offset. */
#define TH_POOL_MAX 48
typedef struct th_pool {
    int pad;                           /* floats of poison before each array */
    tt_buffer *buffers[TH_POOL_MAX];
    int count;
} th_pool;
/* Uploads n floats of host (NULL: zeros) behind the poison; the place of
 * the first.  Fails the test when the pool is full. */
tt_mem th_pool_put(th_pool *pool, const float *host, size_t n, const char *name);
void th_pool_free(th_pool *pool);
/* x (n floats) rounded in place to `precision` (fp16 or bf16), and uploaded
 * as it stores it: 16 bits an element, two a 32-bit word, the first `odd`
 * halves into its first word (a 16-bit tensor may start at either half).
 * A half of its words outside the n is TH_POISON_16 (th_outside_16). */
tt_mem th_pool_put_16(th_pool *pool, float *x, size_t n, tt_precision precision, int odd,
                      const char *name);
#define TH_POISON_16 0xffffu /* a NaN in fp16 and in bf16: never to be read or written */
/* How many of the n 16-bit values at m16 (`precision`, at either half of a
 * 32-bit word) differ from the n floats at m32 rounded to it: 0 when m16
 * holds m32's values stored in 16 bits. */
int th_differ_from_16(tt_mem m16, tt_mem m32, size_t n, tt_precision precision);
/* How many halves of the words holding the n 16-bit values at m16, outside
 * them, are no longer TH_POISON_16 (as th_pool_put_16 left them): 0 when
 * whatever wrote m16 kept its neighbours' halves. */
int th_outside_16(tt_mem m16, size_t n);
/* n floats at m, back to the host. */
void th_get(float *host, tt_mem m, size_t n);
/* Whether the n floats at a and at b have the same bits. */
int th_same_bits(tt_mem a, tt_mem b, size_t n);
/* n uniform floats in [lo, hi) (malloc'd; the test fails on OOM). */
float *th_random_floats(size_t n, float lo, float hi, uint64_t *seed);

/* max_i |got_i - want_i| / (|want_i| + floor); NaN anywhere gives INFINITY. */
double th_max_rel_error(const float *got, const double *want, size_t n, double floor);
/* Same for two float arrays. */
double th_max_rel_error_f(const float *got, const float *want, size_t n, double floor);

/* A scalar function of x in float64, for finite differences. */
typedef double (*th_scalar_fn)(const double *x, void *ctx);
/* grad[i] = (f(x + h e_i) - f(x - h e_i)) / 2h; x is restored. */
void th_numeric_grad(th_scalar_fn f, void *ctx, double *x, size_t n, double h, double *grad);

/* Converts between float and double arrays (malloc'd result; test fails on OOM). */
double *th_to_double(const float *x, size_t n);

/* Sets the TT_* variable `name` to `value` (NULL: unsets it) and reloads
 * the library's table of them (core/knobs.h), which reads each only once. */
void th_setenv(const char *name, const char *value);

/* Where a suite runs.  tests/CMakeLists.txt reads it from the suite's
 * th_run_suite call, so that the suite itself says, and no list beside it:
 *   TH_HOST    no device (th_backend() fails the test): no label
 *   TH_OPENCL  OpenCL's by nature (its devices, CLBlast): label opencl
 *   TH_VULKAN  a Vulkan suite, which makes its backends itself (and
 *              compares them with OpenCL's): label vulkan
 *   TH_EVERY   every backend built: test_X on OpenCL (label opencl) and
 *              test_X_vulkan with TH_BACKEND=vulkan (label vulkan), against
 *              the same references */
typedef enum th_runs_on { TH_HOST, TH_OPENCL, TH_VULKAN, TH_EVERY } th_runs_on;

/* Registers one suite of tests and runs it with CUnit's basic runner, on
 * the backend TH_BACKEND names where `on` is TH_EVERY (else TH_BACKEND
 * must be unset or opencl).  Returns the process exit status: 0 only if
 * every test passed. */
int th_run_suite(const char *suite_name, CU_TestInfo *tests, th_runs_on on);

#endif
