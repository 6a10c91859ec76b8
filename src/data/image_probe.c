/*
 * Image headers without decoding (see image_probe.h).  Assumes stb_image
 * is linked from libstb (STB_IMAGE_IMPLEMENTATION lives there) and
 * libtiff >= 4.5 (per-open error handlers, no global state).
 */
#include "data/image_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb_image.h>
#include <tiffio.h>

#include "core/status.h"

static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

const char *tt_image_kind(const unsigned char *head, size_t n)
{
    if (n >= 8 && memcmp(head, png_magic, 8) == 0) return "PNG";
    if (n >= 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff) return "JPEG";
    if (n >= 2 && head[0] == 'B' && head[1] == 'M') return "BMP";
    /* classic TIFF (42) and BigTIFF (43), either byte order */
    if (n >= 4 && ((head[0] == 'I' && head[1] == 'I' && (head[2] == 42 || head[2] == 43) && head[3] == 0) ||
                   (head[0] == 'M' && head[1] == 'M' && head[2] == 0 && (head[3] == 42 || head[3] == 43))))
        return "TIFF";
    return NULL;
}

static int contains(const unsigned char *hay, size_t n, const unsigned char *needle, size_t k)
{
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return 1;
    return 0;
}

tt_status tt_image_check_pixels(const char *name, const char *kind, int width, int height,
                                uint64_t max_pixels)
{
    if (!max_pixels) max_pixels = TT_IMAGE_DEFAULT_MAX_PIXELS;
    uint64_t pixels = (uint64_t)width * (uint64_t)height;
    if (pixels > max_pixels)
        return tt_error_new(TT_ERR_TOO_LARGE, "%s: %s header claims %d x %d = %llu pixels, above the "
                            "limit of %llu (max_pixels); refused before decoding: images are never "
                            "shrunk, so raise the limit (--max-pixels) if the host has the memory, or "
                            "split the image", name, kind, width, height, (unsigned long long)pixels,
                            (unsigned long long)max_pixels);
    return NULL;
}

/* The checks shared by files and memory once the tail and the dimensions
 * are known (tail NULL: no truncation check). */
static tt_status check_header(const char *name, const char *kind, const unsigned char *tail,
                              size_t tail_len, uint64_t max_pixels, const tt_image_header *header)
{
    if (header->width <= 0 || header->height <= 0)
        return tt_error_new(TT_ERR_FORMAT, "%s: %s header gives an empty image (%d x %d)", name, kind,
                            header->width, header->height);
    TT_TRY(tt_image_check_pixels(name, kind, header->width, header->height, max_pixels));
    static const unsigned char iend[4] = {'I', 'E', 'N', 'D'};
    static const unsigned char eoi[2] = {0xff, 0xd9};
    if (tail && strcmp(kind, "PNG") == 0 && !contains(tail, tail_len, iend, 4))
        return tt_error_new(TT_ERR_FORMAT, "%s: truncated PNG (no IEND chunk at the end); "
                            "re-export or re-download the file", name);
    if (tail && strcmp(kind, "JPEG") == 0 && !contains(tail, tail_len, eoi, 2))
        return tt_error_new(TT_ERR_FORMAT, "%s: truncated JPEG (no end-of-image marker at the end); "
                            "re-export or re-download the file", name);
    return NULL;
}

/* Dimensions of a PNG from its IHDR, so that sizes above stb's limit are
 * still reported with their numbers. */
static int png_ihdr(const unsigned char *head, size_t n, int *width, int *height)
{
    if (n < 24 || memcmp(head + 12, "IHDR", 4) != 0) return 0;
    uint32_t w = be32(head + 16), h = be32(head + 20);
    if (w > 0x7fffffff || h > 0x7fffffff) return 0;
    *width = (int)w;
    *height = (int)h;
    return 1;
}

static tt_status stb_error(const char *name, const char *kind)
{
    return tt_error_new(TT_ERR_FORMAT, "%s: unreadable %s header (%s); the file is damaged or not "
                        "an image", name, kind, stbi_failure_reason());
}

/* stbi_info failed: a PNG whose IHDR is readable is still refused with its
 * numbers when it is too large. */
static tt_status header_unreadable(const char *name, const char *kind, const unsigned char *head, size_t n,
                                   uint64_t max_pixels, tt_image_header *header)
{
    header->width = header->height = header->channels = 0;
    if (strcmp(kind, "PNG") == 0 && png_ihdr(head, n, &header->width, &header->height))
        TT_TRY(check_header(name, kind, NULL, 0, max_pixels, header));
    return stb_error(name, kind);
}

tt_status tt_probe_image_memory(const unsigned char *data, size_t size, const char *name,
                                uint64_t max_pixels, tt_image_header *header)
{
    memset(header, 0, sizeof *header);
    if (size == 0) return tt_error_new(TT_ERR_IO, "%s: empty file (0 bytes)", name);
    const char *kind = tt_image_kind(data, size);
    if (!kind)
        return tt_error_new(TT_ERR_FORMAT, "%s: not a PNG, JPEG, BMP or TIFF image (unknown first "
                            "bytes)", name);
    header->kind = kind;
    if (strcmp(kind, "TIFF") == 0)
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: TIFF headers are only checked from files", name);
    if (size > INT32_MAX) return tt_error_new(TT_ERR_TOO_LARGE, "%s: above 2 GiB in memory", name);
    if (!stbi_info_from_memory(data, (int)size, &header->width, &header->height, &header->channels))
        return header_unreadable(name, kind, data, size, max_pixels, header);
    size_t tail = size < TT_IMAGE_TAIL ? size : TT_IMAGE_TAIL;
    return check_header(name, kind, data + size - tail, tail, max_pixels, header);
}

