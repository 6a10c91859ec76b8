/* The table of TT_* environment variables (src/core/knobs.c): read once,
 * reloaded on request, typed accessors; and the table against the sources
 * (every TT_* variable read in src/ has a row, no file but core/knobs.c calls
 * getenv for one, each
 * row's reader reads it) and the docs (docs/knobs.md lists every row,
 * README.md's environment table every user setting, and nothing else). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/knobs.h"
#include "harness.h"

/* The one file that reads TT_* variables with getenv. */
static const char *const getenv_allowed[] = {"src/core/knobs.c"};

static char *read_text(const char *relative)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TT_SOURCE_DIR, relative);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        text = NULL;
    }
    if (text) text[size] = '\0';
    fclose(f);
    return text;
}

static int knob_index(const char *name, size_t len)
{
    for (int i = 0; i < TT_KNOB_COUNT; i++)
        if (strlen(tt_knob_table[i].name) == len && strncmp(tt_knob_table[i].name, name, len) == 0)
            return i;
    return -1;
}

static int is_exception(const char *relative)
{
    for (size_t i = 0; i < sizeof getenv_allowed / sizeof getenv_allowed[0]; i++)
        if (strcmp(relative, getenv_allowed[i]) == 0) return 1;
    return 0;
}

/* Every getenv("TT_...") in the .c and .h files under `relative`. */
static void scan_sources(const char *relative)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TT_SOURCE_DIR, relative);
    DIR *dir = opendir(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char child[1024], full[1100];
        snprintf(child, sizeof child, "%s/%s", relative, e->d_name);
        snprintf(full, sizeof full, "%s/%s", TT_SOURCE_DIR, child);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            scan_sources(child);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (n < 2 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
        char *text = read_text(child);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        for (const char *p = text; (p = strstr(p, "getenv(\"TT_")); p++) {
            const char *name = p + 8;
            size_t len = strcspn(name, "\"");
            if (knob_index(name, len) < 0) {
                printf("\n    %s reads %.*s, which has no row in src/core/knobs.c", child,
                       (int)len, name);
                CU_FAIL("a TT_* variable is read without a row in the table");
            }
            if (!is_exception(child)) {
                printf("\n    %s reads %.*s itself: use tt_knob_*() (core/knobs.h)", child,
                       (int)len, name);
                CU_FAIL("library code reads a TT_* variable with getenv");
            }
        }
        free(text);
    }
    closedir(dir);
}

static void test_sources(void)
{
    scan_sources("src");
}

/* Each row's readers name it: by getenv (not yet converted) or by id. */
static void test_readers(void)
{
    for (int i = 0; i < TT_KNOB_COUNT; i++) {
        const tt_knob *k = &tt_knob_table[i];
        CU_ASSERT(strncmp(k->name, "TT_", 3) == 0);
        CU_ASSERT(k->values && *k->values && k->what && *k->what);
        char by_getenv[64], by_id[64], readers[512];
        snprintf(by_getenv, sizeof by_getenv, "getenv(\"%s\")", k->name);
        snprintf(by_id, sizeof by_id, "TT_KNOB_%s", k->name + 3);
        snprintf(readers, sizeof readers, "%s", k->reader);
        for (char *save = NULL, *file = strtok_r(readers, ", ", &save); file;
             file = strtok_r(NULL, ", ", &save)) {
            char *text = read_text(file);
            int reads = text && (strstr(text, by_getenv) || strstr(text, by_id));
            if (!reads) printf("\n    %s: the table says %s reads it; it does not", k->name, file);
            CU_ASSERT(reads);
            free(text);
        }
    }
}

/* The `TT_...` names in backticks in `text` must be rows; marks in `seen`
 * those of `kind` (of any kind when kind < 0). */
static void check_listed(const char *doc, const char *text, int kind, int *seen)
{
    for (const char *p = text; (p = strstr(p, "`TT_")); p++) {
        const char *name = p + 1;
        size_t len = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (name[len] != '`' && name[len] != '=') continue; /* `TT_*`: not a name */
        int i = knob_index(name, len);
        if (i < 0) {
            printf("\n    %s lists %.*s, which the table does not have", doc, (int)len, name);
            CU_FAIL("a documented TT_* variable has no row");
            continue;
        }
        if (kind < 0 || (int)tt_knob_table[i].kind == kind) seen[i] = 1;
    }
}

