/* tiletrain data synth: writes a learnable synthetic dataset (data/synth.h). */
#include "cli/cmd_data_synth.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/options.h"
#include "data/synth.h"

typedef struct synth_options {
    char out[TT_OPT_STRING_MAX];
    char format[TT_OPT_STRING_MAX];
    int count;
    int size[2];
    int classes;
    uint64_t seed;
    int grey;
    double region_scale;
    int ignore_regions;
    double rare_class;
} synth_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(synth_options, field), meta, help, lo, hi, NULL}

static const tt_opt option_table[] = {
    OPT("out", TT_OPT_STRING, out, "DIR", "output folder (created)", 1, 0),
    {"format", TT_OPT_CHOICE, offsetof(synth_options, format), "F", "kaggle-rle (default): "
     "DIR/train_images/*.jpg + DIR/train.csv (Understanding Clouds: Image_Label,EncodedPixels; RLE "
     "1-based, column-major); folder: DIR/images/*.png + DIR/masks/*.png (class index, 0 = background)",
     1, 0, "kaggle-rle|folder"},
    OPT("count", TT_OPT_INT, count, "N", "images (default 16)", 1, 1e9),
    OPT("size", TT_OPT_SIZE2, size, "HxW", "image size, never resized; N alone means NxN (default 512x768)", 1, 0),
    OPT("classes", TT_OPT_INT, classes, "C", "kaggle-rle: labels, 1..32 (Fish, Flower, Gravel, Sugar, ...; "
        "default 4); folder: classes with background, 2..255 (default 5)", 1, 1e9),
    OPT("seed", TT_OPT_U64, seed, "K", "the same seed writes the same files (default 1)", 1, 0),
    OPT("grey", TT_OPT_FLAG, grey, NULL, "one-channel (grey) images: the luminance of the colour ones (default colour)", 1, 0),
    OPT("region-scale", TT_OPT_DOUBLE, region_scale, "X", "labelled regions' radii times X, 0.01 to 10: 0.25 for small regions, 2 for large (default 1: 12% to 32% of the shorter side)", 0.01, 10),
    OPT("rare-class", TT_OPT_DOUBLE, rare_class, "P", "the last class drawn in an image with probability P, 0.001 to 1, and never the class an image is sure to show: a rare class (default: like the others, 0.6, or the one shown)", 0.001, 1),
    OPT("ignore-regions", TT_OPT_INT, ignore_regions, "N", "folder: N ellipses per image marked 255 (ignore) in the mask, the image unchanged under them (default 0)", 0, 64),
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain data synth --out DIR [--format kaggle-rle|folder] [--count N]\n"
           "                            [--size HxW] [--classes C] [--seed K] [--grey]\n"
           "                            [--region-scale X] [--ignore-regions N] [--rare-class P]\n"
           "\n"
           "Writes a synthetic segmentation set in a real layout: cloud-like noise\n"
           "with blob regions whose texture and colour depend on their class.\n"
           "\n"
           "example:\n"
           "  tiletrain data synth --out clouds --format kaggle-rle --count 40 --size 1400x2100\n"
           "  tiletrain data synth --out grey --format folder --grey --region-scale 0.5 \\\n"
           "      --ignore-regions 2\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

int tt_cmd_data_synth(int argc, char **argv)
{
    const char *cmd = "data synth";
    synth_options o = {.format = "kaggle-rle", .count = 16, .size = {512, 768}, .seed = 1};
    int rc = tt_cli_parse(cmd, option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    if (!o.out[0]) return tt_cli_usage_error(cmd, "--out DIR is required");
    tt_synth_config config = {o.out, strcmp(o.format, "folder") == 0 ? TT_SYNTH_FOLDER : TT_SYNTH_KAGGLE_RLE,
                              o.count, o.size[0], o.size[1], o.classes, o.seed, o.grey,
                              o.region_scale, o.ignore_regions, o.rare_class};
    if (!config.classes) config.classes = config.format == TT_SYNTH_FOLDER ? 5 : 4;
    tt_status status = tt_synth_validate(&config);
    if (status) {
        int rc = tt_cli_usage_error(cmd, "%s", tt_status_message(status));
        tt_status_free(status);
        return rc;
    }
    status = tt_synth_write(&config);
    if (status) return tt_cli_fail(status);
    printf("wrote %d %dx%d %s images (%s, %d classes, seed %llu", config.count, config.height,
           config.width, config.grey ? "grey" : "colour",
           config.format == TT_SYNTH_FOLDER ? "folder" : "kaggle-rle", config.classes,
           (unsigned long long)config.seed);
    if (config.region_scale > 0 && config.region_scale != 1)
        printf(", regions x%g", config.region_scale);
    if (config.ignore_regions) printf(", %d ignore regions each", config.ignore_regions);
    if (config.rare_class > 0) printf(", the last class in %g of the images", config.rare_class);
    printf(") to %s\n", config.out_dir);
    return 0;
}
