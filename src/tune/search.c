/*
 * The search behind `tiletrain tune`: CLBlast GEMM parameters timed on the
 * shapes the model runs, within a wall-clock budget.
 *
 * On PoCL every configuration costs a rebuild of CLBlast's whole GEMM
 * program (seconds to a minute, docs/tune.md; PoCL caches the binaries, so
 * configurations seen before are cheap), so the search is small and greedy:
 *   0. time the parameters in force ("before");
 *   1. Xgemm (indirect GEMM, XGEMM_MIN_INDIRECT_SIZE = 0 so every shape
 *      runs on it): known good seeds first, then mutations of the best and
 *      random samples of CLBlast's tuner space, skipping combinations that
 *      break its constraints; a candidate is dropped as soon as its partial
 *      time exceeds the best total;
 *   2. XgemmDirect (every shape on it), on the smallest shapes that make up
 *      half of the work, smallest first, until it is clearly slower than
 *      the best Xgemm; one rebuild's time of the budget is kept for it;
 *   3. the switch XGEMM_MIN_INDIRECT_SIZE that minimises the step's time
 *      given both kernels' per-shape times.
 * The objective is the time of one training step's GEMMs: sum over shapes
 * of count x seconds per call.  Each timed shape is checked (see
 * bench.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "backend/opencl/cl_internal.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "tune/tune.h"
#include "tune/bench.h"
#include "core/status.h"

#define MAX_CANDIDATES 400
/* Configurations timed per process.  Longer runs crashed inside CLBlast or
 * PoCL 3.1 (SIGSEGV after 12 to 15 rebuilds, not reproducible alone); a
 * rerun continues from the stored winner with new random candidates. */
#define MAX_PER_RUN 10
#define DIRECT_ALWAYS ((size_t)1 << 20) /* (2^20)^3 exceeds any m*n*k */

/* Xgemm order: GEMMK KREG KWG KWI MDIMA MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN */
enum { X_GEMMK, X_KREG, X_KWG, X_KWI, X_MDIMA, X_MDIMC, X_MWG, X_NDIMB, X_NDIMC, X_NWG,
       X_SA, X_SB, X_STRM, X_STRN, X_VWM, X_VWN };
/* XgemmDirect order: KWID MDIMAD MDIMCD NDIMBD NDIMCD PADA PADB VWMD VWND WGD */
enum { D_KWID, D_MDIMAD, D_MDIMCD, D_NDIMBD, D_NDIMCD, D_PADA, D_PADB, D_VWMD, D_VWND, D_WGD };

/* Known good starting points, tried in order of the padding they cause on
 * the shapes (CLBlast pads M, N, K up to MWG, NWG, KWG).  X0: the best of a
 * run of CLBlast's own tuner on PoCL on a CPU; X1: GEMMK=1, which
 * needs no transposes for row-major A and C (the best on the UNet on PoCL);
 * X2: X0 with MWG=16 for the 16-channel layers; X3: CLBlast's Intel CPU
 * default.  (GEMMK=1 with MDIMC=2, MWG=16, VWM=8 gave wrong results on
 * PoCL 3.1: every candidate's results are checked.) */
static const size_t xgemm_seeds[][16] = {
    {0, 1, 32, 2, 8, 8, 64, 16, 8, 128, 0, 1, 0, 0, 8, 4},
    {1, 8, 1, 1, 4, 4, 32, 4, 4, 32, 0, 0, 0, 0, 8, 8},
    {0, 1, 32, 2, 4, 4, 16, 8, 8, 128, 0, 1, 0, 0, 4, 8},
    {0, 1, 32, 2, 8, 8, 32, 8, 8, 64, 0, 0, 0, 0, 4, 4},
};
static const size_t direct_seeds[][10] = {
    {2, 8, 8, 8, 8, 1, 1, 4, 4, 32},
    {8, 16, 8, 16, 8, 1, 1, 4, 4, 64},
};
#define XGEMM_SEEDS ((int)(sizeof xgemm_seeds / sizeof xgemm_seeds[0]))
#define DIRECT_SEEDS ((int)(sizeof direct_seeds / sizeof direct_seeds[0]))

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t pick(uint64_t *rng, const size_t *choices, int n)
{
    return choices[next_random(rng) % (uint64_t)n];
}
#define PICK(rng, ...) \
    pick((rng), (const size_t[]){__VA_ARGS__}, (int)(sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)))

