/*
 * The PyTorch twins' float64 GEMM on OpenBLAS, their float32 left alone.
 *
 * Debian's PyTorch calls the reference BLAS (BLAS_INFO=generic): a float64
 * convolution of a twin runs about 7x slower than on OpenBLAS, and the
 * float64 twins are most of the suite's PyTorch time.  Switching the whole
 * BLAS would also change float32 PyTorch's rounding, which the checks use
 * as their yardstick (tests/smp_compare.c), so this library, loaded into a
 * twin before torch (tt_python does it), replaces dgemm_ alone: it forwards
 * to Debian's libopenblas64.so.0 (the 64-bit-integer build, installed
 * beside the reference BLAS without replacing it: tools/deps.sh), on one
 * thread, and to the reference BLAS's dgemm_ where that is missing.
 * sgemm_ and everything else still resolve to the reference BLAS.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef void dgemm64_fn(const char *, const char *, const int64_t *, const int64_t *,
                        const int64_t *, const double *, const double *, const int64_t *,
                        const double *, const int64_t *, const double *, double *, const int64_t *,
                        size_t, size_t);
typedef void dgemm32_fn(const char *, const char *, const int *, const int *, const int *,
                        const double *, const double *, const int *, const double *, const int *,
                        const double *, double *, const int *, size_t, size_t);

static dgemm64_fn *wide;   /* OpenBLAS's, 64-bit integers */
static dgemm32_fn *narrow; /* the reference BLAS's, where OpenBLAS is missing */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find(void)
{
    setenv("OPENBLAS_NUM_THREADS", "1", 0); /* PyTorch's own threads call it */
    void *lib = dlopen("libopenblas64.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
        void (*threads)(int) = (void (*)(int))dlsym(lib, "openblas_set_num_threads");
        if (threads) threads(1);
        wide = (dgemm64_fn *)dlsym(lib, "dgemm_");
        if (wide) return;
    }
    lib = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (lib) narrow = (dgemm32_fn *)dlsym(lib, "dgemm_");
    if (!narrow) abort(); /* no BLAS at all: PyTorch could not have called us */
}

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t ta_len, size_t tb_len)
{
    pthread_once(&once, find);
    if (!wide) {
        narrow(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ta_len, tb_len);
        return;
    }
    int64_t m64 = *m, n64 = *n, k64 = *k, lda64 = *lda, ldb64 = *ldb, ldc64 = *ldc;
    wide(ta, tb, &m64, &n64, &k64, alpha, a, &lda64, b, &ldb64, beta, c, &ldc64, ta_len, tb_len);
}
