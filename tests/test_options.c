/* Options from flags, INI and JSON files, with errors that name file and line. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "harness.h"
#include "train/train_options.h"

typedef struct {
    int steps;
    uint64_t seed;
    double lr;
    char out[TT_OPT_STRING_MAX];
    int no_shuffle;
    int tile[2];
    char norm[TT_OPT_STRING_MAX];
} opts_t;

static const tt_opt table[] = {
    {"steps", TT_OPT_INT, offsetof(opts_t, steps), "S", "optimizer steps", 1, 1e9, NULL},
    {"seed", TT_OPT_U64, offsetof(opts_t, seed), "K", "seed", 1, 0, NULL},
    {"lr", TT_OPT_DOUBLE, offsetof(opts_t, lr), "X", "learning rate", 0, 10, NULL},
    {"out", TT_OPT_STRING, offsetof(opts_t, out), "DIR", "output folder", 1, 0, NULL},
    {"no-shuffle", TT_OPT_FLAG, offsetof(opts_t, no_shuffle), NULL, "sorted order", 1, 0, NULL},
    {"tile", TT_OPT_SIZE2, offsetof(opts_t, tile), "HxW", "crop size", 1, 0, NULL},
    {"norm", TT_OPT_CHOICE, offsetof(opts_t, norm), "KIND", "norm", 1, 0, "group|batch|none"},
};
#define N (sizeof table / sizeof table[0])

static char *write_temp(const char *suffix, const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tt-opt-%s-XXXXXX", suffix + 1); /* format by content */
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_flags(void)
{
    opts_t o = {0};
    char *argv[] = {"train", "--steps", "12", "--lr=0.5", "--no-shuffle", "--tile", "128x96",
                    "--norm", "batch", "--seed", "7", "--out", "runs/a"};
    int help;
    TH_OK(tt_opt_parse_args(table, N, &o, 13, argv, 1, &help));
    CU_ASSERT_EQUAL(help, 0);
    CU_ASSERT_EQUAL(o.steps, 12);
    CU_ASSERT_EQUAL(o.lr, 0.5);
    CU_ASSERT_EQUAL(o.no_shuffle, 1);
    CU_ASSERT(o.tile[0] == 128 && o.tile[1] == 96);
    CU_ASSERT_STRING_EQUAL(o.norm, "batch");
    CU_ASSERT_EQUAL(o.seed, 7);
    CU_ASSERT_STRING_EQUAL(o.out, "runs/a");
}

static void expect_error(char **argv, int argc, const char *needle)
{
    opts_t o = {0};
    int help;
    tt_status s = tt_opt_parse_args(table, N, &o, argc, argv, 1, &help);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) {
        if (!strstr(tt_status_message(s), needle))
            printf("\n  message '%s' lacks '%s'\n", tt_status_message(s), needle);
        CU_ASSERT(strstr(tt_status_message(s), needle) != NULL);
    }
    tt_status_free(s);
}

static void test_flag_errors(void)
{
    expect_error((char *[]){"t", "--stepz", "3"}, 3, "unknown option '--stepz'; did you mean '--steps'?");
    expect_error((char *[]){"t", "--no_shufle"}, 2, "did you mean '--no-shuffle'?");
    expect_error((char *[]){"t", "--zzzzzzzz", "1"}, 3, "unknown option '--zzzzzzzz'");
    expect_error((char *[]){"t", "--steps"}, 2, "--steps needs a value");
    expect_error((char *[]){"t", "--steps", "x"}, 3, "'x' for steps is not a whole number");
    expect_error((char *[]){"t", "--steps", "0"}, 3, "out of range");
    expect_error((char *[]){"t", "--lr", "nan"}, 3, "not a number");
    expect_error((char *[]){"t", "--tile", "12y"}, 3, "write HxW");
    expect_error((char *[]){"t", "--norm", "layer"}, 3, "not one of group|batch|none");
    expect_error((char *[]){"t", "stray"}, 2, "unexpected argument 'stray'");
    expect_error((char *[]){"t", "--config", "/nonexistent/x.ini"}, 3, "/nonexistent/x.ini");
}

