/* tiletrain: the command line.  The only place that decides to exit. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/fault.h"
#include "core/knobs.h"

static const tt_command commands[] = {
    {"devices", "list the OpenCL and Vulkan devices and their memory", tt_cmd_devices},
    {"data", "make, check, show and export a data set (synth, check, show, masks)", tt_cmd_data},
    {"train", "train the UNet with gradient accumulation", tt_cmd_train},
    {"selftest", "run smoke kernels on a device and check the results", tt_cmd_selftest},
    {"doctor", "does this device train this recipe? every kernel checked, an overfit, memory", tt_cmd_doctor},
    {"plan", "choose a training recipe from the data set and the device (writes plan.json)", tt_cmd_plan},
    {"mem", "estimate (and measure) the device memory of a training configuration", tt_cmd_mem},
    {"bench", "time whole training steps; device time per kind of work", tt_cmd_bench},
    {"report", "OUT/report.html from a run's train.jsonl", tt_cmd_report},
    {"eval", "per-class Dice and IoU of a checkpoint on a data set", tt_cmd_eval},
    {"postprocess", "search each class's threshold and minimum size into a checkpoint", tt_cmd_postprocess},
    {"predict", "full-resolution masks of images with a trained checkpoint", tt_cmd_predict},
    {"export", "a checkpoint as an ONNX file, checked in onnxruntime (--verify)", tt_cmd_export},
    {"tune", "tune CLBlast's GEMM kernels for this device and the model's shapes", tt_cmd_tune},
};

/* "  NAME  text", the text wrapped at 78 columns under itself. */
static void print_wrapped(FILE *out, const char *name, const char *text)
{
    enum { INDENT = 21, WIDTH = 78 };
    fprintf(out, "  %-18s ", name);
    int column = INDENT;
    while (*text) {
        int word = (int)strcspn(text, " ");
        if (column > INDENT && column + 1 + word > WIDTH) {
            fprintf(out, "\n%*s", INDENT, "");
            column = INDENT;
        } else if (column > INDENT) {
            fputc(' ', out);
            column++;
        }
        fprintf(out, "%.*s", word, text);
        column += word;
        text += word;
        while (*text == ' ') text++;
    }
    fputc('\n', out);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tiletrain COMMAND [options]\n"
            "\n"
            "Trains convolutional segmentation networks on any OpenCL or Vulkan device,\n"
            "with gradient accumulation and full-resolution tiles.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "options:\n"
            "  --help      this text; `tiletrain COMMAND --help` for a command's options\n"
            "  --version   print the version\n"
            "\n"
            "environment (docs/knobs.md lists the debugging and test variables too):\n");
    for (int i = 0; i < TT_KNOB_COUNT; i++)
        if (tt_knob_table[i].kind == TT_KNOB_USER)
            print_wrapped(out, tt_knob_table[i].name, tt_knob_table[i].what);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines reach a log file as they happen */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tiletrain %s\n", TT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            int rc = commands[i].run(argc - 1, argv + 1);
            tt_fault_print_counts(stderr); /* TT_FAULT=count: the range of a test's walk */
            return rc;
        }
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) names[i] = commands[i].name;
    const char *near = tt_closest_word(argv[1], names, sizeof names / sizeof names[0]);
    if (near) fprintf(stderr, "tiletrain: unknown command '%s'; did you mean '%s'?\n", argv[1], near);
    else fprintf(stderr, "tiletrain: unknown command '%s'\n", argv[1]);
    fprintf(stderr, "the commands are:");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, " (see `tiletrain --help`)\n");
    return 2;
}
