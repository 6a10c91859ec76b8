/*
 * core/fs.c: tt_make_dirs makes every missing folder and accepts existing
 * ones; a file in the way is TT_ERR_IO naming that folder; an overlong path
 * is refused; tt_make_parent_dirs makes a file's folder and no more.
 * tt_remove_stale_temporaries removes the atomic writer's temporary files
 * of a process that is gone, and no other file.  tt_file_append_line
 * appends whole lines: one that fails part way (a file size limit stands
 * in for a full disk) is cut back off, and so is one TT_FAULT fails.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* The file's bytes as a string (at most 255). */
static const char *contents(const char *path)
{
    static char text[256];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    return text;
}

static void test_append_line(void)
{
    char *root = rd_tempdir("fs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    char path[600];
    snprintf(path, sizeof path, "%s/log.jsonl", root);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0666);
    CU_ASSERT_FATAL(fd >= 0);
    TH_OK(tt_file_append_line(fd, path, "{\"step\": 1}"));
    CU_ASSERT_STRING_EQUAL(contents(path), "{\"step\": 1}\n");

    /* a write that stops part way: 5 bytes past the file fit, the line has 40 */
    struct rlimit was;
    CU_ASSERT_FATAL(getrlimit(RLIMIT_FSIZE, &was) == 0);
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {13 + 5, was.rlim_max};
    CU_ASSERT_FATAL(setrlimit(RLIMIT_FSIZE, &small) == 0);
    tt_status s = tt_file_append_line(fd, path, "{\"step\": 2, \"loss\": 0.123456789012345}");
    setrlimit(RLIMIT_FSIZE, &was);
    signal(SIGXFSZ, old);
    CU_ASSERT_PTR_NOT_NULL(s);
    if (s) {
        printf("\n  %s", tt_status_message(s));
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), path));
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), "ends with its last whole line"));
    }
    tt_status_free(s);
    CU_ASSERT_STRING_EQUAL(contents(path), "{\"step\": 1}\n");

    /* the second append while TT_FAULT=write:2 is set fails before writing */
    th_setenv("TT_FAULT", "write:2");
    TH_OK(tt_file_append_line(fd, path, "{\"step\": 2}"));
    s = tt_file_append_line(fd, path, "{\"step\": 3}");
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_PTR_NOT_NULL(s ? strstr(tt_status_message(s), "No space left on device") : NULL);
    tt_status_free(s);
    TH_OK(tt_file_append_line(fd, path, "{\"step\": 3}"));
    CU_ASSERT_STRING_EQUAL(contents(path), "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n");
    close(fd);
    rd_remove(root);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"make folders (mkdir -p) and parents of a file", test_make_dirs},
        {"temporary files of a gone process are removed, no others", test_stale_temporaries},
        {"a line appended whole or not at all", test_append_line},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("fs", tests, TH_HOST);
}
