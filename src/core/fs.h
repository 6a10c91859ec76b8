/*
 * Files and folders on the host file system: making folders, writing a file
 * atomically, and the cache folders.
 */
#ifndef TT_CORE_FS_H
#define TT_CORE_FS_H

#include <stddef.h>
#include <stdio.h>

#include "tiletrain.h"

/* mkdir -p: makes every missing folder of `path` (mode 0777 less the
 * umask); folders that exist are fine.  TT_ERR_INVALID_ARGUMENT for a path
 * too long to handle, TT_ERR_IO naming the folder that cannot be made. */
tt_status tt_make_dirs(const char *path);

/* The same for the folder that holds the file `path` (nothing for a bare
 * file name). */
tt_status tt_make_parent_dirs(const char *path);

/* Writes the file `path` so that readers see the old file or the whole new
 * one, never a part, even across a crash or a power loss: write_fn writes
 * the content to `f` (a temporary file "<path>.tmp.<pid>.<n>" in the same
 * folder; a stream error there need not be returned: it is noticed), then
 * the file is flushed, fsynced, renamed over `path`, and the folder is
 * fsynced.  The folder must exist.  An error from write_fn is
 * returned as it is; the others are TT_ERR_IO naming the file and saying
 * whether the old file is unchanged.  The temporary file never stays. */
tt_status tt_file_write_atomic(const char *path, tt_status (*write_fn)(FILE *f, void *ctx),
                               void *ctx);
/* The same for `size` bytes in memory. */
tt_status tt_file_save_atomic(const char *path, const void *data, size_t size);

/* Appends `line` and a newline to the file open at `fd` (named `path` in
 * errors) in whole or not at all: a write that fails part way (a full
 * disk) is cut back off, so the file still ends with its last whole line.
 * TT_ERR_IO naming the file and the reason. */
tt_status tt_file_append_line(int fd, const char *path, const char *line);

/* Removes the temporary files of tt_file_write_atomic in `dir` (not below
 * it) whose process is gone: what a process killed mid-write (SIGKILL,
 * mpirun stopping a job) leaves.  Returns how many it removed. */
int tt_remove_stale_temporaries(const char *dir);

/* NULL, or (TT_FAULT=read:N, core/fault.h) the error a failing disk gives
 * at the Nth file read: TT_ERR_IO naming `what` and `path`. */
tt_status tt_read_fault(const char *what, const char *path);

/* The cache folder of one kind of cached file ("programs", "clblast",
 * "find-db", "tiles"; other kinds follow the general rule), into buf.  The
 * general rule: $TT_CACHE_DIR/<kind>, else $XDG_CACHE_HOME/tiletrain/<kind>,
 * else $HOME/.cache/tiletrain/<kind>.  Kinds that keep older rules:
 * "programs" lie directly in $TT_CACHE_DIR (set but empty: no cache),
 * "clblast" files directly in the cache root (no <kind> folder), and
 * "tiles" are overridden by $TT_DATA_CACHE_DIR instead of $TT_CACHE_DIR.
 * Makes no folder.  TT_ERR_IO when none of the variables gives a folder (or
 * the cache is turned off), TT_ERR_INVALID_ARGUMENT when the name does not
 * fit `size`; buf is "" then. */
tt_status tt_cache_path(const char *kind, char *buf, size_t size);

#endif
