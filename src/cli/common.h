/*
 * What every subcommand shares: parsing its options with the one table
 * parser (core/options.h), printing errors and usage errors, and colour.
 */
#ifndef TT_CLI_COMMON_H
#define TT_CLI_COMMON_H

#include <stdio.h>

#include "core/options.h"
#include "tiletrain.h"

/* Prints "tiletrain: <message>" (and any detail) to stderr; frees status;
 * returns 1 for use as an exit status. */
int tt_cli_fail(tt_status status);

/* Whether to write ANSI colour to `stream`: a terminal, NO_COLOR unset or
 * empty (https://no-color.org), and TERM not "dumb". */
int tt_cli_colour(FILE *stream);
/* Parses argv[1..] into opts with the option table; prints the usage error
 * (returns 2) or calls help() on --help (returns 0); returns -1 when the
 * command should go on. */
int tt_cli_parse(const char *command, const tt_opt *table, size_t count, void *opts, int argc,
                 char **argv, void (*help)(void));
/* The same, marking in given[] (count bytes) each option the flags or
 * --config set (tt_opt_parse_args_given). */
int tt_cli_parse_given(const char *command, const tt_opt *table, size_t count, void *opts,
                       unsigned char *given, int argc, char **argv, void (*help)(void));

/* The flags predict and eval load a checkpoint's model with. */
typedef struct tt_cli_model_flags {
    const char *backend, *device, *algo, *precision, *checkpoint;
    int batch, tile_height, tile_width, raw_weights;
} tt_cli_model_flags;
struct tt_backend;
struct tt_infer_model;
/* The backend the flags choose (*be, tt_backend_destroy) and the
 * checkpoint's model on it (*model, tt_infer_model_free; its raw weights
 * with raw_weights).  Errors name the flag or the checkpoint; what was
 * made is left in *be and *model for the caller to free. */
tt_status tt_cli_load_model(const tt_cli_model_flags *f, struct tt_backend **be,
                            struct tt_infer_model *model);

/* Prints a usage error naming the command, with a pointer to --help; returns 2. */
int tt_cli_usage_error(const char *command, const char *fmt, ...);

#endif