/* ---- the parameter spaces (CLBlast's tuners, widened a little for CPUs) -- */

static int valid(tt_clblast_kernel kernel, const size_t *v, const tt_device_info *dev)
{
    tt_status s = tt_cl_tuning_check_kernel(kernel, v, dev);
    tt_status_free(s);
    return s == NULL;
}

/* Sets parameter i of an Xgemm configuration to a random value of its range. */
static void xgemm_random_param(uint64_t *rng, size_t *v, int i)
{
    int k1 = v[X_GEMMK] == 1;
    switch (i) {
    case X_MWG: case X_NWG:
        v[i] = k1 ? PICK(rng, 8, 16, 32, 64, 128) : PICK(rng, 16, 32, 64, 128); break;
    case X_KWG: v[i] = k1 ? 1 : PICK(rng, 16, 32); break;
    case X_KWI: v[i] = k1 ? 1 : 2; break;
    case X_MDIMC: case X_MDIMA:
        v[i] = k1 ? PICK(rng, 2, 4, 8, 16, 32) : PICK(rng, 4, 8, 16, 32);
        if (k1) v[X_MDIMA] = v[X_MDIMC] = v[i];
        break;
    case X_NDIMC: case X_NDIMB:
        v[i] = k1 ? PICK(rng, 2, 4, 8, 16, 32) : PICK(rng, 4, 8, 16, 32);
        if (k1) v[X_NDIMB] = v[X_NDIMC] = v[i];
        break;
    case X_VWM: case X_VWN: v[i] = PICK(rng, 1, 2, 4, 8); break;
    case X_SA: case X_SB: case X_STRM: case X_STRN: v[i] = k1 ? 0 : PICK(rng, 0, 1); break;
    case X_KREG: v[i] = k1 ? PICK(rng, 1, 2, 4, 8, 16) : 1; break;
    default: break;
    }
}

static void xgemm_random(uint64_t *rng, size_t *v, const tt_device_info *dev)
{
    for (int tries = 0; tries < 100000; tries++) {
        v[X_GEMMK] = next_random(rng) & 1;
        for (int i = 1; i < 16; i++) xgemm_random_param(rng, v, i);
        if (valid(TT_CLBLAST_XGEMM, v, dev)) return;
    }
    memcpy(v, xgemm_seeds[0], sizeof xgemm_seeds[0]);
}

static void direct_random_param(uint64_t *rng, size_t *v, int i)
{
    switch (i) {
    case D_WGD: v[i] = PICK(rng, 8, 16, 32, 64); break;
    case D_KWID: v[i] = PICK(rng, 1, 2, 8, 16); break;
    case D_MDIMAD: case D_MDIMCD: case D_NDIMBD: case D_NDIMCD: v[i] = PICK(rng, 4, 8, 16, 32); break;
    case D_VWMD: case D_VWND: v[i] = PICK(rng, 1, 2, 4, 8); break;
    case D_PADA: case D_PADB: v[i] = PICK(rng, 0, 1); break;
    default: break;
    }
}

static void direct_random(uint64_t *rng, size_t *v, const tt_device_info *dev)
{
    for (int tries = 0; tries < 100000; tries++) {
        for (int i = 0; i < 10; i++) direct_random_param(rng, v, i);
        if (valid(TT_CLBLAST_XGEMM_DIRECT, v, dev)) return;
    }
    memcpy(v, direct_seeds[0], sizeof direct_seeds[0]);
}