static void test_ini_and_override(void)
{
    char *path = write_temp(".ini", "; comment\n[train]\nsteps = 5\nmicro_batch_typo = 2\n");
    char ini_bad[64];
    snprintf(ini_bad, sizeof ini_bad, "%s", path);
    opts_t o = {0};
    tt_status s = tt_opt_load_file(table, N, &o, ini_bad);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char want[256];
    snprintf(want, sizeof want, "%s:4: unknown option 'micro_batch_typo'", ini_bad);
    CU_ASSERT(strstr(tt_status_message(s), want) != NULL);
    tt_status_free(s);
    unlink(ini_bad);

    path = write_temp(".ini", "steps = 5\nlr = 0.25\nno_shuffle = true\ntile = 64\n");
    char ini_ok[64];
    snprintf(ini_ok, sizeof ini_ok, "%s", path);
    char *argv[] = {"t", "--steps", "9", "--config", ini_ok};
    int help;
    memset(&o, 0, sizeof o);
    TH_OK(tt_opt_parse_args(table, N, &o, 5, argv, 1, &help));
    CU_ASSERT_EQUAL(o.steps, 9); /* the flag wins, wherever --config stands */
    CU_ASSERT_EQUAL(o.lr, 0.25);
    CU_ASSERT_EQUAL(o.no_shuffle, 1);
    CU_ASSERT(o.tile[0] == 64 && o.tile[1] == 64);
    unlink(ini_ok);
}

static void test_json(void)
{
    char *path = write_temp(".json", "{\n  \"steps\": 3,\n  \"lr\": 0.001,\n  \"norm\": \"none\"\n}\n");
    opts_t o = {0};
    TH_OK(tt_opt_load_file(table, N, &o, path));
    CU_ASSERT_EQUAL(o.steps, 3);
    CU_ASSERT_DOUBLE_EQUAL(o.lr, 0.001, 1e-15);
    CU_ASSERT_STRING_EQUAL(o.norm, "none");
    unlink(path);

    path = write_temp(".json", "{\n  \"steps\": 3,\n  \"bogus\": 1\n}\n");
    tt_status s = tt_opt_load_file(table, N, &o, path);
    char want[256];
    snprintf(want, sizeof want, "%s:3: unknown option 'bogus'", path);
    CU_ASSERT(s && strstr(tt_status_message(s), want) != NULL);
    tt_status_free(s);
    unlink(path);

    path = write_temp(".json", "{\n  \"steps\": 3,\n  oops\n}\n");
    s = tt_opt_load_file(table, N, &o, path);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(s && strstr(tt_status_message(s), ":3:") != NULL);
    tt_status_free(s);
    unlink(path);

    /* a config that cannot be read (EIO; TT_FAULT=read:1) sets nothing */
    path = write_temp(".json", "{\n  \"steps\": 5\n}\n");
    memset(&o, 0, sizeof o);
    th_setenv("TT_FAULT", "read:1");
    s = tt_opt_load_file(table, N, &o, path);
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), path) != NULL);
    CU_ASSERT_EQUAL(o.steps, 0);
    tt_status_free(s);
    unlink(path);
}

/* A command's own options after another's, embedded at an offset. */
typedef struct {
    int verbose;
    opts_t base;
    int json;
} outer_t;

static void test_table_concat(void)
{
    static const tt_opt own[] = {
        {"json", TT_OPT_FLAG, offsetof(outer_t, json), NULL, "json", 1, 0, NULL},
    };
    size_t base_count = sizeof table / sizeof table[0], total = 0;
    tt_opt *both = tt_opt_table_concat(table, base_count, offsetof(outer_t, base), own, 1, &total);
    CU_ASSERT_PTR_NOT_NULL_FATAL(both);
    CU_ASSERT_EQUAL(total, base_count + 1);
    outer_t o = {0};
    int help = 0;
    TH_OK(tt_opt_parse_args(both, total, &o, 5, (char *[]){"t", "--steps", "7", "--json", "--no-shuffle"}, 1,
                            &help));
    CU_ASSERT_EQUAL(o.base.steps, 7);
    CU_ASSERT_EQUAL(o.base.no_shuffle, 1);
    CU_ASSERT_EQUAL(o.json, 1);
    CU_ASSERT_EQUAL(o.verbose, 0);
    CU_ASSERT_STRING_EQUAL(both[total - 1].name, "json");
    free(both);
}

