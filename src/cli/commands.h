/*
 * The subcommands of `tiletrain`.  Each takes its own argv (argv[0] is the
 * subcommand's name), prints its own --help, and returns the process exit
 * status: 0 success, 1 a run-time failure, 2 bad usage.  main.c
 * dispatches to them; what they share is in cli/common.h.
 */
#ifndef TT_CLI_COMMANDS_H
#define TT_CLI_COMMANDS_H

#include "cli/common.h"

typedef struct tt_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} tt_command;

int tt_cmd_devices(int argc, char **argv);
int tt_cmd_selftest(int argc, char **argv);
int tt_cmd_doctor(int argc, char **argv);
int tt_cmd_train(int argc, char **argv);
int tt_cmd_data(int argc, char **argv);
int tt_cmd_predict(int argc, char **argv);
int tt_cmd_eval(int argc, char **argv);
int tt_cmd_postprocess(int argc, char **argv);
int tt_cmd_mem(int argc, char **argv);
int tt_cmd_plan(int argc, char **argv);
int tt_cmd_bench(int argc, char **argv);
int tt_cmd_report(int argc, char **argv);
int tt_cmd_tune(int argc, char **argv);
int tt_cmd_export(int argc, char **argv);

#endif
