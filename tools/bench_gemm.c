/*
 * bench_gemm: SGEMM GFLOP/s of the Vulkan backend's shader (lavapipe on a
 * machine without a GPU), CLBlast on the OpenCL device (PoCL there) and
 * OpenBLAS's cblas_sgemm on the host, on a square GEMM and on the im2col
 * GEMMs of one training step of the built-in UNet (tt_gemm_shapes_unet:
 * forward M=Cout N=H*W K=Cin*9, the weight and input gradients, the
 * up-convolutions and the head).  A development tool: built with the
 * project, never installed.
 *
 * Each round times every shape once on every engine in turn (alternating,
 * so that a busy machine slows them alike), after one untimed call each;
 * the best round counts.  Vulkan and OpenCL are timed by host wall time
 * around the call and tt_finish.  OpenBLAS is loaded at run time
 * (libopenblas.so.0) and skipped when missing; its threads are the online
 * cores unless OPENBLAS_NUM_THREADS says otherwise, as PoCL and lavapipe
 * use every core.  Every engine's C is compared with the first engine's
 * in the last round, so that a wrong fast kernel cannot pass unseen.
 *
 *   build/bench_gemm [--rounds 5] [--square 1024] [--tile 256x256]
 *                    [--base-channels 16] [--depth 3] [--filter TEXT] [--cpu-time]
 *                    [--engines vulkan,opencl,openblas]
 *                    [--vulkan-device SPEC] [--opencl-device SPEC]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/status.h"
#include "tune/host_blas.h"
#include "tune/tune.h"

/* Results further apart than this (relative to the largest |C|) are wrong:
 * float sums of up to 65536 terms in any order stay far below it. */
#define TOLERANCE 1e-3

enum { ENGINE_VULKAN, ENGINE_OPENCL, ENGINE_OPENBLAS, ENGINE_COUNT };
static const char *const engine_names[ENGINE_COUNT] = {"vulkan", "opencl", "openblas"};
static const char *const engine_titles[ENGINE_COUNT] = {"Vulkan", "CLBlast", "OpenBLAS"};

typedef struct engine {
    int on;
    tt_backend *backend;       /* vulkan, opencl */
    tt_buffer *a, *b, *c;      /* each as large as the largest shape needs */
    tt_cblas_sgemm_fn sgemm;   /* openblas */
    float *host_c;             /* openblas: its C */
} engine;

typedef struct options {
    int rounds, square, tile_h, tile_w, base, depth;
    const char *filter, *vulkan_device, *opencl_device;
    int engines[ENGINE_COUNT];
} options;

/* Wall time, or with --cpu-time the CPU time of every thread of the
 * process (lavapipe's, PoCL's and OpenBLAS's threads are ours): on a
 * machine others share, work per CPU-second varies less than per second. */
static int cpu_time;

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_gemm [--rounds N] [--square N] [--tile HxW] [--base-channels C]\n"
            "                  [--depth D] [--filter TEXT] [--engines LIST] [--cpu-time]\n"
            "                  [--vulkan-device SPEC] [--opencl-device SPEC]\n\n"
            "SGEMM GFLOP/s of the Vulkan shader, CLBlast (OpenCL) and OpenBLAS (host) on an\n"
            "N^3 GEMM (--square, default 1024; 0: none) and on the UNet's im2col GEMMs of\n"
            "one training step (default base 16, depth 3, tile 256x256), best of --rounds\n"
            "(default 5) alternating runs.  --filter keeps shapes whose label contains\n"
            "TEXT; --engines picks among vulkan,opencl,openblas (default all).  --cpu-time\n"
            "divides by the CPU time of all the process's threads instead of wall time\n"
            "(GFLOP per CPU-second; steadier on a shared machine, but an engine whose\n"
            "threads spin while idle, as OpenBLAS's do for a while, charges the next one).\n");
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.rounds = 5, .square = 1024, .tile_h = 256, .tile_w = 256, .base = 16,
                   .depth = 3, .engines = {1, 1, 1}};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(arg, "--cpu-time")) {
            cpu_time = 1;
            continue;
        }
        if (!value) {
            fprintf(stderr, "bench_gemm: %s needs a value (or unknown option)\n", arg);
            return 0;
        }
        i++;
        if (!strcmp(arg, "--rounds")) o->rounds = atoi(value);
        else if (!strcmp(arg, "--square")) o->square = atoi(value);
        else if (!strcmp(arg, "--base-channels")) o->base = atoi(value);
        else if (!strcmp(arg, "--depth")) o->depth = atoi(value);
        else if (!strcmp(arg, "--filter")) o->filter = value;
        else if (!strcmp(arg, "--vulkan-device")) o->vulkan_device = value;
        else if (!strcmp(arg, "--opencl-device")) o->opencl_device = value;
        else if (!strcmp(arg, "--tile")) {
            if (sscanf(value, "%dx%d", &o->tile_h, &o->tile_w) != 2) {
                fprintf(stderr, "bench_gemm: --tile %s: give HxW, e.g. 256x256\n", value);
                return 0;
            }
        } else if (!strcmp(arg, "--engines")) {
            for (int e = 0; e < ENGINE_COUNT; e++) o->engines[e] = strstr(value, engine_names[e]) != NULL;
        } else {
            fprintf(stderr, "bench_gemm: unknown option %s (--help lists them)\n", arg);
            return 0;
        }
    }
    if (o->rounds < 1 || o->square < 0) {
        fprintf(stderr, "bench_gemm: --rounds must be at least 1 and --square at least 0\n");
        return 0;
    }
    return 1;
}