typedef struct {
    int norm;         /* 0 none, 1 group, 2 batch */
    float mean[3];
    double lr;
    int micro;
    uint64_t limit;
} typed_t;

static const tt_opt typed_table[] = {
    {"norm", TT_OPT_ENUM, offsetof(typed_t, norm), "KIND", "norm", 1, 0, "none|group|batch"},
    {"mean", TT_OPT_TRIPLE, offsetof(typed_t, mean), "R,G,B", "mean", 1, 0, NULL},
    {"std", TT_OPT_TRIPLE, offsetof(typed_t, mean), "R,G,B", "positive", 1e-30, 1e30, NULL},
    {"lr", TT_OPT_DOUBLE, offsetof(typed_t, lr), "X", "learning rate", 0, 10, NULL},
    {"micro", TT_OPT_INT_AUTO, offsetof(typed_t, micro), "B|auto", "images", 1, 99, NULL},
    {"limit", TT_OPT_BYTES, offsetof(typed_t, limit), "SIZE", "memory (default: all)", 1, 0, NULL},
};
#define TYPED_N (sizeof typed_table / sizeof typed_table[0])

/* Enums and triples parse into their types, given[] marks what was set,
 * and each value formats back to text that parses to the same value. */
static void test_typed(void)
{
    typed_t o = {.mean = {NAN, 0, 0}, .lr = 1e-3, .micro = 4};
    unsigned char given[TYPED_N];
    int help;
    char *argv[] = {"t", "--norm", "batch", "--mean", "0.5,0.25,-1", "--micro", "auto"};
    TH_OK(tt_opt_parse_args_given(typed_table, TYPED_N, &o, 7, argv, 1, &help, given));
    CU_ASSERT_EQUAL(o.norm, 2);
    CU_ASSERT(o.mean[0] == 0.5f && o.mean[1] == 0.25f && o.mean[2] == -1.0f);
    CU_ASSERT_EQUAL(o.micro, 0);
    CU_ASSERT(given[0] && given[1] && !given[2] && !given[3] && given[4] && !given[5]);
    char buf[64];
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[0], &o, buf, sizeof buf), "batch");
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[1], &o, buf, sizeof buf), "0.5,0.25,-1");
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[3], &o, buf, sizeof buf), "0.001");
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[4], &o, buf, sizeof buf), "auto");
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[5], &o, buf, sizeof buf), "");
    o.limit = 3ull << 30;
    CU_ASSERT_STRING_EQUAL(tt_opt_format(&typed_table[5], &o, buf, sizeof buf), "3GiB");
    o.lr = 0.1 + 0.2; /* shortest text that reads back the same double */
    tt_opt_format(&typed_table[3], &o, buf, sizeof buf);
    CU_ASSERT_EQUAL(strtod(buf, NULL), 0.1 + 0.2);
    CU_ASSERT_STRING_EQUAL(tt_opt_choice_name("none|group|batch", 1, buf, sizeof buf), "group");
    CU_ASSERT_STRING_EQUAL(tt_opt_choice_name("none|group|batch", 3, buf, sizeof buf), "");
    tt_status s = tt_opt_set(typed_table, TYPED_N, &o, "std", "1,0,1", "--std");
    CU_ASSERT(s && strstr(tt_status_message(s), "three positive numbers") != NULL);
    tt_status_free(s);
    s = tt_opt_set(typed_table, TYPED_N, &o, "mean", "1,2", "--mean");
    CU_ASSERT(s && strstr(tt_status_message(s), "not three numbers") != NULL);
    tt_status_free(s);
    s = tt_opt_set(typed_table, TYPED_N, &o, "norm", "layer", "--norm");
    CU_ASSERT(s && strstr(tt_status_message(s), "not one of none|group|batch") != NULL);
    tt_status_free(s);
    /* a --config file marks what it sets too */
    char *ini = write_temp(".ini", "lr = 0.5\n");
    TH_OK(tt_opt_parse_args_given(typed_table, TYPED_N, &o, 3, (char *[]){"t", "--config", ini},
                                  1, &help, given));
    CU_ASSERT(given[3] && !given[0]);
    unlink(ini);
}

