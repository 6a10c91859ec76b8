/*
 * Folders on the host file system.
 */
#ifndef TT_CORE_FS_H
#define TT_CORE_FS_H

#include "tiletrain.h"

/* mkdir -p: makes every missing folder of `path` (mode 0777 less the
 * umask); folders that exist are fine.  TT_ERR_INVALID_ARGUMENT for a path
 * too long to handle, TT_ERR_IO naming the folder that cannot be made. */
tt_status tt_make_dirs(const char *path);

/* The same for the folder that holds the file `path` (nothing for a bare
 * file name). */
tt_status tt_make_parent_dirs(const char *path);

#endif