/* A valid neighbour of `base`: one or two parameters changed. */
static void mutate(tt_clblast_kernel kernel, uint64_t *rng, const size_t *base, size_t *v,
                   const tt_device_info *dev)
{
    int n = tt_clblast_kernels[kernel].count;
    for (int tries = 0; tries < 2000; tries++) {
        memcpy(v, base, sizeof(size_t) * (size_t)n);
        int changes = 1 + (int)(next_random(rng) % 2);
        for (int c = 0; c < changes; c++) {
            int i = (int)(next_random(rng) % (uint64_t)n);
            if (kernel == TT_CLBLAST_XGEMM) {
                if (i == X_GEMMK) i = X_MWG;
                xgemm_random_param(rng, v, i);
            } else {
                direct_random_param(rng, v, i);
            }
        }
        if (memcmp(v, base, sizeof(size_t) * (size_t)n) != 0 && valid(kernel, v, dev)) return;
    }
    if (kernel == TT_CLBLAST_XGEMM) xgemm_random(rng, v, dev);
    else direct_random(rng, v, dev);
}

void tt_cl_tuning_seed(const tt_device_info *device, tt_cl_tuning *out)
{
    memset(out, 0, sizeof *out);
    tt_cl_tuning_set_device(out, device);
    memcpy(out->values[TT_CLBLAST_XGEMM], xgemm_seeds[0], sizeof xgemm_seeds[0]);
    for (int s = 0; s < XGEMM_SEEDS; s++)
        if (valid(TT_CLBLAST_XGEMM, xgemm_seeds[s], device)) {
            memcpy(out->values[TT_CLBLAST_XGEMM], xgemm_seeds[s], sizeof xgemm_seeds[s]);
            break;
        }
    memcpy(out->values[TT_CLBLAST_XGEMM_DIRECT], direct_seeds[0], sizeof direct_seeds[0]);
    out->values[TT_CLBLAST_GEMM_ROUTINE][0] = 0;
}

/* ---- the search ---------------------------------------------------------- */

typedef struct search {
    tt_cl_tune_bench bench;
    const tt_cl_tune_options *opt;
    tt_backend *be;
    double start, budget;
    double spent_per_candidate; /* the longest one so far: the estimate for the next */
    double before_total;        /* the parameters in force; INFINITY if not measured */
    int evaluated;
    uint64_t rng;
    uint64_t tried[MAX_CANDIDATES];
    int tried_count;
    int *order;          /* shape indices, heaviest first */
    int *ascending;      /* shape indices by m*n*k */
    double *times;       /* scratch: per shape */
    double *rival_times; /* scratch: per shape, the configuration to beat */
    tt_cl_tune_result *out;
} search;

static double elapsed(const search *S) { return tt_seconds() - S->start; }

static uint64_t fingerprint(tt_clblast_kernel kernel, const size_t *v)
{
    uint64_t h = 0x1234567ULL + (uint64_t)kernel;
    for (int i = 0; i < tt_clblast_kernels[kernel].count; i++) h = (h ^ v[i]) * 0x100000001b3ULL;
    return h;
}

/* 1 if not tried before (and records it). */
static int fresh(search *S, tt_clblast_kernel kernel, const size_t *v)
{
    uint64_t h = fingerprint(kernel, v);
    for (int i = 0; i < S->tried_count; i++)
        if (S->tried[i] == h) return 0;
    if (S->tried_count < MAX_CANDIDATES) S->tried[S->tried_count++] = h;
    return 1;
}

/* May another candidate start within the budget?  The first always may. */
static int may_start(const search *S, double until)
{
    if (S->evaluated == 0) return 1;
    return elapsed(S) + S->spent_per_candidate <= until && S->tried_count < MAX_CANDIDATES &&
           S->evaluated < MAX_PER_RUN;
}

static void log_params(FILE *log, tt_clblast_kernel kernel, const size_t *v)
{
    const tt_clblast_kernel_desc *d = &tt_clblast_kernels[kernel];
    for (int i = 0; i < d->count; i++) fprintf(log, " %s=%zu", d->params[i], v[i]);
}

