/*
 * Helpers for the data-set tests: a scratch folder per test, small images
 * and masks written with stb_image_write, hand-made palette PNGs (which
 * stb cannot write), and raw files (empty, truncated, garbage).
 */
#ifndef TT_TESTS_REF_DATA_H
#define TT_TESTS_REF_DATA_H

#include <stddef.h>
#include <stdint.h>

/* A fresh folder under $TMPDIR (or /tmp); malloc'd path.  NULL on failure. */
char *rd_tempdir(const char *tag);
/* The same into out (size bytes; PATH_MAX is enough); 0 on failure. */
int rd_tempdir_in(char *out, size_t size, const char *tag);
/* Removes a folder made by rd_tempdir with everything in it; frees path. */
void rd_remove(char *path);
/* rm -rf path (the path is not freed). */
void rd_rmtree(const char *path);
/* mkdir DIR/SUB; returns the malloc'd path. */
char *rd_subdir(const char *dir, const char *sub);
/* Writes `size` bytes to DIR/NAME; 0 on failure. */
int rd_write_bytes(const char *dir, const char *name, const void *data, size_t size);
/* Writes text (NUL-terminated) to DIR/NAME. */
int rd_write_text(const char *dir, const char *name, const char *text);
/* An RGB image of w x h with deterministic content, as PNG, JPEG or BMP
 * by NAME's extension. */
int rd_write_image(const char *dir, const char *name, int w, int h);
/* An 8-bit RGB TIFF of w x h (strips), written with rp_write_tiff. */
int rd_write_tiff(const char *dir, const char *name, int w, int h);
/* An 8-bit grayscale PNG holding `plane` (h x w). */
int rd_write_gray_png(const char *dir, const char *name, int w, int h, const uint8_t *plane);
/* An 8-bit palette PNG: indices `plane`, palette of `colors` RGB triples,
 * alpha per entry when alpha != NULL (a tRNS chunk). */
int rd_write_palette_png(const char *dir, const char *name, int w, int h, const uint8_t *plane,
                         const uint8_t *palette_rgb, int colors, const uint8_t *alpha);
/* A valid PNG whose IHDR claims w x h (only the header; no pixel data). */
int rd_write_png_header_only(const char *dir, const char *name, uint32_t w, uint32_t h);
/* Reads DIR/NAME whole (malloc'd); NULL on failure. */
unsigned char *rd_read(const char *dir, const char *name, size_t *size);
/* Cuts DIR/NAME down to `keep` bytes. */
int rd_truncate(const char *dir, const char *name, size_t keep);

#endif
