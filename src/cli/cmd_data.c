/*
 * tiletrain data: look at a training data set before training on it.
 *   data check   validate every item, count classes, pixels and sizes
 *   data show    one image with its masks overlaid in colour
 *   data masks   one image's masks, one 0/255 PNG per class
 * Subcommands come from a table; the data set options are shared.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <stb_image_write.h>

#include "cli/cmd_data_raster.h"
#include "cli/cmd_data_synth.h"
#include "cli/commands.h"
#include "core/alloc.h"
#include "core/options.h"
#include "core/status.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/raster_set.h"
#include "infer/overlay.h"

#define TT_DATA_MAX_CLASSES 255

/* The flags every subcommand takes, and the ones a few take. */
typedef struct data_options {
    char data[TT_OPT_STRING_MAX];
    char format[TT_OPT_STRING_MAX];
    char csv[TT_OPT_STRING_MAX];
    char images[TT_OPT_STRING_MAX];
    char masks[TT_OPT_STRING_MAX];
    char classes[TT_OPT_STRING_MAX]; /* split in place into data_args.class_names */
    uint64_t max_pixels;             /* UINT64_MAX: not given */
    int skip_bad, unlisted_empty, json;
    char image[TT_OPT_STRING_MAX];
    char out[TT_OPT_STRING_MAX];
    char bands[TT_OPT_STRING_MAX];   /* raster: the image bands */
    int mask_nodata;                 /* raster: a mask value ignored besides 255; -1: none */
} data_options;

/* What the subcommands read: the data set options point into flags. */
typedef struct data_args {
    data_options flags;
    tt_dataset_options opts;
    const char *class_names[TT_DATA_MAX_CLASSES];
    const char *image, *out;
    int json;
} data_args;

#define OPT(name, kind, field, meta, help) {name, kind, offsetof(data_options, field), meta, help, 1, 0, NULL}