/* --help prints each default from the defaults struct; train's option
 * table types none by hand ("(default 4)" beside a 4 in the struct). */
static void test_help_defaults(void)
{
    typed_t d = {.mean = {NAN, 0, 0}, .lr = 1e-3, .micro = 4, .norm = 1};
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    tt_opt_print_help_full(typed_table, TYPED_N, &d, f, NULL);
    fclose(f);
    CU_ASSERT(strstr(text, "norm (default group)") != NULL);
    CU_ASSERT(strstr(text, "learning rate (default 0.001)") != NULL);
    CU_ASSERT(strstr(text, "images (default 4)") != NULL);
    CU_ASSERT(strstr(text, "mean (default") == NULL);             /* not given: none */
    CU_ASSERT(strstr(text, "memory (default: all)\n") != NULL);   /* said in words */
    free(text);
    for (size_t i = 0; i < tt_train_option_count; i++) {
        const char *h = strstr(tt_train_option_table[i].help, "(default ");
        int typed = h && (h[9] >= '0' && h[9] <= '9');
        if (typed) printf("\n  --%s types its default: %s", tt_train_option_table[i].name, h);
        CU_ASSERT(!typed);
    }
    /* and the enums' names are the library's */
    tt_train_options o;
    tt_train_options_default(&o);
    char buf[64];
    for (int k = 0; k < TT_NORM_KIND_COUNT; k++)
        CU_ASSERT_STRING_EQUAL(tt_opt_choice_name(TT_NORM_CHOICES, k, buf, sizeof buf),
                               tt_norm_kind_name((tt_norm_kind)k));
    for (int k = 0; k < TT_PRECISION_COUNT; k++)
        CU_ASSERT_STRING_EQUAL(tt_opt_choice_name(TT_PRECISION_CHOICES, k, buf, sizeof buf),
                               tt_precision_name((tt_precision)k));
    for (int k = 0; k < TT_CONV_ALGO_COUNT; k++)
        CU_ASSERT_STRING_EQUAL(tt_opt_choice_name(TT_CONV_ALGO_CHOICES, k, buf, sizeof buf),
                               tt_conv_algo_name((tt_conv_algo)k));
}

/* A replaced option says what to write instead, on the command line and
 * in a config file; tables without its successor keep the plain error. */
static void test_retired_option(void)
{
    tt_train_options o;
    tt_train_options_default(&o);
    int help = 0;
    char *argv[] = {"train", "--dice-weight", "0.5"};
    tt_status s = tt_opt_parse_args(tt_train_option_table, tt_train_option_count, &o, 3, argv, 1,
                                    &help);
    CU_ASSERT(s && strstr(tt_status_message(s), "'--dice-weight' was replaced: write --loss "
                                                "bce+X*dice") != NULL);
    tt_status_free(s);
    s = tt_opt_set(tt_train_option_table, tt_train_option_count, &o, "dice-weight", "1",
                   "run.ini:3");
    CU_ASSERT(s && strstr(tt_status_message(s), "run.ini:3: option 'dice-weight' was replaced") !=
                       NULL);
    tt_status_free(s);
    expect_error((char *[]){"t", "--dice-weight", "1"}, 3, "unknown option '--dice-weight'");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"flags of every kind", test_flags},
        {"flag errors name the flag", test_flag_errors},
        {"a replaced option says what to write instead", test_retired_option},
        {"INI: unknown key names file and line; flags override", test_ini_and_override},
        {"JSON: values, unknown key line, syntax error line", test_json},
        {"a table after another's, at an offset", test_table_concat},
        {"enums, triples, given, formatted back", test_typed},
        {"--help prints the defaults of the struct", test_help_defaults},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("options", tests, TH_HOST);
}
