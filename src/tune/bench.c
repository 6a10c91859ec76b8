/*
 * Timing one GEMM shape for the tuner, and checking its result: A and B
 * come from one buffer of random numbers; C is checked with a Freivalds
 * test on sampled rows, (C x)_i against (op(A) (op(B) x))_i in double, with
 * op(B) x computed once per shape.  A configuration that computes wrong
 * numbers is rejected by the search (some do, on PoCL 3.1).
 */
#include "tune/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"

#define CHECK_ROWS 16
#define CHECK_TOLERANCE 1e-3

/* Odd sizes every configuration must also get right (CLBlast pads them;
 * on PoCL 3.1 some configurations leave C untouched for some sizes). */
static const tt_gemm_shape odd_shapes[] = {
    {.trans_a = 0, .trans_b = 0, .m = 37, .n = 45, .k = 29},
    {.trans_a = 0, .trans_b = 1, .m = 19, .n = 70, .k = 131},
    {.trans_a = 1, .trans_b = 0, .m = 70, .n = 37, .k = 9},
    {.trans_a = 0, .trans_b = 0, .m = 16, .n = 1000, .k = 27},
};
#define ODD_SHAPES ((int)(sizeof odd_shapes / sizeof odd_shapes[0]))

static uint64_t random_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void tt_cl_tune_bench_release(tt_cl_tune_bench *b)
{
    tt_buffer_free(b->in);
    tt_buffer_free(b->out);
    free(b->host_in);
    for (int s = 0; s < b->count; s++) {
        if (b->x) free(b->x[s]);
        if (b->z) free(b->z[s]);
        if (b->zabs) free(b->zabs[s]);
    }
    free(b->x), free(b->z), free(b->zabs), free(b->row);
}

tt_status tt_cl_tune_bench_init(tt_cl_tune_bench *b, tt_backend *be,
                                const tt_gemm_shape *shapes, int count, uint64_t seed)
{
    memset(b, 0, sizeof *b);
    b->be = be, b->shapes = shapes, b->count = count;
    size_t in_floats = 0, out_floats = 0, row = 0;
    for (int s = 0; s < ODD_SHAPES; s++) {
        const tt_gemm_shape *g = &odd_shapes[s];
        in_floats = g->m * g->k > in_floats ? g->m * g->k : in_floats;
        in_floats = g->k * g->n > in_floats ? g->k * g->n : in_floats;
        out_floats = g->m * g->n > out_floats ? g->m * g->n : out_floats;
    }
    for (int s = 0; s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        size_t a = g->m * g->k, bb = g->k * g->n;
        in_floats = a > in_floats ? a : in_floats;
        in_floats = bb > in_floats ? bb : in_floats;
        out_floats = g->m * g->n > out_floats ? g->m * g->n : out_floats;
        row = g->n > row ? g->n : row;
    }
    b->host_in = tt_malloc(in_floats * sizeof(float));
    b->row = tt_malloc(row * sizeof(float));
    b->x = tt_calloc((size_t)count, sizeof *b->x);
    b->z = tt_calloc((size_t)count, sizeof *b->z);
    b->zabs = tt_calloc((size_t)count, sizeof *b->zabs);
    if (!b->host_in || !b->row || !b->x || !b->z || !b->zabs) goto oom;
    uint64_t rng = seed ^ 0x5eed;
    for (size_t i = 0; i < in_floats; i++)
        b->host_in[i] = (float)((double)(random_u64(&rng) >> 11) * 0x1.0p-52 - 1.0);
    TT_TRY(tt_buffer_alloc(be, in_floats * sizeof(float), TT_MEM_WORKSPACE, "tune.in", &b->in));
    TT_TRY(tt_buffer_alloc(be, out_floats * sizeof(float), TT_MEM_WORKSPACE, "tune.out", &b->out));
    TT_TRY(tt_write(be, tt_mem_of(b->in), b->host_in, in_floats * sizeof(float)));
    for (int s = 0; s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        double *x = b->x[s] = tt_malloc(g->n * sizeof(double));
        double *z = b->z[s] = tt_calloc(g->k, sizeof(double));
        double *za = b->zabs[s] = tt_calloc(g->k, sizeof(double));
        if (!x || !z || !za) goto oom;
        for (size_t j = 0; j < g->n; j++) x[j] = (double)(random_u64(&rng) >> 11) * 0x1.0p-52 - 1.0;
        const float *B = b->host_in;
        if (g->trans_b) { /* B stored (n, k) */
            for (size_t j = 0; j < g->n; j++)
                for (size_t kk = 0; kk < g->k; kk++) {
                    double v = B[j * g->k + kk];
                    z[kk] += v * x[j];
                    za[kk] += fabs(v * x[j]);
                }
        } else {          /* B stored (k, n) */
            for (size_t kk = 0; kk < g->k; kk++) {
                double acc = 0, acca = 0;
                for (size_t j = 0; j < g->n; j++) {
                    double v = B[kk * g->n + j];
                    acc += v * x[j];
                    acca += fabs(v * x[j]);
                }
                z[kk] = acc, za[kk] = acca;
            }
        }
    }
    return NULL;
oom:
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory for the benchmark data");
}