static const tt_opt option_table[] = {
    OPT("data", TT_OPT_STRING, data, "DIR", "the data set's folder (required)"),
    OPT("format", TT_OPT_STRING, format, "F", "auto (default), folder, kaggle-rle or raster (DIR/images/NAME.tif + DIR/masks/NAME.tif)"),
    OPT("csv", TT_OPT_STRING, csv, "FILE", "kaggle-rle: the CSV (default DIR/train.csv)"),
    OPT("images", TT_OPT_STRING, images, "DIR", "the images (default DIR/images or DIR/train_images)"),
    OPT("masks", TT_OPT_STRING, masks, "DIR", "folder: the masks (default DIR/masks)"),
    OPT("classes", TT_OPT_STRING, classes, "a,b,c", "class names in channel order (default: folder mask "
        "values 0..max; CSV classes in order of first appearance)"),
    OPT("max-pixels", TT_OPT_U64, max_pixels, "N", "refuse images whose header claims more pixels (default 2^28)"),
    OPT("skip-bad", TT_OPT_FLAG, skip_bad, NULL, "leave bad items out (they are listed) instead of failing"),
    OPT("unlisted-empty", TT_OPT_FLAG, unlisted_empty, NULL, "kaggle-rle: images no CSV row names have empty masks"),
    OPT("json", TT_OPT_FLAG, json, NULL, "check: one JSON object instead of text"),
    OPT("image", TT_OPT_STRING, image, "NAME", "show, masks: the item (file name, with or without extension)"),
    OPT("out", TT_OPT_STRING, out, "PATH", "show: the PNG to write; masks: the folder to write into"),
    OPT("bands", TT_OPT_STRING, bands, "LIST", "raster check: the image bands, counted from 1 (default: all)"),
    {"mask-nodata", TT_OPT_INT, offsetof(data_options, mask_nodata), "V", "raster check: a mask value ignored besides 255 (-1: none)", -1, 254, NULL},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain data SUBCOMMAND --data DIR [options]\n"
           "\n"
           "subcommands:\n"
           "  synth --out DIR ...            write a synthetic data set (see `data synth --help`)\n"
           "  check                          validate the data set: every image and mask, class\n"
           "                                 pixel counts, image sizes, bad files; exit 1 on problems\n"
           "  show  --image NAME --out F.png the image with its masks overlaid in colour\n"
           "  masks --image NAME --out DIR   each class mask as an 8-bit 0/255 PNG\n"
           "\n"
           "example:\n"
           "  tiletrain data check --data clouds\n"
           "  tiletrain data show --data clouds --image synth_00000.jpg --out overlay.png\n"
           "\n"
           "exit status: 0 when clean (check: also with --skip-bad while usable items\n"
           "remain), 1 on problems or failures, 2 on bad usage.\n"
           "Formats and checks: datasets/README.md.\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

/* Parses the shared options; returns -1 to go on, else an exit status. */
static int parse_args(const char *sub, int argc, char **argv, data_args *a)
{
    data_options *o = &a->flags;
    o->max_pixels = UINT64_MAX;
    o->mask_nodata = -1;
    int rc = tt_cli_parse(sub, option_table, OPTION_COUNT, o, argc, argv, help);
    if (rc >= 0) return rc;
    if (!o->data[0]) return tt_cli_usage_error(sub, "--data DIR is required");
    a->opts.dir = o->data;
    if (o->format[0]) {
        tt_status s = tt_dataset_format_parse(o->format, &a->opts.format);
        if (s) {
            rc = tt_cli_usage_error(sub, "--format: %s", tt_status_message(s));
            tt_status_free(s);
            return rc;
        }
    }
    a->opts.csv_path = o->csv[0] ? o->csv : NULL;
    a->opts.images_dir = o->images[0] ? o->images : NULL;
    a->opts.masks_dir = o->masks[0] ? o->masks : NULL;
    if (o->classes[0]) {
        for (char *save = NULL, *name = strtok_r(o->classes, ",", &save); name;
             name = strtok_r(NULL, ",", &save)) {
            if (a->opts.class_count == TT_DATA_MAX_CLASSES)
                return tt_cli_usage_error(sub, "--classes lists more than %d names", TT_DATA_MAX_CLASSES);
            a->class_names[a->opts.class_count++] = name;
        }
        if (!a->opts.class_count) return tt_cli_usage_error(sub, "--classes needs names: --classes a,b,c");
        a->opts.classes = a->class_names;
    }
    if (o->max_pixels == 0) return tt_cli_usage_error(sub, "--max-pixels takes a positive number, not 0");
    a->opts.max_pixels = o->max_pixels == UINT64_MAX ? 0 : o->max_pixels;
    a->opts.skip_bad = o->skip_bad;
    a->opts.unlisted_empty = o->unlisted_empty;
    a->json = o->json;
    a->image = o->image[0] ? o->image : NULL;
    a->out = o->out[0] ? o->out : NULL;
    return -1;
}

/* ---- check ----------------------------------------------------------------- */

typedef struct size_count {
    int width, height, count;
} size_count;

static void count_size(size_count *sizes, int *n, int cap, int w, int h)
{
    for (int i = 0; i < *n; i++)
        if (sizes[i].width == w && sizes[i].height == h) {
            sizes[i].count++;
            return;
        }
    if (*n < cap) sizes[(*n)++] = (size_count){w, h, 1};
}

static int data_check(data_args *a)
{
    if (a->opts.format == TT_DATASET_RASTER ||
        (a->opts.format == TT_DATASET_AUTO && tt_raster_set_detect(a->opts.dir)))
        return tt_data_check_rasters(a->opts.dir, a->flags.bands, a->flags.mask_nodata, a->json);
    int user_skip = a->opts.skip_bad, rc = 1;
    a->opts.skip_bad = 1; /* collect every problem, decide below */
    tt_dataset *ds = NULL;
    tt_status status = tt_dataset_open(&a->opts, &ds);
    if (status) return tt_cli_fail(status);
    const int n = tt_dataset_count(ds), classes = tt_dataset_classes(ds);
    const int multi = tt_dataset_mask_kind(ds) == TT_MASK_MULTI_LABEL;
    uint64_t *pixels = tt_calloc((size_t)classes + 1, sizeof *pixels); /* [classes] = ignore (folder) */
    if (!pixels) {
        tt_dataset_destroy(ds);
        return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "data check: out of host memory"));
    }
    size_count sizes[64];
    int size_n = 0, mask_failures = 0;
    uint64_t total = 0;
    cJSON *mask_problems = cJSON_CreateArray();
    for (int i = 0; i < n && pixels; i++) {
        int w = 0, h = 0;
        tt_dataset_image_size(ds, i, &w, &h);
        count_size(sizes, &size_n, 64, w, h);
        size_t plane = (size_t)w * (size_t)h;
        uint8_t *planes = tt_malloc(plane * (size_t)(multi ? classes : 1));
        status = planes ? tt_dataset_mask(ds, i, planes)
                        : tt_error_new(TT_ERR_OUT_OF_MEMORY, "no host memory for the mask of %s",
                                       tt_dataset_item_name(ds, i));
        if (status) {
            mask_failures++;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "item", tt_dataset_item_name(ds, i));
            cJSON_AddStringToObject(p, "reason", tt_status_message(status));
            cJSON_AddItemToArray(mask_problems, p);
            tt_status_free(status);
            free(planes);
            continue;
        }
        total += plane;
        if (multi) {
            for (int c = 0; c < classes; c++)
                for (size_t k = 0; k < plane; k++) pixels[c] += planes[(size_t)c * plane + k];
        } else {
            for (size_t k = 0; k < plane; k++) pixels[planes[k] == 255 ? classes : planes[k]]++;
        }
        free(planes);
    }
    const int problems = tt_dataset_problem_count(ds) + mask_failures;
    if (a->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "dir", a->opts.dir);
        cJSON_AddStringToObject(root, "format", tt_dataset_format_name(tt_dataset_format_of(ds)));
        cJSON_AddNumberToObject(root, "images", n - mask_failures);
        cJSON_AddNumberToObject(root, "total_pixels", (double)total);
        cJSON *cls = cJSON_AddArrayToObject(root, "classes");
        for (int c = 0; c < classes; c++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", tt_dataset_class_name(ds, c));
            cJSON_AddNumberToObject(o, "pixels", pixels ? (double)pixels[c] : 0);
            cJSON_AddNumberToObject(o, "fraction", total && pixels ? (double)pixels[c] / (double)total : 0);
            cJSON_AddItemToArray(cls, o);
        }
        if (!multi) cJSON_AddNumberToObject(root, "ignore_pixels", pixels ? (double)pixels[classes] : 0);
        cJSON *sz = cJSON_AddArrayToObject(root, "sizes");
        for (int s = 0; s < size_n; s++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "width", sizes[s].width);
            cJSON_AddNumberToObject(o, "height", sizes[s].height);
            cJSON_AddNumberToObject(o, "count", sizes[s].count);
            cJSON_AddItemToArray(sz, o);
        }
        cJSON *pr = cJSON_AddArrayToObject(root, "problems");
        for (int p = 0; p < tt_dataset_problem_count(ds); p++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "item", tt_dataset_problem_at(ds, p)->item);
            cJSON_AddStringToObject(o, "reason", tt_dataset_problem_at(ds, p)->reason);
            cJSON_AddItemToArray(pr, o);
        }
        while (cJSON_GetArraySize(mask_problems))
            cJSON_AddItemToArray(pr, cJSON_DetachItemFromArray(mask_problems, 0));
        cJSON_AddBoolToObject(root, "ok", problems == 0);
        char *text = cJSON_Print(root);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(root);
    } else {
        printf("data set  %s (%s)\n", a->opts.dir, tt_dataset_format_name(tt_dataset_format_of(ds)));
        printf("images    %d usable, %d problem%s\n", n - mask_failures, problems, problems == 1 ? "" : "s");
        printf("sizes    ");
        for (int s = 0; s < size_n; s++) printf(" %dx%d (%d)", sizes[s].width, sizes[s].height, sizes[s].count);
        printf("%s\n", size_n == 64 ? " ..." : "");
        printf("classes   %d (%s)\n", classes, multi ? "multi-label, one 0/1 plane each" : "class index per pixel");
        for (int c = 0; c < classes && pixels; c++)
            printf("  %-20s %14llu px  %6.2f%%\n", tt_dataset_class_name(ds, c), (unsigned long long)pixels[c],
                   total ? 100.0 * (double)pixels[c] / (double)total : 0.0);
        if (!multi && pixels)
            printf("  %-20s %14llu px  %6.2f%%\n", "(255 = ignore)", (unsigned long long)pixels[classes],
                   total ? 100.0 * (double)pixels[classes] / (double)total : 0.0);
        for (int p = 0; p < tt_dataset_problem_count(ds); p++)
            printf("bad %s: %s\n", tt_dataset_problem_at(ds, p)->item, tt_dataset_problem_at(ds, p)->reason);
        for (int p = 0; p < cJSON_GetArraySize(mask_problems); p++) {
            cJSON *o = cJSON_GetArrayItem(mask_problems, p);
            printf("bad %s: %s\n", cJSON_GetObjectItem(o, "item")->valuestring,
                   cJSON_GetObjectItem(o, "reason")->valuestring);
        }
    }
    if (!pixels) fprintf(stderr, "tiletrain data check: out of host memory\n");
    else if (problems == 0) rc = 0;
    else if (user_skip && n - mask_failures > 0) {
        fprintf(stderr, "tiletrain data check: %d problem%s; --skip-bad leaves %d bad item%s out\n", problems,
                problems == 1 ? "" : "s", problems, problems == 1 ? "" : "s");
        rc = 0;
    } else {
        fprintf(stderr, "tiletrain data check: %d problem%s (listed above); fix them or pass --skip-bad\n",
                problems, problems == 1 ? "" : "s");
    }
    cJSON_Delete(mask_problems);
    free(pixels);
    tt_dataset_destroy(ds);
    return rc;
}

