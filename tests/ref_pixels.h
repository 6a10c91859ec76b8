/*
 * Test support for the pixel half of the data side: image files written
 * with stb_image_write and libtiff, and an in-memory tt_item_source (images
 * on disk, masks held in memory) standing in for the format half's
 * datasets.  Temporary folders: ref_data.h (rd_tempdir_in, rd_rmtree).
 */
#ifndef TT_TESTS_REF_PIXELS_H
#define TT_TESTS_REF_PIXELS_H

#include <stddef.h>
#include <stdint.h>

#include "data/source.h"
#include "ref_data.h"

/* A smooth, deterministic RGB image ((h, w, 3), malloc'd): gradients plus
 * seeded noise; JPEG-friendly yet different at every pixel. */
uint8_t *rp_make_rgb(int w, int h, uint64_t seed);

/* Writers; return 1 on success. */
int rp_write_png(const char *path, int w, int h, const uint8_t *rgb);
int rp_write_jpg(const char *path, int w, int h, const uint8_t *rgb, int quality);
int rp_write_bmp(const char *path, int w, int h, const uint8_t *rgb);
/* A TIFF, RGB 8-bit; tile_w = 0 writes strips, else tiles of tile_w x tile_h;
 * separate = planar samples; deflate compression. */
int rp_write_tiff(const char *path, int w, int h, const uint8_t *rgb, int tile_w, int tile_h, int separate);

/* An in-memory source of up to 64 items. */
typedef struct rp_source {
    int count, classes;
    tt_mask_kind kind;
    char names[64][64];
    char paths[64][512];
    int widths[64], heights[64];
    uint8_t *masks[64];      /* (planes, h, w), owned */
    uint64_t mask_keys[64];
    int mask_calls;          /* how often the cache asked for a mask */
    tt_item_source source;   /* points back at this struct */
} rp_source;

/* Starts an empty source (zeroes *s). */
void rp_source_init(rp_source *s, int classes, tt_mask_kind kind);
/* Adds an item: its image file (already written) and mask (copied). */
void rp_source_add(rp_source *s, const char *name, const char *path, int w, int h, const uint8_t *mask);
void rp_source_free(rp_source *s);

#endif
