/*
 * Prefixed to every program.  A buffer argument arrives as a pointer and a
 * byte offset (the host never makes sub-buffers):
 *
 *   __kernel void k(TT_MEM(float, x), const int n) { TT_PTR(float, x); ... }
 */
#define TT_MEM(type, name) __global type *name##_base, const ulong name##_offset
#define TT_PTR(type, name) \
    __global type *name = (__global type *)((__global char *)name##_base + name##_offset)
