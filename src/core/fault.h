/*
 * Faults injected for tests (TT_FAULT=KIND:N, the knobs table): the Nth
 * call of one kind in the process fails as the real failure would, so that
 * a test can walk N over every such call of a run (tests/fault/check.sh):
 *   write   a file written through tt_file_write_atomic, a line appended
 *           by tt_file_append_line (train.jsonl) (core/fs.c), or a row of a
 *           raster's tiles (data/raster_write.c, raster_cog.c): ENOSPC
 *   alloc   a device buffer (tt_buffer_alloc): out of device memory
 *   launch  a kernel launch (tt_launch_kernel): the device lost
 *   submit  a Vulkan queue submission (vkQueueSubmit): the device lost
 *   host    a host allocation of the library or the command line (core/alloc.h): out of memory
 *   read    a file read (images, masks, tile cache, checkpoints, lists and
 *           configs; the caches of programs, pipelines, tuning, find-db and
 *           precision-db, which are then rebuilt; train.jsonl for the
 *           report): EIO
 *   coll    an MPI collective (dist/dist_mpi.c): the network dropped
 * TT_FAULT=count fails nothing; tt_fault_print_counts then says how many
 * calls of each kind the process made, the range a walk goes over.
 */
#ifndef TT_CORE_FAULT_H
#define TT_CORE_FAULT_H

#include <stdio.h>

typedef enum tt_fault_kind {
    TT_FAULT_WRITE,
    TT_FAULT_ALLOC,
    TT_FAULT_LAUNCH,
    TT_FAULT_SUBMIT,
    TT_FAULT_HOST,
    TT_FAULT_READ,
    TT_FAULT_COLL,
    TT_FAULT_KINDS
} tt_fault_kind;

/* Counts a call of `kind`; 1 when it is the one TT_FAULT names. */
int tt_fault_hit(tt_fault_kind kind);

/* With TT_FAULT=count: one line to `out`, "TT_FAULT counts: write 18, ...",
 * the calls of each kind so far; nothing otherwise. */
void tt_fault_print_counts(FILE *out);

#endif
