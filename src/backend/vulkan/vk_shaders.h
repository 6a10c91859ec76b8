/* The SPIR-V of shaders/<program>/<kernel>.comp, compiled by glslc and
 * embedded at build time (cmake/shaders.cmake, cmake/embed_shaders.cmake). */
#ifndef TT_VK_SHADERS_H
#define TT_VK_SHADERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_embedded_shader {
    const char *name;       /* "<program>/<kernel>", or "<program>/<kernel>.addressed" */
    const uint32_t *words;  /* the SPIR-V module */
    size_t word_count;
} tt_embedded_shader;

extern const tt_embedded_shader tt_embedded_shaders[];
extern const size_t tt_embedded_shader_count;

#endif
