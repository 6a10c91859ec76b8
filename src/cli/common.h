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

/* Prints a usage error naming the command, with a pointer to --help; returns 2. */
int tt_cli_usage_error(const char *command, const char *fmt, ...);

#endif
