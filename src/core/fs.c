/* Folders on the host file system; see fs.h. */
#include "core/fs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"

/* Makes the folders of buf up to its end; buf is edited and restored. */
static tt_status make_each(char *buf)
{
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return tt_error_new(TT_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
        *p = saved;
        if (!saved) return NULL;
    }
}

static tt_status copy_path(const char *path, char *buf, size_t size)
{
    if (!path || !*path)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "no folder name given");
    if (snprintf(buf, size, "%s", path) >= (int)size)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "folder name too long (%zu bytes): %.80s...",
                            strlen(path), path);
    return NULL;
}

tt_status tt_make_dirs(const char *path)
{
    char buf[PATH_MAX];
    TT_TRY(copy_path(path, buf, sizeof buf));
    return make_each(buf);
}

tt_status tt_make_parent_dirs(const char *path)
{
    char buf[PATH_MAX];
    TT_TRY(copy_path(path, buf, sizeof buf));
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return NULL;
    *slash = '\0';
    return make_each(buf);
}