/* Times `tuning` on the shapes in `order` (n of them) into S->times; with a
 * `rival` (a configuration timed before, still built), times that one too
 * right after each shape, into S->rival_times, so that both see the same
 * load on a shared machine.  *total and *rival_total are the weighted sums;
 * *total is INFINITY when the candidate was rejected.  Stops early once the
 * candidate is clearly behind the rival (incomplete), or, with
 * `stop_when_slower`, after two shapes 1.5x slower than the rival in a row
 * or one 4x slower (complete; the remaining shapes get INFINITY). */
static void evaluate(search *S, const tt_cl_tuning *tuning, const tt_cl_tuning *rival,
                     const int *order, int n, int stop_when_slower, double *total,
                     double *rival_total, int *complete)
{
    double t0 = tt_seconds();
    *total = *rival_total = 0;
    *complete = 0;
    int slower = 0;
    tt_status status = tt_cl_tuning_apply(S->be, tuning);
    if (!status) status = tt_cl_tune_bench_check_odd(&S->bench);
    for (int i = 0; !status && i < n; i++) {
        int s = order[i];
        double weight = S->bench.shapes[s].count;
        status = tt_cl_tune_bench_time(&S->bench, s, &S->times[s]);
        if (status) break;
        *total += weight * S->times[s];
        if (rival) {
            status = tt_cl_tuning_apply(S->be, rival);
            if (!status) status = tt_cl_tune_bench_time(&S->bench, s, &S->rival_times[s]);
            if (!status) status = tt_cl_tuning_apply(S->be, tuning);
            if (status) break;
            *rival_total += weight * S->rival_times[s];
            if (!stop_when_slower && i >= 2 && *total > 1.15 * *rival_total) break;
            slower = S->times[s] > 1.5 * S->rival_times[s] ? slower + 1 : 0;
            if (stop_when_slower && (slower >= 2 || S->times[s] > 4 * S->rival_times[s])) {
                for (int j = i + 1; j < n; j++) S->times[order[j]] = INFINITY;
                *complete = 1;
                break;
            }
        }
        if (i == n - 1) *complete = 1;
    }
    if (status) {
        if (S->opt->log) fprintf(S->opt->log, "  rejected: %s\n", tt_status_message(status));
        tt_status_free(status);
        S->out->rejected++;
        *total = INFINITY;
        *complete = 0;
    }
    /* CLBlast keeps every program it built; drop them now and then (the
     * rival is then rebuilt from PoCL's binary cache) */
    if (++S->evaluated % 6 == 0) CLBlastClearCache();
    S->out->candidates++;
    double spent = tt_seconds() - t0;
    if (spent > S->spent_per_candidate) S->spent_per_candidate = spent;
    if (S->opt->log) fflush(S->opt->log);
}

static double step_gflop(const tt_gemm_shape *shapes, int count)
{
    double g = 0;
    for (int s = 0; s < count; s++) g += shapes[s].count * tt_gemm_shape_gflop(&shapes[s]);
    return g;
}

static unsigned long long mnk(const tt_gemm_shape *g)
{
    return (unsigned long long)g->m * g->n * g->k;
}

/* Smallest T with T^3 > v. */
static size_t cube_root_above(unsigned long long v)
{
    unsigned long long t = (unsigned long long)cbrt((double)v);
    while (t > 0 && t * t * t > v) t--;
    while (t * t * t <= v) t++;
    return (size_t)t;
}

/* Phase 3: the XGEMM_MIN_INDIRECT_SIZE that minimises the step's time, given
 * per-shape times of the indirect (ind) and direct (dir) kernels.  Shapes
 * with m*n*k < T^3 run direct.  Returns T; fills out->after_s / direct. */