/* The engines' GFLOP/s ("-" where not measured) and Vulkan's ratios to
 * the others, ending the line. */
static void print_rates(const options *o, const double *rate)
{
    for (int k = 0; k < ENGINE_COUNT; k++) {
        if (!o->engines[k]) continue;
        if (rate[k] > 0) printf(" %9.2f", rate[k]);
        else printf(" %9s", "-");
    }
    for (int k = ENGINE_OPENCL; k < ENGINE_COUNT; k++)
        if (o->engines[ENGINE_VULKAN] && o->engines[k]) {
            if (rate[k] > 0 && rate[ENGINE_VULKAN] > 0) printf(" %9.3f", rate[ENGINE_VULKAN] / rate[k]);
            else printf(" %9s", "-");
        }
    printf("\n");
}

static int report(const char *what, tt_status status)
{
    if (!status) return 1;
    fprintf(stderr, "bench_gemm: %s: %s\n", what, tt_status_message(status));
    tt_status_free(status);
    return 0;
}

/* The engine's device and buffers (floats of A, B, C: na, nb, nc, filled
 * from `host`), or 0 having said why. */
static int engine_open(engine *e, int kind, const options *o, const float *host, size_t na,
                       size_t nb, size_t nc)
{
    if (kind == ENGINE_OPENBLAS) {
        e->sgemm = tt_host_sgemm_load("bench_gemm", stderr);
        e->host_c = e->sgemm ? malloc(nc * sizeof(float)) : NULL;
        return e->host_c != NULL;
    }
    tt_backend_request request = {
        .kind = kind == ENGINE_VULKAN ? TT_BACKEND_VULKAN : TT_BACKEND_OPENCL,
        .device = kind == ENGINE_VULKAN ? o->vulkan_device : o->opencl_device};
    if (!report(engine_names[kind], tt_backend_create(&request, &e->backend))) return 0;
    return report(engine_names[kind],
                  tt_buffer_alloc(e->backend, na * 4, TT_MEM_OTHER, "bench.a", &e->a)) &&
           report(engine_names[kind],
                  tt_buffer_alloc(e->backend, nb * 4, TT_MEM_OTHER, "bench.b", &e->b)) &&
           report(engine_names[kind],
                  tt_buffer_alloc(e->backend, nc * 4, TT_MEM_OTHER, "bench.c", &e->c)) &&
           report(engine_names[kind], tt_write(e->backend, tt_mem_of(e->a), host, na * 4)) &&
           report(engine_names[kind], tt_write(e->backend, tt_mem_of(e->b), host, nb * 4)) &&
           report(engine_names[kind], tt_finish(e->backend));
}

static void engine_close(engine *e)
{
    tt_backend_destroy(e->backend); /* frees its buffers */
    free(e->host_c);
}

