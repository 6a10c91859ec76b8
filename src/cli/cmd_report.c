/*
 * tiletrain report OUT: OUT/report.html from OUT/train.jsonl, self-contained
 * (inline SVG, no network): loss and learning-rate curves, validation Dice
 * per class over the steps, throughput, memory per category, the device
 * and the config.  `train` writes the same report at its end.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "core/memstats.h"
#include "core/status.h"
#include "train/report.h"

static void help(void)
{
    printf("usage: tiletrain report OUT\n"
           "\n"
           "Writes OUT/report.html from OUT/train.jsonl: loss and learning-rate curves,\n"
           "validation Dice per class, throughput, device memory, device and config.\n"
           "Self-contained (inline SVG). `tiletrain train` writes it at the end of a run.\n"
           "\n"
           "example:\n"
           "  tiletrain report runs/quickstart/run\n");
}

int tt_cmd_report(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            help();
            return 0;
        }
        return tt_cli_usage_error("report", "give the --out folder of a training run");
    }
    tt_status status = tt_report_write(argv[1]);
    if (status) return tt_cli_fail(status);
    printf("wrote %s/report.html\n", argv[1]);
    return 0;
}
