/* Test helpers for data sets (see ref_data.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "ref_data.h"
#include "ref_pixels.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb_image_write.h>

/* Exported by libstb's stb_image_write implementation, not declared in its header. */
unsigned char *stbi_zlib_compress(unsigned char *data, int data_len, int *out_len, int quality);

static char *join(const char *dir, const char *name)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    if (path) sprintf(path, "%s/%s", dir, name);
    return path;
}

int rd_tempdir_in(char *out, size_t size, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, size, "%s/tt-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    return mkdtemp(out) != NULL;
}

char *rd_tempdir(const char *tag)
{
    char *path = malloc(4096);
    if (path && !rd_tempdir_in(path, 4096, tag)) {
        free(path);
        return NULL;
    }
    return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void rd_rmtree(const char *path)
{
    if (path) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void rd_remove(char *path)
{
    rd_rmtree(path);
    free(path);
}

char *rd_subdir(const char *dir, const char *sub)
{
    char *path = join(dir, sub);
    if (path) mkdir(path, 0755);
    return path;
}

int rd_write_bytes(const char *dir, const char *name, const void *data, size_t size)
{
    char *path = join(dir, name);
    FILE *f = path ? fopen(path, "wb") : NULL;
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f) ok = fclose(f) == 0 && ok;
    free(path);
    return ok;
}

int rd_write_text(const char *dir, const char *name, const char *text)
{
    return rd_write_bytes(dir, name, text, strlen(text));
}

/* The deterministic content of rd_write_image and rd_write_tiff: (h, w, 3)
 * bytes, malloc'd; NULL when out of memory. */
static unsigned char *pattern_rgb(int w, int h)
{
    unsigned char *rgb = malloc((size_t)w * (size_t)h * 3);
    for (size_t i = 0; rgb && i < (size_t)w * (size_t)h * 3; i++) rgb[i] = (unsigned char)(i * 37 + 11);
    return rgb;
}

int rd_write_image(const char *dir, const char *name, int w, int h)
{
    unsigned char *rgb = pattern_rgb(w, h);
    char *path = join(dir, name);
    int ok = 0;
    if (rgb && path) {
        const char *dot = strrchr(name, '.');
        if (dot && (strcmp(dot, ".jpg") == 0 || strcmp(dot, ".jpeg") == 0))
            ok = stbi_write_jpg(path, w, h, 3, rgb, 90);
        else if (dot && strcmp(dot, ".bmp") == 0)
            ok = stbi_write_bmp(path, w, h, 3, rgb);
        else
            ok = stbi_write_png(path, w, h, 3, rgb, w * 3);
    }
    free(rgb);
    free(path);
    return ok;
}

int rd_write_gray_png(const char *dir, const char *name, int w, int h, const uint8_t *plane)
{
    char *path = join(dir, name);
    int ok = path && stbi_write_png(path, w, h, 1, plane, w);
    free(path);
    return ok;
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Appends a chunk to out (which has room). */
static size_t chunk(unsigned char *out, const char *type, const unsigned char *body, size_t length)
{
    put32(out, (uint32_t)length);
    memcpy(out + 4, type, 4);
    if (length) memcpy(out + 8, body, length);
    put32(out + 8 + length, crc32_of(out + 4, length + 4));
    return length + 12;
}

static size_t png_start(unsigned char *out, uint32_t w, uint32_t h, int color_type)
{
    static const unsigned char magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char ihdr[13] = {0};
    memcpy(out, magic, 8);
    put32(ihdr, w);
    put32(ihdr + 4, h);
    ihdr[8] = 8;
    ihdr[9] = (unsigned char)color_type;
    return 8 + chunk(out + 8, "IHDR", ihdr, 13);
}

int rd_write_palette_png(const char *dir, const char *name, int w, int h, const uint8_t *plane,
                         const uint8_t *palette_rgb, int colors, const uint8_t *alpha)
{
    size_t raw_size = (size_t)h * (size_t)(w + 1);
    unsigned char *raw = malloc(raw_size);
    if (!raw) return 0;
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * (size_t)(w + 1)] = 0; /* filter: none */
        memcpy(raw + (size_t)y * (size_t)(w + 1) + 1, plane + (size_t)y * (size_t)w, (size_t)w);
    }
    int zlen = 0;
    unsigned char *z = stbi_zlib_compress(raw, (int)raw_size, &zlen, 8);
    free(raw);
    unsigned char *out = z ? malloc((size_t)zlen + 1200) : NULL;
    int ok = 0;
    if (out) {
        size_t n = png_start(out, (uint32_t)w, (uint32_t)h, 3);
        n += chunk(out + n, "PLTE", palette_rgb, (size_t)colors * 3);
        if (alpha) n += chunk(out + n, "tRNS", alpha, (size_t)colors);
        n += chunk(out + n, "IDAT", z, (size_t)zlen);
        n += chunk(out + n, "IEND", NULL, 0);
        ok = rd_write_bytes(dir, name, out, n);
    }
    free(z);
    free(out);
    return ok;
}

int rd_write_png_header_only(const char *dir, const char *name, uint32_t w, uint32_t h)
{
    unsigned char out[64];
    size_t n = png_start(out, w, h, 2);
    n += chunk(out + n, "IEND", NULL, 0);
    return rd_write_bytes(dir, name, out, n);
}

unsigned char *rd_read(const char *dir, const char *name, size_t *size)
{
    char *path = join(dir, name);
    FILE *f = path ? fopen(path, "rb") : NULL;
    free(path);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *data = n > 0 ? malloc((size_t)n) : NULL;
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data) *size = (size_t)n;
    return data;
}

int rd_truncate(const char *dir, const char *name, size_t keep)
{
    char *path = join(dir, name);
    int ok = path && truncate(path, (off_t)keep) == 0;
    free(path);
    return ok;
}

int rd_write_tiff(const char *dir, const char *name, int w, int h)
{
    unsigned char *rgb = pattern_rgb(w, h);
    char *path = join(dir, name);
    int ok = rgb && path && rp_write_tiff(path, w, h, rgb, 0, 0, 0);
    free(rgb);
    free(path);
    return ok;
}
