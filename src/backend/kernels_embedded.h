/* The kernel sources of opencl/, embedded at build time (cmake/embed_kernels.cmake). */
#ifndef TT_KERNELS_EMBEDDED_H
#define TT_KERNELS_EMBEDDED_H

#include <stddef.h>

typedef struct tt_embedded_kernel {
    const char *name;           /* file name without .cl */
    const unsigned char *data;  /* NUL-terminated */
    size_t size;                /* without the NUL */
} tt_embedded_kernel;

extern const tt_embedded_kernel tt_embedded_kernels[];
extern const size_t tt_embedded_kernel_count;

#endif
