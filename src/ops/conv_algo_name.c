/* The convolution algorithms by name, and the one a run asks for (--algo,
 * $TT_CONV_ALGO); see conv_algo.h.  Below the dispatch and the autotuner,
 * which both name algorithms. */
#include "ops/conv_algo.h"

#include <strings.h>

#include "core/knobs.h"
#include "core/status.h"

#define NAME_(id, name, impl) [TT_CONV_ALGO_##id] = #name,
static const char *const algo_names[TT_CONV_ALGO_COUNT] = {[TT_CONV_ALGO_AUTO] = "auto",
                                                           TT_CONV_ALGO_ROWS(NAME_)};
#undef NAME_

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
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown convolution algorithm '%s'; use one of %s",
                        name ? name : "(null)", TT_CONV_ALGO_CHOICES);
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
