/* Dropout and drop-path with regenerated masks (see dropout.h): the hash's
 * host half, the checks, and the launches of opencl/dropout.cl and
 * shaders/dropout/. */
#include "ops/dropout.h"

#include "core/status.h"

static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* The per-seed keys that the kernels take as arguments. */
static void keys_of(uint64_t seed, uint32_t *key_a, uint32_t *key_b)
{
    uint32_t lo = (uint32_t)seed, hi = (uint32_t)(seed >> 32);
    *key_a = fmix32(lo ^ fmix32(hi ^ 0x9e3779b9u));
    *key_b = fmix32(hi ^ fmix32(lo ^ 0x7f4a7c15u));
}

static uint64_t mix64(uint64_t z) /* splitmix64's finaliser */
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t tt_dropout_run_seed(uint64_t run_seed) { return mix64(run_seed ^ 0x6a09e667f3bcc909ULL); }

uint64_t tt_dropout_image_seed(uint64_t layer_seed, int64_t crop)
{
    return mix64(layer_seed ^ mix64((uint64_t)crop ^ 0xbb67ae8584caa73bULL));
}

uint64_t tt_dropout_layer_seed(uint64_t seed, int salt)
{
    return seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(salt + 1));
}

uint32_t tt_dropout_hash(uint64_t seed, uint32_t index)
{
    uint32_t key_a, key_b;
    keys_of(seed, &key_a, &key_b);
    return fmix32(fmix32(index ^ key_a) + key_b);
}

static uint32_t threshold_of(float p) { return (uint32_t)((double)p * 4294967296.0); }

int tt_dropout_keep(uint64_t seed, uint32_t index, float p)
{
    return tt_dropout_hash(seed, index) >= threshold_of(p);
}

/* p in [0, 1), named in the error otherwise. */
static tt_status check_p(const char *op, float p)
{
    if (p >= 0.0f && p < 1.0f) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: p = %g is outside [0, 1): the drop probability must be at least 0 "
                        "and below 1",
                        op, (double)p);
}

/* Checks both tensors of n elements and launches `kernel`, whose hash
 * index is element / group. */
static tt_status run(tt_backend *be, const char *op, const char *kernel, tt_mem dst,
                     const char *dst_name, tt_mem src, const char *src_name, float p,
                     uint64_t seed, size_t n, size_t group)
{
    TT_TRY(tt_launch_check_count(op, n));
    TT_TRY(tt_mem_check(op, dst_name, dst, n * sizeof(float)));
    TT_TRY(tt_mem_check(op, src_name, src, n * sizeof(float)));
    uint32_t key_a, key_b;
    keys_of(seed, &key_a, &key_b);
    float scale = (float)(1.0 / (1.0 - (double)p));
    return TT_LAUNCH_1D(be, "dropout", kernel, n, tt_arg_mem(dst), tt_arg_mem(src),
                        tt_arg_i32((int32_t)key_a), tt_arg_i32((int32_t)key_b),
                        tt_arg_i32((int32_t)threshold_of(p)), tt_arg_f32(scale),
                        tt_arg_i32((int32_t)n), tt_arg_i32((int32_t)group));
}

static tt_status dropout(tt_backend *be, const char *op, const char *kernel, tt_mem dst,
                         const char *dst_name, tt_mem src, const char *src_name, float p,
                         uint64_t seed, size_t n)
{
    TT_TRY(check_p(op, p));
    if (n == 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: n = 0: the size must be positive", op);
    return run(be, op, kernel, dst, dst_name, src, src_name, p, seed, n, 1);
}

static tt_status drop_path(tt_backend *be, const char *op, const char *kernel, tt_mem dst,
                           const char *dst_name, tt_mem src, const char *src_name, float p,
                           uint64_t seed, size_t batch, size_t per_sample)
{
    TT_TRY(check_p(op, p));
    if (batch == 0 || per_sample == 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: batch %zu, per_sample %zu: both must be positive", op, batch,
                            per_sample);
    if (per_sample > INT32_MAX / batch)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: batch %zu x per_sample %zu elements do not fit one launch "
                            "(at most %d)",
                            op, batch, per_sample, (int)INT32_MAX);
    return run(be, op, kernel, dst, dst_name, src, src_name, p, seed, batch * per_sample,
               per_sample);
}

tt_status tt_dropout_forward(tt_backend *be, tt_mem out, tt_mem inp, float p, uint64_t seed,
                             size_t n)
{
    return dropout(be, "dropout forward", "dropout_forward", out, "out", inp, "inp", p, seed, n);
}

tt_status tt_dropout_backward(tt_backend *be, tt_mem dinp, tt_mem dout, float p, uint64_t seed,
                              size_t n)
{
    return dropout(be, "dropout backward", "dropout_backward", dinp, "dinp", dout, "dout", p,
                   seed, n);
}

tt_status tt_drop_path_forward(tt_backend *be, tt_mem out, tt_mem inp, float p, uint64_t seed,
                               size_t batch, size_t per_sample)
{
    return drop_path(be, "drop_path forward", "dropout_forward", out, "out", inp, "inp", p, seed,
                     batch, per_sample);
}

tt_status tt_drop_path_backward(tt_backend *be, tt_mem dinp, tt_mem dout, float p, uint64_t seed,
                                size_t batch, size_t per_sample)
{
    return drop_path(be, "drop_path backward", "dropout_backward", dinp, "dinp", dout, "dout", p,
                     seed, batch, per_sample);
}
