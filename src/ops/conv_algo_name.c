/* The convolution algorithms by name, and the one a run asks for (--algo,
 * $TT_CONV_ALGO); see conv_algo.h.  Below the dispatch and the autotuner,
 * which both name algorithms. */
#include "ops/conv_algo.h"

#include <strings.h>

#include "core/knobs.h"
#include "core/status.h"

static const char *const algo_names[] = {
    [TT_CONV_ALGO_AUTO] = "auto",
    [TT_CONV_ALGO_IM2COL_GEMM] = "im2col_gemm",
    [TT_CONV_ALGO_DIRECT] = "direct",
    [TT_CONV_ALGO_WINOGRAD] = "winograd",
    [TT_CONV_ALGO_IMPLICIT_GEMM] = "implicit_gemm",
    [TT_CONV_ALGO_WINOGRAD4] = "winograd4x4",
    [TT_CONV_ALGO_WINOGRAD4_FUSED] = "winograd4x4_fused",
    [TT_CONV_ALGO_DIRECT_W16] = "direct_w16",
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
                        "direct, winograd, implicit_gemm, winograd4x4, winograd4x4_fused, direct_w16",
                        name ? name : "(null)");
}

tt_status tt_conv_algo_setting(const char *flag, tt_conv_algo *out)
{
    *out = TT_CONV_ALGO_AUTO;
    if (flag && *flag) {
        TT_TRY(tt_error_prefix(tt_conv_algo_parse(flag, out), "--algo"));
        if (*out != TT_CONV_ALGO_AUTO) return NULL;
    }
    const char *env = tt_knob_str(TT_KNOB_CONV_ALGO);
    if (!env || !*env) return NULL;
    return tt_error_prefix(tt_conv_algo_parse(env, out),
                           "$TT_CONV_ALGO (unset it, or give --algo)");
}
