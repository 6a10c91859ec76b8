/* Helpers of the Vulkan op suites (test_vulkan_ops*.c): the Vulkan backend
 * on lavapipe with validation on, and one op run on OpenCL and on Vulkan
 * from the same inputs, each array at an odd offset between poison words,
 * with the results compared bit by bit or against references. */
#ifndef TT_TESTS_VK_COMPARE_H
#define TT_TESTS_VK_COMPARE_H

#include <stdlib.h>
#include <string.h>

#include "test_vulkan.h"

/* ---- one op on one backend, its arrays behind and before poison ---------- */

enum { MAX_ARRAYS = 9, PAD = 5 };
static const uint32_t POISON = 0x7fbadbadu; /* a NaN no op writes */

typedef struct op_io {
    int count;
    size_t n[MAX_ARRAYS];        /* 32-bit words of each array */
    const float *in[MAX_ARRAYS]; /* their contents before the op */
    float *out[MAX_ARRAYS];      /* after the op (run_on fills them, malloc'd) */
} op_io;

/* Runs the op on the arrays m[0 .. count) (array k at 3 + 2k words into its buffer). */
typedef void (*op_fn)(tt_backend *be, const tt_mem *m, const void *ctx);

static inline void run_on(tt_backend *be, op_io *io, op_fn fn, const void *ctx)
{
    tt_buffer *buf[MAX_ARRAYS];
    tt_mem m[MAX_ARRAYS];
    for (int k = 0; k < io->count; k++) {
        size_t off = 3 + 2 * (size_t)k, words = off + io->n[k] + PAD;
        uint32_t *host = malloc(words * 4);
        CU_ASSERT_FATAL(host != NULL);
        for (size_t i = 0; i < words; i++) host[i] = POISON;
        memcpy(host + off, io->in[k], io->n[k] * 4);
        TH_OK(tt_buffer_alloc(be, words * 4, TT_MEM_OTHER, "op array", &buf[k]));
        TH_OK(tt_write(be, tt_mem_of(buf[k]), host, words * 4));
        m[k] = tt_mem_f32(tt_mem_of(buf[k]), off);
        free(host);
    }
    fn(be, m, ctx);
    for (int k = 0; k < io->count; k++) {
        size_t off = 3 + 2 * (size_t)k, words = off + io->n[k] + PAD;
        uint32_t *host = malloc(words * 4);
        io->out[k] = malloc(io->n[k] * 4 + 4);
        CU_ASSERT_FATAL(host && io->out[k]);
        TH_OK(tt_read(be, host, tt_mem_of(buf[k]), words * 4));
        int guarded = 1;
        for (size_t i = 0; i < words; i++)
            if (i < off || i >= off + io->n[k]) guarded &= host[i] == POISON;
        CU_ASSERT(guarded); /* nothing written outside the tensor */
        memcpy(io->out[k], host + off, io->n[k] * 4);
        free(host);
        tt_buffer_free(buf[k]);
    }
}

static inline void io_free(op_io *io)
{
    for (int k = 0; k < io->count; k++) free(io->out[k]), io->out[k] = NULL;
}

/* Runs the op on OpenCL (into cl) and on Vulkan (into vk). */
static inline void run_both(op_io *cl, op_io *vk, op_fn fn, const void *ctx)
{
    tt_backend *c = th_backend(), *v = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    *vk = *cl;
    run_on(c, cl, fn, ctx);
    run_on(v, vk, fn, ctx);
}

/* Words of array k that differ between the two runs (bits). */
static inline size_t differing(const op_io *a, const op_io *b, int k)
{
    size_t d = 0;
    for (size_t i = 0; i < a->n[k]; i++) d += memcmp(&a->out[k][i], &b->out[k][i], 4) != 0;
    return d;
}

/* max_i |got - want| / (|want| + floor) over array k's floats against doubles. */
static inline double rel_error(const op_io *io, int k, const double *want, double floor)
{
    return th_max_rel_error(io->out[k], want, io->n[k], floor);
}

static inline double *doubles(const float *x, size_t n) { return th_to_double(x, n); }

/* Fills n floats in [-2, 2) (malloc'd). */
static inline float *random_floats(size_t n, uint64_t *seed)
{
    float *x = malloc(n * 4 + 4);
    CU_ASSERT_FATAL(x != NULL);
    th_fill_uniform(x, n, -2, 2, seed);
    return x;
}

#endif
