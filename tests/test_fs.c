/*
 * core/fs.c: tt_make_dirs makes every missing folder and accepts existing
 * ones; a file in the way is TT_ERR_IO naming that folder; an overlong path
 * is refused; tt_make_parent_dirs makes a file's folder and no more.
 * tt_remove_stale_temporaries removes the atomic writer's temporary files
 * of a process that is gone, and no other file.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void touch(const char *root, const char *name, long pid)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", root, name);
    if (pid) snprintf(path + strlen(path), sizeof path - strlen(path), ".tmp.%ld.7", pid);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
}

static int exists(const char *root, const char *name, long pid)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.tmp.%ld.7", root, name, pid);
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_stale_temporaries(void)
{
    char *root = rd_tempdir("fs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    pid_t gone = fork(); /* a process that has ended: its pid is free */
    CU_ASSERT_FATAL(gone >= 0);
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    touch(root, "last.safetensors", (long)gone);
    touch(root, "plan.json", (long)getpid()); /* this process's: a write under way */
    touch(root, "notes.tmp.txt", 0);
    CU_ASSERT_EQUAL(tt_remove_stale_temporaries(root), 1);
    CU_ASSERT(!exists(root, "last.safetensors", (long)gone));
    CU_ASSERT(exists(root, "plan.json", (long)getpid()));
    char other[600];
    snprintf(other, sizeof other, "%s/notes.tmp.txt", root);
    struct stat st;
    CU_ASSERT(stat(other, &st) == 0);
    CU_ASSERT_EQUAL(tt_remove_stale_temporaries(root), 0);
    CU_ASSERT_EQUAL(tt_remove_stale_temporaries("/nonexistent/folder"), 0);
    rd_remove(root);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"make folders (mkdir -p) and parents of a file", test_make_dirs},
        {"temporary files of a gone process are removed, no others", test_stale_temporaries},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("fs", tests, TH_HOST);
}
