/* What every subcommand shares: option parsing, errors and usage errors
 * on stderr, colour (see common.h). */
#include "cli/common.h"

#include "backend/backend.h"
#include "core/status.h"
#include "infer/model_load.h"
#include "ops/conv_algo.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tt_cli_colour(FILE *stream)
{
    const char *no_colour = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no_colour && *no_colour) return 0; /* https://no-color.org */
    if (term && strcmp(term, "dumb") == 0) return 0;
    return isatty(fileno(stream));
}

int tt_cli_fail(tt_status status)
{
    int c = tt_cli_colour(stderr);
    fprintf(stderr, "tiletrain: %serror:%s %s\n", c ? "\033[1;31m" : "", c ? "\033[0m" : "",
            tt_status_message(status));
    const char *detail = tt_status_detail(status);
    if (*detail) fprintf(stderr, "%s\n", detail);
    tt_status_free(status);
    return 1;
}

int tt_cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tiletrain %s: ", command);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nsee `tiletrain %s --help`\n", command);
    va_end(ap);
    return 2;
}

int tt_cli_parse(const char *command, const tt_opt *table, size_t count, void *opts, int argc,
                 char **argv, void (*help)(void))
{
    return tt_cli_parse_given(command, table, count, opts, NULL, argc, argv, help);
}

int tt_cli_parse_given(const char *command, const tt_opt *table, size_t count, void *opts,
                       unsigned char *given, int argc, char **argv, void (*help)(void))
{
    int want_help = 0;
    tt_status status =
        tt_opt_parse_args_given(table, count, opts, argc, argv, 1, &want_help, given);
    if (status) {
        int rc = tt_cli_usage_error(command, "%s", tt_status_message(status));
        tt_status_free(status);
        return rc;
    }
    if (want_help) {
        help();
        return 0;
    }
    return -1;
}

tt_status tt_cli_load_model(const tt_cli_model_flags *f, tt_backend **be, tt_infer_model *model)
{
    tt_backend_request request = {0};
    TT_TRY(tt_error_prefix(tt_backend_choose(f->backend, f->device, &request), "--backend"));
    TT_TRY(tt_backend_create(&request, be));
    tt_conv_algo algo;
    TT_TRY(tt_conv_algo_setting(f->algo, &algo));
    tt_precision precision;
    TT_TRY(tt_precision_parse("--precision", f->precision, &precision));
    TT_TRY(tt_infer_model_load(*be, f->checkpoint, f->batch, f->tile_height, f->tile_width, algo,
                               precision, model));
    if (f->raw_weights) TT_TRY(tt_infer_model_use_raw(model, f->checkpoint));
    return NULL;
}
