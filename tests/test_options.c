/* Options from flags, INI and JSON files, with errors that name file and line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "harness.h"

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

int main(void)
{
    CU_TestInfo tests[] = {
        {"flags of every kind", test_flags},
        {"flag errors name the flag", test_flag_errors},
        {"INI: unknown key names file and line; flags override", test_ini_and_override},
        {"JSON: values, unknown key line, syntax error line", test_json},
        {"a table after another's, at an offset", test_table_concat},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("options", tests, TH_HOST);
}