/* Seconds of one call of `s` on `e` (C = A B, packed), or -1 on error. */
static double engine_time(engine *e, const tt_gemm_shape *s, const float *host)
{
    size_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n;
    double t0 = seconds_now();
    if (e->sgemm) {
        e->sgemm(101, s->trans_a ? 112 : 111, s->trans_b ? 112 : 111, (int)s->m, (int)s->n,
                 (int)s->k, 1.0f, host, (int)lda, host, (int)ldb, 0.0f, e->host_c, (int)s->n);
        return seconds_now() - t0;
    }
    tt_gemm g = {.trans_a = s->trans_a, .trans_b = s->trans_b, .m = s->m, .n = s->n, .k = s->k,
                 .alpha = 1, .beta = 0, .a = tt_mem_of(e->a), .lda = lda,
                 .b = tt_mem_of(e->b), .ldb = ldb, .c = tt_mem_of(e->c), .ldc = s->n, .batch = 1};
    if (!report(s->label, tt_gemm_run(e->backend, &g)) || !report(s->label, tt_finish(e->backend)))
        return -1;
    return seconds_now() - t0;
}

/* C of the last call on `e` into out (m n floats). */
static int engine_result(engine *e, const tt_gemm_shape *s, float *out)
{
    size_t bytes = s->m * s->n * sizeof(float);
    if (e->sgemm) {
        memcpy(out, e->host_c, bytes);
        return 1;
    }
    return report(s->label, tt_read(e->backend, out, tt_mem_of(e->c), bytes));
}

