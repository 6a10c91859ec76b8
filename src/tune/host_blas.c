/* OpenBLAS SGEMM timings on the host; see host_blas.h. */
#include "tune/host_blas.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"

/* OpenBLAS picks its kernels by the CPU's family and model, and a model
 * it does not know (a virtual machine's, or a newer one) gets its oldest,
 * SSE3 kernels ("Prescott"): a yardstick several times too short.  The
 * kernels for what the CPU supports, for OPENBLAS_CORETYPE; NULL where
 * OpenBLAS's own choice stands. */
static const char *core_of_cpu(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}

tt_cblas_sgemm_fn tt_host_sgemm_load(const char *command, FILE *log)
{
    /* the library reads OPENBLAS_CORETYPE as it loads; the user's wins */
    const char *chosen = getenv("OPENBLAS_CORETYPE"), *core = chosen ? NULL : core_of_cpu();
    if (core) setenv("OPENBLAS_CORETYPE", core, 0);
    /* never closed: OpenBLAS's threads outlive a dlclose badly */
    void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(log, "tiletrain %s: libopenblas.so.0 not found (apt-get install libopenblas0); "
                "OpenBLAS skipped\n", command);
        return NULL;
    }
    tt_cblas_sgemm_fn sgemm;
    *(void **)&sgemm = dlsym(lib, "cblas_sgemm");
    if (!sgemm) fprintf(log, "tiletrain %s: libopenblas.so.0 has no cblas_sgemm; OpenBLAS skipped\n",
                        command);
    char *(*corename)(void);
    *(void **)&corename = dlsym(lib, "openblas_get_corename");
    if (sgemm && corename)
        fprintf(log, "tiletrain %s: OpenBLAS runs its %s kernels (OPENBLAS_CORETYPE%s)\n", command,
                corename(), chosen ? " as set" : core ? " from the CPU's features" : " unset");
    return sgemm;
}

int tt_host_sgemm_time(const char *command, const tt_gemm_shape *shapes, int count, double *secs,
                       FILE *log)
{
    tt_cblas_sgemm_fn sgemm = tt_host_sgemm_load(command, log);
    if (!sgemm) return 0;
    size_t in = 0, out = 0;
    for (int s = 0; s < count; s++) {
        size_t a = shapes[s].m * shapes[s].k, b = shapes[s].k * shapes[s].n;
        in = a > in ? a : in;
        in = b > in ? b : in;
        out = shapes[s].m * shapes[s].n > out ? shapes[s].m * shapes[s].n : out;
    }
    float *x = tt_malloc(in * sizeof(float)), *c = tt_malloc(out * sizeof(float));
    int ok = x && c;
    if (!ok) fprintf(log, "tiletrain %s: --compare-openblas: out of host memory; skipped\n", command);
    for (size_t i = 0; ok && i < in; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int s = 0; ok && s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        double best = INFINITY, spent = 0;
        for (int rep = 0; rep < 11; rep++) { /* the first call is a warm-up */
            double t0 = tt_seconds();
            sgemm(101 /* row-major */, g->trans_a ? 112 : 111, g->trans_b ? 112 : 111, (int)g->m,
                  (int)g->n, (int)g->k, 1.0f, x, (int)(g->trans_a ? g->m : g->k), x,
                  (int)(g->trans_b ? g->k : g->n), 0.0f, c, (int)g->n);
            double t = tt_seconds() - t0;
            if (rep == 0) continue;
            best = t < best ? t : best;
            spent += t;
            if ((rep >= 2 && spent > 0.1) || (rep >= 3 && spent > 0.03)) break;
        }
        secs[s] = best;
    }
    free(x);
    free(c);
    return ok;
}
