/*
 * The subcommands of `tiletrain`.  Each takes its own argv (argv[0] is the
 * subcommand's name), prints its own --help, and returns the process exit
 * status: 0 success, 1 a run-time failure, 2 bad usage.
 */
#ifndef TT_CLI_COMMANDS_H
#define TT_CLI_COMMANDS_H

#include <stdio.h>

#include "tiletrain.h"

typedef struct tt_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} tt_command;

int tt_cmd_devices(int argc, char **argv);
int tt_cmd_selftest(int argc, char **argv);
int tt_cmd_train(int argc, char **argv);
int tt_cmd_data(int argc, char **argv);
int tt_cmd_predict(int argc, char **argv);
int tt_cmd_eval(int argc, char **argv);
int tt_cmd_mem(int argc, char **argv);
int tt_cmd_bench(int argc, char **argv);
int tt_cmd_report(int argc, char **argv);
int tt_cmd_tune(int argc, char **argv);

/* Prints "tiletrain: <message>" (and any detail) to stderr; frees status;
 * returns 1 for use as an exit status. */
int tt_cli_fail(tt_status status);

/* Whether to write ANSI colour to `stream`: a terminal, NO_COLOR unset or
 * empty (https://no-color.org), and TERM not "dumb". */
int tt_cli_colour(FILE *stream);
/* Parses argv[1..] into opts with the option table; prints the usage error
 * (returns 2) or calls help() on --help (returns 0); returns -1 when the
 * command should go on. */
#include "core/options.h"
int tt_cli_parse(const char *command, const tt_opt *table, size_t count, void *opts, int argc,
                 char **argv, void (*help)(void));

/* Prints a usage error naming the command, with a pointer to --help; returns 2. */
int tt_cli_usage_error(const char *command, const char *fmt, ...);

#endif
