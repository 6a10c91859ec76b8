/* `tiletrain data synth`: the synthetic dataset writer's command line. */
#ifndef TT_CLI_CMD_DATA_SYNTH_H
#define TT_CLI_CMD_DATA_SYNTH_H

/* argv[0] is "synth"; returns 0 on success, 1 on a run-time failure, 2 on
 * bad usage (as every subcommand in cli/commands.h). */
int tt_cmd_data_synth(int argc, char **argv);

#endif
