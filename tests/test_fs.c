/*
 * core/fs.c: tt_make_dirs makes every missing folder and accepts existing
 * ones; a file in the way is TT_ERR_IO naming that folder; an overlong path
 * is refused; tt_make_parent_dirs makes a file's folder and no more.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fs.h"
#include "harness.h"
#include "ref_data.h"

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_make_dirs(void)
{
    char *root = rd_tempdir("fs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    char path[600];
    snprintf(path, sizeof path, "%s/a/b/c", root);
    TH_OK(tt_make_dirs(path));
    CU_ASSERT(is_dir(path));
    TH_OK(tt_make_dirs(path)); /* again: nothing to do */

    snprintf(path, sizeof path, "%s/x/y/file.json", root);
    TH_OK(tt_make_parent_dirs(path));
    char folder[600];
    snprintf(folder, sizeof folder, "%s/x/y", root);
    CU_ASSERT(is_dir(folder));
    CU_ASSERT(!is_dir(path)); /* the file's own name is not made */
    TH_OK(tt_make_parent_dirs("file.json")); /* no folder part: nothing */

    /* a file where a folder should be */
    snprintf(path, sizeof path, "%s/plain", root);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/plain/sub", root);
    tt_status s = tt_make_dirs(path);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "/plain") != NULL);
    tt_status_free(s);

    char *long_path = malloc(PATH_MAX + 10);
    CU_ASSERT_PTR_NOT_NULL_FATAL(long_path);
    memset(long_path, 'a', PATH_MAX + 9);
    long_path[PATH_MAX + 9] = '\0';
    s = tt_make_dirs(long_path);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    free(long_path);
    rd_remove(root);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"make folders (mkdir -p) and parents of a file", test_make_dirs},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("fs", tests, TH_HOST);
}
