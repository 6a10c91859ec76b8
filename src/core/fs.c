/* Files and folders on the host file system; see fs.h. */
#include "core/fs.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/fault.h"
#include "core/knobs.h"
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

/* ---- atomic writes -------------------------------------------------------- */

static atomic_uint temp_counter; /* temporary names unique across threads */

/* fsync of the folder holding path, so that the rename itself is durable. */
static int sync_parent(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    if (rc != 0 && errno == EINVAL) rc = 0; /* folders that cannot be synced */
    close(fd);
    return rc;
}

tt_status tt_file_write_atomic(const char *path, tt_status (*write_fn)(FILE *f, void *ctx),
                               void *ctx)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
                     atomic_fetch_add(&temp_counter, 1));
    if (n < 0 || (size_t)n >= sizeof tmp)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "'%s': file name too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int saved = errno;
        if (fd >= 0) close(fd), unlink(tmp);
        return tt_error_new(TT_ERR_IO, "cannot create '%s': %s; check that the folder exists "
                            "and is writable", tmp, strerror(saved));
    }
    tt_status status = write_fn(f, ctx);
    errno = 0;
    int ok = !status && !ferror(f) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (ok && tt_fault_hit(TT_FAULT_WRITE)) ok = 0, saved = ENOSPC;
    if (fclose(f) != 0 && ok) ok = 0, saved = errno;
    if (status) {
        unlink(tmp);
        return status;
    }
    if (!ok) {
        unlink(tmp);
        return tt_error_new(TT_ERR_IO, "writing '%s' failed: %s; the old file, if any, is "
                            "unchanged", tmp, strerror(saved));
    }
    if (rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        return tt_error_new(TT_ERR_IO, "renaming '%s' over '%s' failed: %s", tmp, path,
                            strerror(saved));
    }
    if (sync_parent(path) != 0)
        return tt_error_new(TT_ERR_IO, "'%s' written, but syncing its folder failed: %s; the "
                            "rename may not survive a power loss", path, strerror(errno));
    return NULL;
}

tt_status tt_file_append_line(int fd, const char *path, const char *line)
{
    size_t n = strlen(line);
    off_t before = lseek(fd, 0, SEEK_END);
    int saved = before < 0 ? errno : 0;
    if (!saved && tt_fault_hit(TT_FAULT_WRITE)) saved = ENOSPC;
    struct iovec parts[2] = {{(void *)line, n}, {(void *)"\n", 1}};
    size_t left = n + 1;
    while (!saved && left) {
        ssize_t wrote = writev(fd, parts, 2);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) {
            saved = wrote < 0 ? errno : EIO;
            break;
        }
        left -= (size_t)wrote;
        for (int i = 0; i < 2 && wrote > 0; i++) { /* what is left of each part */
            size_t used = (size_t)wrote < parts[i].iov_len ? (size_t)wrote : parts[i].iov_len;
            parts[i].iov_base = (char *)parts[i].iov_base + used;
            parts[i].iov_len -= used;
            wrote -= (ssize_t)used;
        }
    }
    if (!saved) return NULL;
    if (before >= 0 && ftruncate(fd, before) != 0)
        return tt_error_new(TT_ERR_IO, "appending to '%s' failed: %s, and cutting off the part "
                            "written failed too (%s): its last line may be cut short",
                            path, strerror(saved), strerror(errno));
    return tt_error_new(TT_ERR_IO, "appending to '%s' failed: %s; the file ends with its last "
                        "whole line (make room, then --resume the run)", path, strerror(saved));
}

typedef struct bytes {
    const void *data;
    size_t size;
} bytes;

static tt_status write_bytes(FILE *f, void *ctx)
{
    const bytes *b = ctx;
    if (b->size && fwrite(b->data, 1, b->size, f) != b->size)
        return tt_error_new(TT_ERR_IO, "writing %zu bytes failed: %s; the old file, if any, is "
                            "unchanged", b->size, strerror(errno));
    return NULL;
}

tt_status tt_file_save_atomic(const char *path, const void *data, size_t size)
{
    bytes b = {data, size};
    return tt_file_write_atomic(path, write_bytes, &b);
}

/* ---- cache folders ---------------------------------------------------------- */

/* The kinds whose folders predate the general rule (see fs.h). */
static const struct cache_kind {
    const char *kind;
    tt_knob_id override;   /* the variable that names the folder itself */
    int override_holds_kind; /* 1: <override>/<kind>; 0: <override> */
    int empty_turns_off;   /* the override set but empty: no cache */
    const char *under_root; /* below .../tiletrain */
} cache_kinds[] = {
    {"programs", TT_KNOB_CACHE_DIR, 0, 1, "/programs"},
    {"clblast", TT_KNOB_CACHE_DIR, 0, 0, ""},
    {"tiles", TT_KNOB_DATA_CACHE_DIR, 0, 0, "/tiles"},
};

tt_status tt_cache_path(const char *kind, char *buf, size_t size)
{
    char general[128];
    snprintf(general, sizeof general, "/%s", kind);
    struct cache_kind k = {kind, TT_KNOB_CACHE_DIR, 1, 0, general};
    for (size_t i = 0; i < sizeof cache_kinds / sizeof cache_kinds[0]; i++)
        if (strcmp(cache_kinds[i].kind, kind) == 0) k = cache_kinds[i];
    const char *over = tt_knob_str(k.override);
    const char *over_name = tt_knob_table[k.override].name;
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n = -1;
    buf[0] = '\0';
    if (over && !*over && k.empty_turns_off)
        return tt_error_new(TT_ERR_IO, "the %s cache is off (%s is set but empty)", kind,
                            over_name);
    if (over && *over) n = snprintf(buf, size, "%s%s", over, k.override_holds_kind ? general : "");
    else if (xdg && *xdg) n = snprintf(buf, size, "%s/tiletrain%s", xdg, k.under_root);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/tiletrain%s", home, k.under_root);
    else
        return tt_error_new(TT_ERR_IO, "no folder for the %s cache: set %s, XDG_CACHE_HOME or "
                            "HOME", kind, over_name);
    if (n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "the %s cache folder's name is too long",
                            kind);
    }
    return NULL;
}

tt_status tt_read_fault(const char *what, const char *path)
{
    if (!tt_fault_hit(TT_FAULT_READ)) return NULL;
    return tt_error_new(TT_ERR_IO, "reading %s '%s' failed: %s (TT_FAULT); check the disk, or "
                        "restore the file", what, path, strerror(EIO));
}

int tt_remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *tag = strstr(e->d_name, ".tmp.");
        long pid = 0;
        unsigned counter;
        char end;
        if (!tag || sscanf(tag, ".tmp.%ld.%u%c", &pid, &counter, &end) != 2 || pid <= 0 ||
            pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path &&
            unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