static tt_status run_gemm(tt_cl_tune_bench *b, const tt_gemm_shape *g)
{
    tt_gemm gemm = {.trans_a = g->trans_a, .trans_b = g->trans_b, .m = g->m, .n = g->n,
                    .k = g->k, .alpha = 1.0f, .beta = 0.0f,
                    .a = tt_mem_of(b->in), .lda = g->trans_a ? g->m : g->k,
                    .b = tt_mem_of(b->in), .ldb = g->trans_b ? g->k : g->n,
                    .c = tt_mem_of(b->out), .ldc = g->n};
    return tt_gemm_run(b->be, &gemm);
}

/* Freivalds on sampled rows: (C x)_i against (op(A) (op(B) x))_i. */
static tt_status check_result(tt_cl_tune_bench *b, int s)
{
    const tt_gemm_shape *g = &b->shapes[s];
    const float *A = b->host_in;
    size_t rows = g->m < CHECK_ROWS ? g->m : CHECK_ROWS;
    for (size_t r = 0; r < rows; r++) {
        size_t i = rows == g->m ? r : (r == rows - 1 ? g->m - 1 : r * (g->m / rows) + r % 3);
        TT_TRY(tt_read(b->be, b->row, tt_mem_f32(tt_mem_of(b->out), i * g->n), g->n * sizeof(float)));
        double y = 0, w = 0, scale = 0;
        for (size_t j = 0; j < g->n; j++) y += (double)b->row[j] * b->x[s][j];
        for (size_t kk = 0; kk < g->k; kk++) {
            double a = g->trans_a ? A[kk * g->m + i] : A[i * g->k + kk];
            w += a * b->z[s][kk];
            scale += fabs(a) * b->zabs[s][kk];
        }
        if (!(fabs(y - w) <= CHECK_TOLERANCE * scale + 1e-30))
            return tt_error_new(TT_ERR_INTERNAL, "wrong GEMM results (%c%c m=%zu n=%zu k=%zu, row "
                                "%zu: %g, expected %g)", g->trans_a ? 'T' : 'N',
                                g->trans_b ? 'T' : 'N', g->m, g->n, g->k, i, y, w);
    }
    return NULL;
}

tt_status tt_cl_tune_bench_time(tt_cl_tune_bench *b, int s, double *secs)
{
    const tt_gemm_shape *g = &b->shapes[s];
    TT_TRY(run_gemm(b, g));
    TT_TRY(tt_finish(b->be));
    TT_TRY(check_result(b, s));
    double best = INFINITY, spent = 0;
    for (int rep = 0; rep < 10; rep++) {
        double t0 = tt_seconds();
        TT_TRY(run_gemm(b, g));
        TT_TRY(tt_finish(b->be));
        double t = tt_seconds() - t0;
        best = t < best ? t : best;
        spent += t;
        if (spent > 0.25 || (rep >= 1 && spent > 0.1) || (rep >= 2 && spent > 0.03)) break;
    }
    *secs = best;
    return NULL;
}

tt_status tt_cl_tune_bench_check_odd(tt_cl_tune_bench *b)
{
    tt_status status = NULL;
    float *c = NULL;
    for (int s = 0; s < ODD_SHAPES && !status; s++) {
        const tt_gemm_shape *g = &odd_shapes[s];
        const float *A = b->host_in, *B = b->host_in;
        float *grown = tt_realloc(c, g->m * g->n * sizeof(float));
        if (!grown) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
            break;
        }
        c = grown;
        /* NaNs in C first: a configuration that leaves C untouched fails */
        for (size_t i = 0; i < g->m * g->n; i++) c[i] = NAN;
        TT_CHECK(tt_write(b->be, tt_mem_of(b->out), c, g->m * g->n * sizeof(float)));
        TT_CHECK(run_gemm(b, g));
        TT_CHECK(tt_read(b->be, c, tt_mem_of(b->out), g->m * g->n * sizeof(float)));
        for (size_t i = 0; i < g->m && !status; i++)
            for (size_t j = 0; j < g->n; j++) {
                double want = 0, scale = 0;
                for (size_t p = 0; p < g->k; p++) {
                    double v = (double)(g->trans_a ? A[p * g->m + i] : A[i * g->k + p]) *
                               (double)(g->trans_b ? B[j * g->k + p] : B[p * g->n + j]);
                    want += v;
                    scale += fabs(v);
                }
                if (!(fabs(c[i * g->n + j] - want) <= CHECK_TOLERANCE * scale + 1e-30)) {
                    status = tt_error_new(TT_ERR_INTERNAL, "wrong GEMM results (%c%c m=%zu n=%zu "
                                          "k=%zu, C[%zu][%zu] = %g, expected %g)",
                                          g->trans_a ? 'T' : 'N', g->trans_b ? 'T' : 'N', g->m,
                                          g->n, g->k, i, j, c[i * g->n + j], want);
                    break;
                }
            }
    }
cleanup:
    free(c);
    return status;
}
