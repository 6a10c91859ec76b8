/* Helpers shared by the convolution ops; see conv_algo.h. */
#include "ops/conv_algo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/status.h"

#define CONV_BIAS_WG 64 /* TT_CONV_BIAS_WG's default in opencl/conv.cl */

static const char *const algo_names[] = {
    [TT_CONV_ALGO_AUTO] = "auto",
    [TT_CONV_ALGO_IM2COL_GEMM] = "im2col_gemm",
    [TT_CONV_ALGO_DIRECT] = "direct",
    [TT_CONV_ALGO_WINOGRAD] = "winograd",
    [TT_CONV_ALGO_FFT] = "fft",
};
_Static_assert(sizeof algo_names / sizeof algo_names[0] == TT_CONV_ALGO_COUNT,
               "every tt_conv_algo needs a name");

const char *tt_conv_algo_name(tt_conv_algo algo)
{
    return (unsigned)algo < TT_CONV_ALGO_COUNT ? algo_names[algo] : "unknown";
}

tt_status tt_conv_algo_parse(const char *name, tt_conv_algo *out)
{
    for (int a = 0; a < TT_CONV_ALGO_COUNT; a++)
        if (name && strcasecmp(name, algo_names[a]) == 0) {
            *out = (tt_conv_algo)a;
            return NULL;
        }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "unknown convolution algorithm '%s'; use one of auto, im2col_gemm, "
                        "direct, winograd, fft",
                        name ? name : "(null)");
}

static const char *const dir_names[] = {
    [TT_CONV_DIR_FORWARD] = "forward",
    [TT_CONV_DIR_BACKWARD_DATA] = "backward_data",
    [TT_CONV_DIR_BACKWARD_WEIGHT] = "backward_weight",
};
_Static_assert(sizeof dir_names / sizeof dir_names[0] == TT_CONV_DIR_COUNT,
               "every tt_conv_dir needs a name");

const char *tt_conv_dir_name(tt_conv_dir dir)
{
    return (unsigned)dir < TT_CONV_DIR_COUNT ? dir_names[dir] : "unknown";
}

int tt_conv_algo_runs(const tt_conv_algo_impl *impl, const tt_conv_shape *s, tt_conv_dir dir)
{
    if (!impl) return 0;
    int has = dir == TT_CONV_DIR_FORWARD         ? impl->forward != NULL
              : dir == TT_CONV_DIR_BACKWARD_DATA ? impl->backward_data != NULL
                                                 : impl->backward_weight != NULL;
    return has && (!impl->supports || impl->supports(s, dir));
}

tt_status tt_conv_bias_fill(tt_backend *be, tt_mem y, tt_mem bias, size_t batch,
                            size_t channels, size_t plane)
{
    TT_TRY(tt_launch_check_count("conv bias fill", batch * channels * plane));
    size_t global[2] = {plane, batch * channels};
    return tt_launch_kernel(be, "conv", "conv_bias_fill", NULL, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(y), tt_arg_mem(bias), tt_arg_i32((int)channels),
                                    tt_arg_i32((int)plane), tt_arg_i32((int)(batch * channels))));
}

tt_status tt_conv_bias_backward(tt_backend *be, tt_mem dbias, tt_mem dout, size_t batch,
                                size_t channels, size_t plane)
{
    TT_TRY(tt_launch_check_count("conv bias backward", batch * channels * plane));
    if (tt_conv_direct_variant(be) == TT_DIRECT_W8) { /* CPUs: a channel a work-item */
        size_t global[1] = {channels}, local[1] = {1};
        return tt_launch_kernel(be, "conv", "conv_bias_backward_w8", NULL, 1, global, local,
                                TT_ARGS(tt_arg_mem(dbias), tt_arg_mem(dout), tt_arg_i32((int)batch),
                                        tt_arg_i32((int)channels), tt_arg_i32((int)plane)));
    }
    size_t global[1] = {channels * CONV_BIAS_WG}, local[1] = {CONV_BIAS_WG};
    return tt_launch_kernel(be, "conv", "conv_bias_backward", NULL, 1, global, local,
                            TT_ARGS(tt_arg_mem(dbias), tt_arg_mem(dout), tt_arg_i32((int)batch),
                                    tt_arg_i32((int)channels), tt_arg_i32((int)plane)));
}

tt_status tt_conv_workspace_acquire(tt_backend *be, const char *name,
                                    tt_mem given, size_t bytes, tt_conv_workspace *out)
{
    *out = (tt_conv_workspace){{0}, NULL};
    if (bytes == 0) return NULL;
    if (given.buffer && given.offset <= given.buffer->bytes &&
        bytes <= given.buffer->bytes - given.offset) {
        out->mem = given;
        return NULL;
    }
    TT_TRY(tt_buffer_alloc(be, bytes, TT_MEM_WORKSPACE, name, &out->owned));
    out->mem = tt_mem_of(out->owned);
    return NULL;
}

void tt_conv_workspace_release(tt_conv_workspace *ws)
{
    /* In-order queue: OpenCL keeps the buffer alive until queued work ends. */
    tt_buffer_free(ws->owned);
    ws->owned = NULL;
}

tt_status tt_conv_tune_scratch_get(tt_conv_tune_scratch *t)
{
    if (t->out) return NULL;
    char out_name[64], ws_name[64];
    snprintf(out_name, sizeof out_name, "%s.autotune.output", t->op);
    snprintf(ws_name, sizeof ws_name, "%s.autotune.workspace", t->op);
    tt_status status = tt_buffer_alloc(t->be, t->out_floats * sizeof(float), TT_MEM_WORKSPACE,
                                       out_name, &t->out);
    if (!status) status = tt_conv_workspace_acquire(t->be, ws_name, t->given_ws, t->ws_bytes, &t->ws);
    if (status) { /* the next candidate tries again */
        tt_buffer_free(t->out);
        t->out = NULL;
    }
    return status;
}

void tt_conv_tune_scratch_release(tt_conv_tune_scratch *t)
{
    tt_buffer_free(t->out);
    t->out = NULL;
    tt_conv_workspace_release(&t->ws);
}

tt_direct_variant tt_conv_direct_variant(const tt_backend *be)
{
    const char *env = getenv("TT_CONV_DIRECT_VARIANT");
    if (env && strcmp(env, "scalar") == 0) return TT_DIRECT_SCALAR;
    if (env && strcmp(env, "tiled") == 0) return TT_DIRECT_TILED;
    if (env && strcmp(env, "w8") == 0) return TT_DIRECT_W8;
    return strcmp(be->device.type, "GPU") == 0   ? TT_DIRECT_TILED
           : strcmp(be->device.type, "CPU") == 0 ? TT_DIRECT_W8
                                                 : TT_DIRECT_SCALAR;
}

size_t tt_pow2_floor(size_t v)
{
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}