/* ---- show and masks ---------------------------------------------------------- */

/* Opens the data set leaving bad items out, finds --image and reads its
 * mask planes (*planes malloc'd).  Returns -1 to go on, else an exit status. */
static int open_item(const char *sub, data_args *a, tt_dataset **ds, int *index, uint8_t **planes)
{
    if (!a->image) return tt_cli_usage_error(sub, "--image NAME is required");
    if (!a->out) return tt_cli_usage_error(sub, "--out is required");
    a->opts.skip_bad = 1; /* one bad item elsewhere should not hide this one */
    tt_status status = tt_dataset_open(&a->opts, ds);
    if (status) return tt_cli_fail(status);
    *index = tt_dataset_find(*ds, a->image);
    if (*index < 0) {
        for (int p = 0; p < tt_dataset_problem_count(*ds); p++)
            if (strncmp(tt_dataset_problem_at(*ds, p)->item, a->image, strlen(a->image)) == 0) {
                fprintf(stderr, "tiletrain data %s: %s is bad: %s\n", sub, a->image,
                        tt_dataset_problem_at(*ds, p)->reason);
                return 1;
            }
        fprintf(stderr, "tiletrain data %s: no image '%s' in %s (`tiletrain data check` lists them)\n", sub,
                a->image, a->opts.dir);
        return 1;
    }
    int w = 0, h = 0;
    tt_dataset_image_size(*ds, *index, &w, &h);
    int multi = tt_dataset_mask_kind(*ds) == TT_MASK_MULTI_LABEL;
    *planes = tt_malloc((size_t)w * (size_t)h * (size_t)(multi ? tt_dataset_classes(*ds) : 1));
    if (!*planes) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "no host memory for the mask of %s",
                                                  a->image));
    status = tt_dataset_mask(*ds, *index, *planes);
    if (status) return tt_cli_fail(status);
    return -1;
}