/* The largest |x - ref| relative to the largest |ref|. */
static double difference(const float *x, const float *ref, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        worst = d > worst || d != d ? d : worst;
        scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
    }
    return worst / (scale > 0 ? scale : 1);
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, &o)) return 2;
    /* OpenBLAS on the cores lavapipe and PoCL use (read when it loads) */
    char cores[16];
    snprintf(cores, sizeof cores, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    setenv("OPENBLAS_NUM_THREADS", cores, 0);

    tt_gemm_shape *unet = NULL, *shapes = NULL;
    int unet_count = 0, count = 0;
    if (!report("UNet shapes", tt_gemm_shapes_unet(3, 4, o.base, o.depth, o.tile_h, o.tile_w,
                                                   &unet, &unet_count)))
        return 2;
    shapes = calloc((size_t)unet_count + 1, sizeof *shapes);
    if (!shapes) return 2;
    if (o.square)
        shapes[count++] = (tt_gemm_shape){.m = (size_t)o.square, .n = (size_t)o.square,
                                          .k = (size_t)o.square, .count = 0, .label = "square"};
    for (int i = 0; i < unet_count; i++)
        if (!o.filter || strstr(unet[i].label, o.filter)) shapes[count++] = unet[i];
    free(unet);
    size_t na = 1, nb = 1, nc = 1;
    for (int i = 0; i < count; i++) {
        const tt_gemm_shape *s = &shapes[i];
        na = s->m * s->k > na ? s->m * s->k : na;
        nb = s->k * s->n > nb ? s->k * s->n : nb;
        nc = s->m * s->n > nc ? s->m * s->n : nc;
    }
    size_t nhost = na > nb ? na : nb;
    float *host = malloc(nhost * sizeof(float)), *ref = malloc(nc * sizeof(float)),
          *got = malloc(nc * sizeof(float));
    if (!host || !ref || !got) return 2;
    for (size_t i = 0; i < nhost; i++) host[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;

    engine engines[ENGINE_COUNT] = {{0}};
    for (int k = 0; k < ENGINE_COUNT; k++)
        engines[k].on = o.engines[k] && engine_open(&engines[k], k, &o, host, nhost, nhost, nc);
    if (engines[ENGINE_VULKAN].on)
        printf("Vulkan: %s (%s)\n", engines[ENGINE_VULKAN].backend->device.name,
               engines[ENGINE_VULKAN].backend->device.type);
    if (engines[ENGINE_OPENCL].on)
        printf("OpenCL: %s (%s)\n", engines[ENGINE_OPENCL].backend->device.name,
               engines[ENGINE_OPENCL].backend->device.platform);
    if (engines[ENGINE_OPENBLAS].on) printf("OpenBLAS: %s threads\n", getenv("OPENBLAS_NUM_THREADS"));

    double *best = malloc(sizeof(double) * (size_t)count * ENGINE_COUNT);
    double *diff = calloc((size_t)count * ENGINE_COUNT, sizeof(double));
    if (!best || !diff) return 2;
    for (int i = 0; i < count * ENGINE_COUNT; i++) best[i] = INFINITY;
    for (int round = 0; round < o.rounds; round++) {
        if (isatty(STDERR_FILENO)) fprintf(stderr, "\rround %d of %d", round + 1, o.rounds);
        for (int i = 0; i < count; i++) {
            int first = -1;
            for (int k = 0; k < ENGINE_COUNT; k++) {
                engine *e = &engines[k];
                if (!e->on) continue;
                if (round == 0 && engine_time(e, &shapes[i], host) < 0) e->on = 0; /* warm-up */
                double t = e->on ? engine_time(e, &shapes[i], host) : -1;
                if (t < 0) {
                    e->on = 0;
                    continue;
                }
                if (t < best[i * ENGINE_COUNT + k]) best[i * ENGINE_COUNT + k] = t;
                if (round != o.rounds - 1) continue;
                size_t n = shapes[i].m * shapes[i].n;
                if (first < 0 && engine_result(e, &shapes[i], ref)) first = k;
                else if (first >= 0 && engine_result(e, &shapes[i], got)) {
                    double d = difference(got, ref, n);
                    diff[i * ENGINE_COUNT + k] = d;
                    if (!(d <= TOLERANCE))
                        fprintf(stderr, "bench_gemm: %s: %s differs from %s by %.2g of the "
                                "largest |C|\n", shapes[i].label, engine_titles[k],
                                engine_titles[first], d);
                }
            }
        }
    }
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r%30s\r", "");

    printf("\n%s, best of %d rounds; count: calls per image in one training step\n",
           cpu_time ? "GFLOP per CPU-second (all threads)" : "GFLOP/s", o.rounds);
    printf("%-30s %2s %2s %6s %6s %6s %5s", "shape", "ta", "tb", "m", "n", "k", "count");
    for (int k = 0; k < ENGINE_COUNT; k++)
        if (o.engines[k]) printf(" %9s", engine_titles[k]);
    if (o.engines[ENGINE_VULKAN] && o.engines[ENGINE_OPENCL]) printf(" %9s", "Vk/CLB");
    if (o.engines[ENGINE_VULKAN] && o.engines[ENGINE_OPENBLAS]) printf(" %9s", "Vk/OBLAS");
    printf("\n");
    double gflop_sum = 0, secs_sum[ENGINE_COUNT] = {0};
    double worst = 0;
    for (int i = 0; i < count; i++) {
        const tt_gemm_shape *s = &shapes[i];
        double gflop = tt_gemm_shape_gflop(s), rate[ENGINE_COUNT] = {0};
        printf("%-30.30s %2s %2s %6zu %6zu %6zu %5d", s->label, s->trans_a ? "T" : "N",
               s->trans_b ? "T" : "N", s->m, s->n, s->k, s->count);
        gflop_sum += s->count * gflop;
        for (int k = 0; k < ENGINE_COUNT; k++) {
            if (!o.engines[k]) continue;
            double t = best[i * ENGINE_COUNT + k];
            rate[k] = isfinite(t) ? gflop / t : 0;
            if (s->count) secs_sum[k] += s->count * t;
            if (diff[i * ENGINE_COUNT + k] > worst) worst = diff[i * ENGINE_COUNT + k];
        }
        print_rates(&o, rate);
    }
    if (gflop_sum > 0) {
        double rate[ENGINE_COUNT] = {0};
        printf("%-30s %34s", "UNet step, weighted by count", "");
        for (int k = 0; k < ENGINE_COUNT; k++)
            if (o.engines[k] && isfinite(secs_sum[k]) && secs_sum[k] > 0)
                rate[k] = gflop_sum / secs_sum[k];
        print_rates(&o, rate);
    }
    printf("results agree: largest difference %.2g of the largest |C| (against the first engine)\n",
           worst);
    int failed = !(worst <= TOLERANCE);
    if (failed) printf("bench_gemm: the engines' results differ: one of them is wrong\n");
    for (int k = 0; k < ENGINE_COUNT; k++) engine_close(&engines[k]);
    free(shapes), free(host), free(ref), free(got), free(best), free(diff);
    return failed;
}
