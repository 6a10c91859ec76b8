/*
 * Mask PNGs as class indices, and whole-file reads (see dataset_probe.h);
 * image headers are probed by image_probe.c.  Assumes stb_image is linked
 * from libstb (STB_IMAGE_IMPLEMENTATION lives there).
 */
#include "data/dataset_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stb_image.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

tt_status tt_probe_read_file(const char *path, unsigned char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    size_t file_size = 0;
    TT_TRY(tt_probe_file_size(path, &file_size));
    unsigned char *buffer = tt_malloc((size_t)file_size);
    if (!buffer) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: no host memory to read it", path);
    FILE *f = fopen(path, "rb");
    tt_status unreadable = f ? tt_read_fault("the file", path) : NULL;
    size_t got = f && !unreadable ? fread(buffer, 1, (size_t)file_size, f) : 0;
    int saved = errno;
    if (f) fclose(f);
    if (unreadable || got != (size_t)file_size) {
        free(buffer);
        return unreadable ? unreadable
                          : tt_error_new(TT_ERR_IO, "%s: read failed (%s)", path,
                                         f ? "short read" : strerror(saved));
    }
    *data = buffer;
    *size = got;
    return NULL;
}

/* A palette entry's colour as stb expands it with 4 components. */
typedef struct palette_entry {
    uint32_t rgba;
    int index;
} palette_entry;

static int compare_entries(const void *a, const void *b)
{
    const palette_entry *x = a, *y = b;
    if (x->rgba != y->rgba) return x->rgba < y->rgba ? -1 : 1;
    return x->index - y->index;
}

tt_status tt_probe_mask_png(const unsigned char *data, size_t size, const char *name,
                            uint64_t max_pixels, int *width, int *height, uint8_t **plane)
{
    tt_status status = NULL;
    unsigned char *pixels = NULL;
    uint8_t *out = NULL;
    *plane = NULL;
    *width = *height = 0;
    tt_image_header header;
    TT_TRY(tt_probe_image_memory(data, size, name, max_pixels, &header));
    if (strcmp(header.kind, "PNG") != 0)
        return tt_error_new(TT_ERR_FORMAT, "%s: a mask must be a PNG, this is a %s", name, header.kind);
    /* walk every chunk: IHDR, PLTE and tRNS are read; every length must fit
     * the file, or stb_image would allocate what a corrupt IDAT length
     * claims (gigabytes) before it finds the data missing */
    int bit_depth = 0, color_type = -1, palette_size = 0;
    palette_entry palette[256];
    size_t pos = 8;
    while (pos + 8 <= size) {
        uint32_t length = be32(data + pos);
        const unsigned char *type = data + pos + 4, *body = data + pos + 8;
        if (length > size - pos - 8)
            return tt_error_new(TT_ERR_FORMAT, "%s: PNG chunk '%.4s' runs past the end of the file",
                                name, (const char *)type);
        if (memcmp(type, "IHDR", 4) == 0 && length >= 13) {
            bit_depth = body[8];
            color_type = body[9];
        } else if (memcmp(type, "PLTE", 4) == 0) {
            palette_size = (int)(length / 3 > 256 ? 256 : length / 3);
            for (int i = 0; i < palette_size; i++)
                palette[i] = (palette_entry){(uint32_t)body[3 * i] << 24 | (uint32_t)body[3 * i + 1] << 16 |
                                                 (uint32_t)body[3 * i + 2] << 8 | 0xffu, i};
        } else if (memcmp(type, "tRNS", 4) == 0 && color_type == 3) {
            for (uint32_t i = 0; i < length && (int)i < palette_size; i++)
                palette[i].rgba = (palette[i].rgba & ~0xffu) | body[i];
        } else if (memcmp(type, "IEND", 4) == 0) {
            break;
        }
        pos += 12 + (size_t)length;
    }
    if (color_type == 0 && bit_depth != 8)
        return tt_error_new(TT_ERR_FORMAT, "%s: grayscale mask of %d bits; masks hold one 8-bit class "
                            "index per pixel (save as 8-bit grayscale or palette PNG)", name, bit_depth);
    if (color_type != 0 && color_type != 3)
        return tt_error_new(TT_ERR_FORMAT, "%s: mask PNG has colour type %d (%s); masks hold one 8-bit "
                            "class index per pixel: save as 8-bit grayscale or palette PNG", name,
                            color_type, color_type == 2 ? "RGB" : color_type == 6 ? "RGBA" :
                            color_type == 4 ? "gray + alpha" : "unknown");
    if (color_type == 3 && palette_size == 0)
        return tt_error_new(TT_ERR_FORMAT, "%s: palette PNG without a PLTE chunk", name);
    int w = 0, h = 0, comp = 0;
    pixels = stbi_load_from_memory(data, (int)size, &w, &h, &comp, color_type == 3 ? 4 : 1);
    if (!pixels) {
        status = tt_error_new(TT_ERR_FORMAT, "%s: mask PNG does not decode (%s); the file is damaged",
                              name, stbi_failure_reason());
        goto cleanup;
    }
    size_t count = (size_t)w * (size_t)h;
    out = tt_malloc(count ? count : 1);
    if (!out) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: no host memory for the mask", name);
        goto cleanup;
    }
    if (color_type == 0) {
        memcpy(out, pixels, count);
    } else {
        qsort(palette, (size_t)palette_size, sizeof palette[0], compare_entries);
        uint32_t last_rgba = 0;
        int last_index = -1;
        for (size_t i = 0; i < count; i++) {
            const unsigned char *p = pixels + 4 * i;
            uint32_t rgba = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
            if (last_index < 0 || rgba != last_rgba) {
                int lo = 0, hi = palette_size; /* first entry with colour >= rgba */
                while (lo < hi) {
                    int mid = (lo + hi) / 2;
                    if (palette[mid].rgba < rgba) lo = mid + 1; else hi = mid;
                }
                if (lo == palette_size || palette[lo].rgba != rgba) {
                    status = tt_error_new(TT_ERR_FORMAT, "%s: pixel (%zu, %zu) has a colour not in the "
                                          "palette; the file is damaged", name, i % (size_t)w, i / (size_t)w);
                    goto cleanup;
                }
                if (lo + 1 < palette_size && palette[lo + 1].rgba == rgba) {
                    status = tt_error_new(TT_ERR_FORMAT, "%s: palette entries %d and %d have the same "
                                          "colour, so pixel (%zu, %zu) has no single class; give each "
                                          "class its own colour or save as 8-bit grayscale", name,
                                          palette[lo].index, palette[lo + 1].index, i % (size_t)w,
                                          i / (size_t)w);
                    goto cleanup;
                }
                last_rgba = rgba;
                last_index = palette[lo].index;
            }
            out[i] = (uint8_t)last_index;
        }
    }
    *width = w;
    *height = h;
    *plane = out;
    out = NULL;
cleanup:
    stbi_image_free(pixels);
    free(out);
    return status;
}