/* The image as 8-bit RGB (*rgb malloc'd), through data/image.h; it must
 * decode to the size its header gave the data set. */
static tt_status read_rgb(const char *path, uint64_t max_pixels, int width, int height, uint8_t **rgb)
{
    tt_image image = {0};
    *rgb = NULL;
    TT_TRY(tt_image_load(path, max_pixels, &image));
    if (image.width != width || image.height != height) {
        tt_status status = tt_error_new(TT_ERR_FORMAT, "%s: decodes to %d x %d, its header said %d x %d",
                                        path, image.width, image.height, width, height);
        tt_image_free(&image);
        return status;
    }
    *rgb = image.pixels;
    return NULL;
}

static int data_show(data_args *a)
{
    tt_dataset *ds = NULL;
    uint8_t *planes = NULL, *rgb = NULL;
    int index = -1, rc = open_item("show", a, &ds, &index, &planes);
    if (rc >= 0) goto cleanup;
    int w = 0, h = 0;
    tt_dataset_image_size(ds, index, &w, &h);
    tt_status status = read_rgb(tt_dataset_image_path(ds, index), a->opts.max_pixels, w, h, &rgb);
    if (status) {
        rc = tt_cli_fail(status);
        goto cleanup;
    }
    const int classes = tt_dataset_classes(ds), multi = tt_dataset_mask_kind(ds) == TT_MASK_MULTI_LABEL;
    const size_t plane = (size_t)w * (size_t)h;
    tt_overlay(rgb, plane, classes, multi ? planes : NULL, planes, rgb);
    if (!stbi_write_png(a->out, w, h, 3, rgb, w * 3)) {
        fprintf(stderr, "tiletrain data show: cannot write %s: %s\n", a->out, strerror(errno));
        rc = 1;
        goto cleanup;
    }
    printf("%s: %s (%d x %d) with masks overlaid\n", a->out, tt_dataset_item_name(ds, index), w, h);
    for (int c = multi ? 0 : 1; c < classes; c++)
        printf("  %-20s rgb(%d, %d, %d)\n", tt_dataset_class_name(ds, c), tt_overlay_colour(c)[0],
               tt_overlay_colour(c)[1], tt_overlay_colour(c)[2]);
    if (!multi) printf("  %-20s darkened\n", "255 = ignore");
    rc = 0;
cleanup:
    free(rgb);
    free(planes);
    tt_dataset_destroy(ds);
    return rc;
}