static size_t choose_switch(search *S, const double *ind, const double *dir)
{
    const tt_cl_tune_bench *b = &S->bench;
    int n = b->count;
    double best = INFINITY;
    size_t best_t = 0;
    for (int cut = 0; cut <= n; cut++) { /* ascending[0..cut) direct */
        if (cut > 0 && cut < n && mnk(&b->shapes[S->ascending[cut]]) ==
                                      mnk(&b->shapes[S->ascending[cut - 1]]))
            continue;
        size_t t = cut == 0 ? 0 : cube_root_above(mnk(&b->shapes[S->ascending[cut - 1]]));
        if (cut < n && cut > 0 &&
            (unsigned long long)t * t * t > mnk(&b->shapes[S->ascending[cut]]))
            continue; /* no integer cube between the two sizes */
        double total = 0;
        for (int i = 0; i < n; i++) {
            int s = S->ascending[i];
            total += b->shapes[s].count * (i < cut ? dir[s] : ind[s]);
        }
        if (total < best) best = total, best_t = t;
    }
    for (int s = 0; s < n; s++) {
        S->out->direct[s] = mnk(&b->shapes[s]) < (unsigned long long)best_t * best_t * best_t;
        S->out->after_s[s] = S->out->direct[s] ? dir[s] : ind[s];
    }
    return best_t;
}

static const tt_gemm_shape *sort_shapes; /* for qsort; the search is not re-entrant */

static int by_weight_desc(const void *a, const void *b)
{
    const tt_gemm_shape *x = &sort_shapes[*(const int *)a], *y = &sort_shapes[*(const int *)b];
    double wx = x->count * tt_gemm_shape_gflop(x), wy = y->count * tt_gemm_shape_gflop(y);
    return (wx < wy) - (wx > wy);
}

static int by_size_asc(const void *a, const void *b)
{
    unsigned long long x = mnk(&sort_shapes[*(const int *)a]), y = mnk(&sort_shapes[*(const int *)b]);
    return (x > y) - (x < y);
}

/* Saves a new best (every shape indirect) to options->save_path when it
 * beats the parameters in force, so that a crash loses little. */
