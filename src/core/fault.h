/*
 * Faults injected for tests (TT_FAULT=KIND:N, the knobs table): the Nth
 * call of one kind in the process fails as the real failure would, so that
 * a test can walk N over every such call of a run (tests/fault/check.sh):
 *   write   a file written through tt_file_write_atomic: ENOSPC (core/fs.c)
 *   alloc   a device buffer (tt_buffer_alloc): out of device memory
 *   launch  a kernel launch (tt_launch_kernel): the device lost
 */
#ifndef TT_CORE_FAULT_H
#define TT_CORE_FAULT_H

typedef enum tt_fault_kind { TT_FAULT_WRITE, TT_FAULT_ALLOC, TT_FAULT_LAUNCH } tt_fault_kind;

/* Counts a call of `kind`; 1 when it is the one TT_FAULT names. */
int tt_fault_hit(tt_fault_kind kind);

#endif