/* ---- libtiff, one handle at a time ---------------------------------------- */

static int tiff_error_handler(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    tt_tiff_errors *errors = user;
    if (errors->message[0]) return 1; /* the first error is the cause */
    char msg[224];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(errors->message, sizeof errors->message, "%s%s%s", module ? module : "", module ? ": " : "",
             msg);
    return 1;
}

static int tiff_warning_handler(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1; /* unknown tags, GeoTIFF keys and the like are not errors */
}

/* Opens a path (fd < 0) or a descriptor with this handle's own handlers. */
static TIFF *open_with_handlers(int fd, const char *path, const char *mode,
                                tt_tiff_errors *errors)
{
    errors->message[0] = '\0';
    TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
    if (!options) {
        snprintf(errors->message, sizeof errors->message, "out of host memory");
        return NULL;
    }
    TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_error_handler, errors);
    TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_warning_handler, NULL);
    TIFF *tif = fd < 0 ? TIFFOpenExt(path, mode, options) : TIFFFdOpenExt(fd, path, mode, options);
    TIFFOpenOptionsFree(options);
    return tif;
}

TIFF *tt_tiff_open(const char *path, const char *mode, tt_tiff_errors *errors)
{
    return open_with_handlers(-1, path, mode, errors);
}

TIFF *tt_tiff_fdopen(int fd, const char *name, const char *mode, tt_tiff_errors *errors)
{
    return open_with_handlers(fd, name, mode, errors);
}

const char *tt_tiff_reason(const tt_tiff_errors *errors)
{
    return errors->message[0] ? errors->message : "libtiff gave no reason";
}

static tt_status probe_tiff(const char *path, uint64_t max_pixels, tt_image_header *header)
{
    tt_tiff_errors errors;
    TIFF *tif = tt_tiff_open(path, "r", &errors);
    if (!tif)
        return tt_error_new(TT_ERR_FORMAT, "%s: unreadable TIFF header (%s); the file is damaged",
                            path, tt_tiff_reason(&errors));
    uint32_t w = 0, h = 0;
    uint16_t spp = 1;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    header->tiled = TIFFIsTiled(tif) ? 1 : 0;
    TIFFClose(tif);
    if (w > 0x7fffffff || h > 0x7fffffff)
        return tt_error_new(TT_ERR_TOO_LARGE, "%s: TIFF header claims %u x %u pixels; refused", path, w, h);
    header->width = (int)w;
    header->height = (int)h;
    header->channels = spp;
    return check_header(path, "TIFF", NULL, 0, max_pixels, header);
}

/* ---- files ------------------------------------------------------------------ */

tt_status tt_probe_file_size(const char *path, size_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return tt_error_new(TT_ERR_IO, "%s: %s", path, errno == ENOENT ? "file missing" : strerror(errno));
    if (!S_ISREG(st.st_mode)) return tt_error_new(TT_ERR_IO, "%s: not a regular file", path);
    if (st.st_size == 0) return tt_error_new(TT_ERR_IO, "%s: empty file (0 bytes)", path);
    *size = (size_t)st.st_size;
    return NULL;
}

tt_status tt_probe_image(const char *path, uint64_t max_pixels, tt_image_header *header)
{
    tt_status status = NULL;
    memset(header, 0, sizeof *header);
    size_t size = 0;
    TT_TRY(tt_probe_file_size(path, &size));
    unsigned char head[32], tail[TT_IMAGE_TAIL];
    FILE *f = fopen(path, "rb");
    if (!f) return tt_error_new(TT_ERR_IO, "%s: %s", path, strerror(errno));
    size_t head_len = fread(head, 1, sizeof head, f);
    size_t tail_len = 0;
    const char *kind = tt_image_kind(head, head_len);
    if (!kind) {
        status = tt_error_new(TT_ERR_FORMAT, "%s: not a PNG, JPEG, BMP or TIFF image (unknown first "
                              "bytes)", path);
        goto cleanup;
    }
    header->kind = kind;
    if (strcmp(kind, "TIFF") == 0) {
        status = probe_tiff(path, max_pixels, header);
        goto cleanup;
    }
    off_t from = size > TT_IMAGE_TAIL ? (off_t)(size - TT_IMAGE_TAIL) : 0;
    if (fseeko(f, from, SEEK_SET) == 0) tail_len = fread(tail, 1, sizeof tail, f);
    rewind(f);
    if (!stbi_info_from_file(f, &header->width, &header->height, &header->channels)) {
        status = header_unreadable(path, kind, head, head_len, max_pixels, header);
        goto cleanup;
    }
    status = check_header(path, kind, tail, tail_len, max_pixels, header);
cleanup:
    fclose(f);
    return status;
}