static void test_docs(void)
{
    int seen[TT_KNOB_COUNT] = {0};
    char *knobs_md = read_text("docs/knobs.md"), *readme = read_text("README.md");
    CU_ASSERT_PTR_NOT_NULL_FATAL(knobs_md);
    CU_ASSERT_PTR_NOT_NULL_FATAL(readme);
    check_listed("docs/knobs.md", knobs_md, -1, seen);
    for (int i = 0; i < TT_KNOB_COUNT; i++) {
        if (!seen[i]) printf("\n    docs/knobs.md does not list %s", tt_knob_table[i].name);
        CU_ASSERT(seen[i]);
        seen[i] = 0;
    }
    /* README.md: the environment table, from its header to the next blank line */
    char *table = strstr(readme, "| environment");
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    char *end = strstr(table, "\n\n");
    if (end) *end = '\0';
    check_listed("README.md", table, TT_KNOB_USER, seen);
    for (int i = 0; i < TT_KNOB_COUNT; i++) {
        int user = tt_knob_table[i].kind == TT_KNOB_USER;
        if (user && !seen[i]) printf("\n    README.md does not list %s", tt_knob_table[i].name);
        CU_ASSERT(seen[i] == user);
    }
    free(knobs_md);
    free(readme);
}

static void test_read_once(void)
{
    th_setenv("TT_PLAN_DUMP", "12,34");
    CU_ASSERT_STRING_EQUAL(tt_knob_str(TT_KNOB_PLAN_DUMP), "12,34");
    setenv("TT_PLAN_DUMP", "56,78", 1); /* not seen until a reload */
    CU_ASSERT_STRING_EQUAL(tt_knob_str(TT_KNOB_PLAN_DUMP), "12,34");
    tt_knobs_reload();
    CU_ASSERT_STRING_EQUAL(tt_knob_str(TT_KNOB_PLAN_DUMP), "56,78");
    th_setenv("TT_PLAN_DUMP", NULL);
    CU_ASSERT_PTR_NULL(tt_knob_str(TT_KNOB_PLAN_DUMP));
    CU_ASSERT_FALSE(tt_knob_set(TT_KNOB_PLAN_DUMP));
}

static void test_accessors(void)
{
    th_setenv("TT_VULKAN_STAGING", "1");
    CU_ASSERT_EQUAL(tt_knob_flag(TT_KNOB_VULKAN_STAGING, 7), 1);
    th_setenv("TT_VULKAN_STAGING", "0");
    CU_ASSERT_EQUAL(tt_knob_flag(TT_KNOB_VULKAN_STAGING, 7), 0);
    th_setenv("TT_VULKAN_STAGING", "yes");
    CU_ASSERT_EQUAL(tt_knob_flag(TT_KNOB_VULKAN_STAGING, 7), 7);
    th_setenv("TT_VULKAN_STAGING", NULL);
    CU_ASSERT_EQUAL(tt_knob_flag(TT_KNOB_VULKAN_STAGING, 7), 7);
    th_setenv("TT_CONV_PERTURB", "");
    CU_ASSERT_STRING_EQUAL(tt_knob_str(TT_KNOB_CONV_PERTURB), "");
    CU_ASSERT_FALSE(tt_knob_set(TT_KNOB_CONV_PERTURB));
    th_setenv("TT_CONV_PERTURB", NULL);
    CU_ASSERT_STRING_EQUAL(tt_knob_kind_name(TT_KNOB_TEST), "test knob");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"read once, reloaded on request", test_read_once},
        {"flag and choice accessors", test_accessors},
        {"every TT_* read in src/ has a row; ops read none themselves", test_sources},
        {"each row's readers read it", test_readers},
        {"docs/knobs.md and README.md list the rows", test_docs},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("knobs", tests, TH_HOST);
}