/* Writes OUT/STEM_SUFFIX.png from a 0/255 plane; 0 on failure (printed). */
static int write_mask(const char *out, const char *item, const char *suffix, const uint8_t *plane, int w, int h)
{
    char stem[1024], path[4096];
    snprintf(stem, sizeof stem, "%s", item);
    char *dot = strrchr(stem, '.');
    if (dot) *dot = '\0';
    snprintf(path, sizeof path, "%s/%s_%s.png", out, stem, suffix);
    for (char *p = path + strlen(out) + 1; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
    if (!stbi_write_png(path, w, h, 1, plane, w)) {
        fprintf(stderr, "tiletrain data masks: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    printf("%s\n", path);
    return 1;
}

static int data_masks(data_args *a)
{
    tt_dataset *ds = NULL;
    uint8_t *planes = NULL, *out = NULL;
    int index = -1, rc = open_item("masks", a, &ds, &index, &planes);
    if (rc >= 0) goto cleanup;
    if (mkdir(a->out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "tiletrain data masks: cannot create %s: %s\n", a->out, strerror(errno));
        rc = 1;
        goto cleanup;
    }
    int w = 0, h = 0;
    tt_dataset_image_size(ds, index, &w, &h);
    const size_t plane = (size_t)w * (size_t)h;
    const int multi = tt_dataset_mask_kind(ds) == TT_MASK_MULTI_LABEL;
    rc = 1;
    if (!(out = tt_malloc(plane))) {
        rc = tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "data masks: out of host memory"));
        goto cleanup;
    }
    const char *item = tt_dataset_item_name(ds, index);
    for (int c = 0; c < tt_dataset_classes(ds); c++) {
        for (size_t k = 0; k < plane; k++)
            out[k] = (multi ? planes[(size_t)c * plane + k] != 0 : planes[k] == c) ? 255 : 0;
        if (!write_mask(a->out, item, tt_dataset_class_name(ds, c), out, w, h)) goto cleanup;
    }
    if (!multi) {
        int any = 0;
        for (size_t k = 0; k < plane; k++) any |= (out[k] = planes[k] == 255 ? 255 : 0) != 0;
        if (any && !write_mask(a->out, item, "ignore", out, w, h)) goto cleanup;
    }
    rc = 0;
cleanup:
    free(out);
    free(planes);
    tt_dataset_destroy(ds);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------ */

typedef struct data_subcommand {
    const char *name;
    int (*run)(data_args *a);
} data_subcommand;

static const data_subcommand subcommands[] = {
    {"check", data_check},
    {"show", data_show},
    {"masks", data_masks},
    /* "synth" takes options of its own: tt_cmd_data routes it first. */
};

int tt_cmd_data(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help();
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "synth") == 0) return tt_cmd_data_synth(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
        if (strcmp(argv[1], subcommands[i].name) != 0) continue;
        char sub[32];
        snprintf(sub, sizeof sub, "data %s", subcommands[i].name);
        data_args a = {0};
        int rc = parse_args(sub, argc - 1, argv + 1, &a);
        if (rc < 0) rc = subcommands[i].run(&a);
        return rc;
    }
    static const char *const subcommands[] = {"check", "show", "masks", "synth"};
    const char *near = tt_closest_word(argv[1], subcommands, 4);
    if (near)
        return tt_cli_usage_error("data", "unknown subcommand '%s'; did you mean '%s'?", argv[1], near);
    return tt_cli_usage_error("data", "unknown subcommand '%s' (check, show, masks, synth)", argv[1]);
}