static void checkpoint(search *S, const tt_cl_tuning *t, double total)
{
    if (!S->opt->save_path || !(total < S->before_total)) return;
    tt_cl_tuning c = *t;
    c.values[TT_CLBLAST_GEMM_ROUTINE][0] = 0;
    double gflop = step_gflop(S->bench.shapes, S->bench.count);
    c.gflops_before = gflop / S->before_total;
    c.gflops_after = gflop / total;
    tt_status status = tt_cl_tuning_save(S->opt->save_path, &c);
    if (status && S->opt->log)
        fprintf(S->opt->log, "  cannot save the best so far: %s\n", tt_status_message(status));
    tt_status_free(status);
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

/* Work the indirect kernel does, padded, over the work the shapes need. */
static double padding_ratio(const size_t *x, const tt_gemm_shape *shapes, int count)
{
    double padded = 0, needed = 0;
    size_t kstep = x[X_GEMMK] ? x[X_KREG] : x[X_KWG];
    for (int s = 0; s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        padded += g->count * (double)round_up(g->m, x[X_MWG]) * (double)round_up(g->n, x[X_NWG]) *
                  (double)round_up(g->k, kstep);
        needed += g->count * (double)g->m * (double)g->n * (double)g->k;
    }
    return padded / needed;
}

/* Phase 1: Xgemm with every shape indirect, until one candidate's time
 * before the budget ends (kept for XgemmDirect); fills the Xgemm values of
 * `current` and ind (per-shape times of the winner).  Returns the best total. */
static double search_xgemm(search *S, tt_cl_tuning *current, double *ind)
{
    const tt_device_info *dev = &S->be->device;
    int n = S->bench.count;
    double best = INFINITY;
    size_t *x = current->values[TT_CLBLAST_XGEMM];
    size_t best_x[16];
    int seed_index = 0, have_best = 0, seed_order[XGEMM_SEEDS];
    double waste[XGEMM_SEEDS];
    for (int i = 0; i < XGEMM_SEEDS; i++) { /* insertion sort by padding, stable */
        double w = padding_ratio(xgemm_seeds[i], S->bench.shapes, n);
        int j = i;
        for (; j > 0 && waste[j - 1] > w * 1.02; j--)
            waste[j] = waste[j - 1], seed_order[j] = seed_order[j - 1];
        waste[j] = w, seed_order[j] = i;
    }
    current->values[TT_CLBLAST_GEMM_ROUTINE][0] = 0;
    int limit = S->opt->max_xgemm > 0 ? S->opt->max_xgemm : MAX_CANDIDATES;
    for (int round = 0; round < 2000 && S->out->candidates < limit &&
                        (may_start(S, S->budget - S->spent_per_candidate) || !have_best);
         round++) {
        if (round > 50 && !have_best) break; /* nothing works on this device */
        if (round == 0 && S->opt->previous) {
            memcpy(x, S->opt->previous->values[TT_CLBLAST_XGEMM], sizeof best_x);
        } else if (seed_index < XGEMM_SEEDS) {
            memcpy(x, xgemm_seeds[seed_order[seed_index++]], sizeof best_x);
            if (!valid(TT_CLBLAST_XGEMM, x, dev)) continue;
        } else if (have_best && next_random(&S->rng) % 3 != 0) {
            mutate(TT_CLBLAST_XGEMM, &S->rng, best_x, x, dev);
        } else {
            xgemm_random(&S->rng, x, dev);
        }
        if (!fresh(S, TT_CLBLAST_XGEMM, x)) continue;
        if (S->opt->log) {
            fprintf(S->opt->log, "[%6.1f s] Xgemm (padded work x%.2f):", elapsed(S),
                    padding_ratio(x, S->bench.shapes, n));
            log_params(S->opt->log, TT_CLBLAST_XGEMM, x);
            fprintf(S->opt->log, "\n");
        }
        double total, rival_total;
        int complete;
        tt_cl_tuning rival = *current;
        memcpy(rival.values[TT_CLBLAST_XGEMM], best_x, sizeof best_x);
        evaluate(S, current, have_best ? &rival : NULL, S->order, n, 0, &total, &rival_total,
                 &complete);
        double gflop = step_gflop(S->bench.shapes, n);
        if (S->opt->log && isfinite(total) && complete && !have_best)
            fprintf(S->opt->log, "  = %.1f GFLOP/s\n", gflop / total);
        else if (S->opt->log && isfinite(total) && complete)
            fprintf(S->opt->log, "  = %.1f GFLOP/s (the best so far, timed alongside: %.1f)\n",
                    gflop / total, gflop / rival_total);
        else if (S->opt->log && isfinite(total))
            fprintf(S->opt->log, "  stopped: behind the best so far\n");
        if (complete && (!have_best || total < rival_total)) {
            best = total;
            have_best = 1;
            memcpy(best_x, x, sizeof best_x);
            memcpy(ind, S->times, sizeof(double) * (size_t)n);
            checkpoint(S, current, total);
        } else if (complete) {
            best = rival_total;
            memcpy(ind, S->rival_times, sizeof(double) * (size_t)n); /* fresher */
        }
    }
    if (have_best) memcpy(x, best_x, sizeof best_x);
    return best;
}

/* Phase 2: XgemmDirect with every shape direct, smallest first, on the
 * small shapes only, each timed alongside phase 1's winner; dir gets the
 * winner's times (INFINITY where not measured) and ind the indirect times
 * of the same run.  No candidate leaves dir all INFINITY. */
static void search_direct(search *S, tt_cl_tuning *current, double until, double *ind,
                          double *dir)
{
    const tt_device_info *dev = &S->be->device;
    int n = S->bench.count;
    double best = INFINITY;
    size_t *d = current->values[TT_CLBLAST_XGEMM_DIRECT];
    size_t best_d[10];
    memcpy(best_d, d, sizeof best_d);
    int seed_index = 0, have_best = 0;
    for (int s = 0; s < n; s++) dir[s] = INFINITY;
    double *ind_now = tt_malloc(sizeof(double) * (size_t)n);
    double *ind_best = tt_malloc(sizeof(double) * (size_t)n);
    if (!ind_now || !ind_best) goto cleanup;
    /* the direct kernel is for small GEMMs: time it on the smallest shapes
     * that make up half of the step's work, the rest stays indirect */
    int small = 0;
    double share = 0, all = step_gflop(S->bench.shapes, n);
    for (; small < n && share < 0.5 * all; small++) {
        const tt_gemm_shape *g = &S->bench.shapes[S->ascending[small]];
        share += g->count * tt_gemm_shape_gflop(g);
    }
    tt_cl_tuning rival = *current; /* phase 1's winner, every shape indirect */
    rival.values[TT_CLBLAST_GEMM_ROUTINE][0] = 0;
    current->values[TT_CLBLAST_GEMM_ROUTINE][0] = DIRECT_ALWAYS;
    int before = S->out->candidates;
    int limit = S->opt->max_direct > 0 ? S->opt->max_direct : S->opt->max_direct < 0 ? 0 : 200;
    for (int round = 0; round < 200 && S->out->candidates - before < limit && S->evaluated > 0 &&
                        may_start(S, until);
         round++) {
        if (round == 0 && S->opt->previous) {
            memcpy(d, S->opt->previous->values[TT_CLBLAST_XGEMM_DIRECT], sizeof best_d);
        } else if (seed_index < DIRECT_SEEDS) {
            memcpy(d, direct_seeds[seed_index++], sizeof best_d);
            if (!valid(TT_CLBLAST_XGEMM_DIRECT, d, dev)) continue;
        } else if (have_best && next_random(&S->rng) % 3 != 0) {
            mutate(TT_CLBLAST_XGEMM_DIRECT, &S->rng, best_d, d, dev);
        } else {
            direct_random(&S->rng, d, dev);
        }
        if (!fresh(S, TT_CLBLAST_XGEMM_DIRECT, d)) continue;
        if (S->opt->log) {
            fprintf(S->opt->log, "[%6.1f s] XgemmDirect:", elapsed(S));
            log_params(S->opt->log, TT_CLBLAST_XGEMM_DIRECT, d);
            fprintf(S->opt->log, "\n");
        }
        double total, rival_total;
        int complete;
        evaluate(S, current, &rival, S->ascending, small, 1, &total, &rival_total, &complete);
        if (!complete) continue;
        /* the indirect times of this run (same load) where it has them */
        memcpy(ind_now, ind, sizeof(double) * (size_t)n);
        for (int i = 0; i < small && isfinite(S->times[S->ascending[i]]); i++)
            ind_now[S->ascending[i]] = S->rival_times[S->ascending[i]];
        for (int i = small; i < n; i++) S->times[S->ascending[i]] = INFINITY;
        /* the step time this kernel allows with the best switch, relative
         * to every shape indirect */
        choose_switch(S, ind_now, S->times);
        double step = 0, indirect = 0;
        for (int sh = 0; sh < n; sh++) {
            step += S->bench.shapes[sh].count * S->out->after_s[sh];
            indirect += S->bench.shapes[sh].count * ind_now[sh];
        }
        if (S->opt->log)
            fprintf(S->opt->log, "  with the best switch: %.1f GFLOP/s (%.1f without it)\n",
                    step_gflop(S->bench.shapes, n) / step, step_gflop(S->bench.shapes, n) / indirect);
        if (step / indirect < best) {
            best = step / indirect;
            have_best = 1;
            memcpy(best_d, d, sizeof best_d);
            memcpy(dir, S->times, sizeof(double) * (size_t)n);
            memcpy(ind_best, ind_now, sizeof(double) * (size_t)n);
        }
    }
    memcpy(d, best_d, sizeof best_d);
    if (have_best) memcpy(ind, ind_best, sizeof(double) * (size_t)n);
cleanup:
    free(ind_now);
    free(ind_best);
}

tt_status tt_cl_tune(tt_backend *be, const tt_gemm_shape *shapes, int count,
                     const tt_cl_tune_options *opt, tt_cl_tune_result *out)
{
    memset(out, 0, sizeof *out);
    if (count < 1) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tune: no GEMM shapes to time");
    search S;
    memset(&S, 0, sizeof S);
    S.opt = opt, S.be = be, S.out = out, S.start = tt_seconds();
    S.budget = opt->budget_s > 0 ? opt->budget_s : 0;
    S.rng = opt->seed ? opt->seed : 0x7e57;
    S.before_total = INFINITY;
    tt_status status = NULL;
    double *ind = NULL, *dir = NULL;
    out->before_s = tt_calloc((size_t)count, sizeof(double));
    out->after_s = tt_calloc((size_t)count, sizeof(double));
    out->direct = tt_calloc((size_t)count, sizeof(int));
    S.order = tt_malloc(sizeof(int) * (size_t)count);
    S.ascending = tt_malloc(sizeof(int) * (size_t)count);
    S.times = tt_calloc((size_t)count, sizeof(double));
    S.rival_times = tt_calloc((size_t)count, sizeof(double));
    ind = tt_calloc((size_t)count, sizeof(double));
    dir = tt_calloc((size_t)count, sizeof(double));
    if (!out->before_s || !out->after_s || !out->direct || !S.order || !S.ascending || !S.times ||
        !S.rival_times || !ind || !dir) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
        goto cleanup;
    }
    for (int s = 0; s < count; s++) S.order[s] = S.ascending[s] = s;
    sort_shapes = shapes;
    qsort(S.order, (size_t)count, sizeof(int), by_weight_desc);
    qsort(S.ascending, (size_t)count, sizeof(int), by_size_asc);
    TT_CHECK(tt_cl_tune_bench_init(&S.bench, be, shapes, count, S.rng));

    double gflop = step_gflop(shapes, count);
    if (opt->measure_baseline) {
        double total = 0;
        for (int i = 0; i < count && !status; i++) {
            status = tt_cl_tune_bench_time(&S.bench, S.order[i], &out->before_s[S.order[i]]);
            total += shapes[S.order[i]].count * out->before_s[S.order[i]];
        }
        if (status) goto cleanup; /* CLBlast's own parameters fail: nothing to compare */
        S.before_total = total;
        CLBlastClearCache();
        S.spent_per_candidate = elapsed(&S); /* a rebuild: what the next ones cost at least */
        if (opt->log)
            fprintf(opt->log, "[%6.1f s] parameters in force: %.1f GFLOP/s\n", elapsed(&S),
                    gflop / total);
        if (opt->log) fflush(opt->log);
    }

    tt_cl_tuning current;
    if (opt->previous) current = *opt->previous;
    else tt_cl_tuning_seed(&be->device, &current);
    tt_cl_tuning_set_device(&current, &be->device);
    double best = search_xgemm(&S, &current, ind);
    if (!isfinite(best)) {
        status = tt_error_new(TT_ERR_UNSUPPORTED, "tune: no CLBlast GEMM configuration ran "
                              "correctly on '%s' (%d tried); CLBlast's defaults stay in force",
                              be->device.name, out->candidates);
        goto cleanup;
    }
    search_direct(&S, &current, S.budget, ind, dir);
    current.values[TT_CLBLAST_GEMM_ROUTINE][0] = choose_switch(&S, ind, dir);

    double after = 0, before = 0;
    for (int s = 0; s < count; s++) {
        after += shapes[s].count * out->after_s[s];
        before += shapes[s].count * out->before_s[s];
    }
    current.gflops_after = gflop / after;
    current.gflops_before = opt->measure_baseline ? gflop / before : 0;
    out->best = current;
    TT_CHECK(tt_cl_tuning_apply(be, &current));
    if (opt->log)
        fprintf(opt->log, "[%6.1f s] best: %.1f GFLOP/s, XGEMM_MIN_INDIRECT_SIZE=%zu (%d tried, "
                "%d rejected)\n", elapsed(&S), current.gflops_after,
                current.values[TT_CLBLAST_GEMM_ROUTINE][0], out->candidates, out->rejected);
cleanup:
    out->elapsed_s = elapsed(&S);
    tt_cl_tune_bench_release(&S.bench);
    free(S.order), free(S.ascending), free(S.times), free(S.rival_times), free(ind), free(dir);
    if (status) tt_cl_tune_result_free(out);
    return status;
}

void tt_cl_tune_result_free(tt_cl_tune_result *result)
{
    if (!result) return;
    free(result->before_s);
    free(result->after_s);
    free(result->direct);
    result->before_s = result->after_s = NULL;
    result->direct = NULL;
}
