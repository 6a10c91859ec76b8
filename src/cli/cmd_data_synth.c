/* tiletrain data synth: writes a learnable synthetic dataset (data/synth.h). */
#include "cli/cmd_data_synth.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "data/synth.h"

static void help(void)
{
    printf("usage: tiletrain data synth --out DIR [--format kaggle-rle|folder] [--count N]\n"
           "                            [--size HxW] [--classes C] [--seed K]\n"
           "\n"
           "Writes a synthetic segmentation set in a real layout: cloud-like noise\n"
           "with blob regions whose texture and colour depend on their class.\n"
           "\n"
           "example:\n"
           "  tiletrain data synth --out clouds --format kaggle-rle --count 40 --size 1400x2100\n"
           "\n"
           "  --out DIR       output folder (created)\n"
           "  --format F      kaggle-rle: DIR/train_images/*.jpg + DIR/train.csv\n"
           "                  (Understanding Clouds: Image_Label,EncodedPixels; RLE 1-based,\n"
           "                  column-major); folder: DIR/images/*.png + DIR/masks/*.png\n"
           "                  (class index, 0 = background)   [kaggle-rle]\n"
           "  --count N       images                                          [16]\n"
           "  --size HxW      image size, never resized; N alone means NxN    [512x768]\n"
           "  --classes C     kaggle-rle: labels, 1..32 (Fish, Flower, Gravel, Sugar, ...)\n"
           "                  folder: classes with background, 2..255        [4 / 5]\n"
           "  --seed K        the same seed writes the same files             [1]\n");
}

/* Parses a positive int; 0 on error. */
static int parse_positive(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 1 || v > 1000000000) return 0;
    *out = (int)v;
    return 1;
}

static int parse_size(const char *text, int *height, int *width)
{
    char *end;
    errno = 0;
    long h = strtol(text, &end, 10), w;
    if (errno || end == text || h < 1 || h > 1000000) return 0;
    if (!*end) {
        w = h;
    } else {
        if (*end != 'x' && *end != 'X') return 0;
        const char *rest = end + 1;
        w = strtol(rest, &end, 10);
        if (errno || end == rest || *end || w < 1 || w > 1000000) return 0;
    }
    *height = (int)h;
    *width = (int)w;
    return 1;
}

int tt_cmd_data_synth(int argc, char **argv)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, 'o'},   {"format", required_argument, NULL, 'f'},
        {"count", required_argument, NULL, 'n'}, {"size", required_argument, NULL, 's'},
        {"classes", required_argument, NULL, 'c'}, {"seed", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},        {0, 0, 0, 0},
    };
    const char *cmd = "data synth";
    tt_synth_config config = {NULL, TT_SYNTH_KAGGLE_RLE, 16, 512, 768, 0, 1};
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'o': config.out_dir = optarg; break;
        case 'f':
            if (strcmp(optarg, "kaggle-rle") == 0) config.format = TT_SYNTH_KAGGLE_RLE;
            else if (strcmp(optarg, "folder") == 0) config.format = TT_SYNTH_FOLDER;
            else return tt_cli_usage_error(cmd, "--format '%s': give kaggle-rle or folder", optarg);
            break;
        case 'n':
            if (!parse_positive(optarg, &config.count))
                return tt_cli_usage_error(cmd, "--count '%s': give a positive number of images", optarg);
            break;
        case 's':
            if (!parse_size(optarg, &config.height, &config.width))
                return tt_cli_usage_error(cmd, "--size '%s': give HEIGHTxWIDTH in pixels, e.g. 1400x2100",
                                          optarg);
            break;
        case 'c':
            if (!parse_positive(optarg, &config.classes))
                return tt_cli_usage_error(cmd, "--classes '%s': give a positive number", optarg);
            break;
        case 'k': {
            char *end;
            errno = 0;
            unsigned long long seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return tt_cli_usage_error(cmd, "--seed '%s': give a non-negative integer", optarg);
            config.seed = seed;
            break;
        }
        case 'h': help(); return 0;
        default:
            return tt_cli_usage_error(cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return tt_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!config.out_dir) return tt_cli_usage_error(cmd, "--out DIR is required");
    if (!config.classes) config.classes = config.format == TT_SYNTH_FOLDER ? 5 : 4;
    tt_status status = tt_synth_validate(&config);
    if (status) {
        int rc = tt_cli_usage_error(cmd, "%s", tt_status_message(status));
        tt_status_free(status);
        return rc;
    }
    status = tt_synth_write(&config);
    if (status) return tt_cli_fail(status);
    printf("wrote %d %dx%d images (%s, %d classes, seed %llu) to %s\n", config.count, config.height,
           config.width, config.format == TT_SYNTH_FOLDER ? "folder" : "kaggle-rle", config.classes,
           (unsigned long long)config.seed, config.out_dir);
    return 0;
}
