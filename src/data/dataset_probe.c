/*
 * Image and mask file checks without full decodes (see dataset_probe.h).
 * Assumes stb_image is linked from libstb (STB_IMAGE_IMPLEMENTATION lives
 * there) and libtiff >= 4.5 (per-open error handlers, no global state).
 */
#include "data/dataset_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb_image.h>
#include <tiffio.h>

#include "core/status.h"

/* Bytes at the end of a file searched for the PNG IEND / JPEG EOI marker,
 * so that a little trailing junk some writers add is tolerated. */
#define TT_PROBE_TAIL 4096

static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The kind of image from its first bytes, or NULL. */
static const char *kind_of(const unsigned char *head, size_t n)
{
    if (n >= 8 && memcmp(head, png_magic, 8) == 0) return "PNG";
    if (n >= 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff) return "JPEG";
    if (n >= 2 && head[0] == 'B' && head[1] == 'M') return "BMP";
    if (n >= 4 && ((head[0] == 'I' && head[1] == 'I' && head[2] == 42 && head[3] == 0) ||
                   (head[0] == 'M' && head[1] == 'M' && head[2] == 0 && head[3] == 42)))
        return "TIFF";
    if (n >= 4 && ((head[0] == 'I' && head[1] == 'I' && head[2] == 43 && head[3] == 0) ||
                   (head[0] == 'M' && head[1] == 'M' && head[2] == 0 && head[3] == 43)))
        return "TIFF"; /* BigTIFF */
    return NULL;
}

static int contains(const unsigned char *hay, size_t n, const unsigned char *needle, size_t k)
{
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return 1;
    return 0;
}

/* The checks shared by files and memory once the head, the tail and the
 * dimensions are known. */
static tt_status check_header(const char *name, const char *kind, const unsigned char *tail,
                              size_t tail_len, uint64_t max_pixels, tt_image_header *header)
{
    if (!max_pixels) max_pixels = TT_DATASET_DEFAULT_MAX_PIXELS;
    uint64_t pixels = (uint64_t)header->width * (uint64_t)header->height;
    if (header->width <= 0 || header->height <= 0)
        return tt_error_new(TT_ERR_FORMAT, "%s: %s header gives an empty image (%d x %d)", name, kind,
                            header->width, header->height);
    if (pixels > max_pixels)
        return tt_error_new(TT_ERR_TOO_LARGE, "%s: %s header claims %d x %d = %llu pixels, above the "
                            "limit of %llu; refused before decoding (raise --max-pixels if it is real)",
                            name, kind, header->width, header->height, (unsigned long long)pixels,
                            (unsigned long long)max_pixels);
    static const unsigned char iend[4] = {'I', 'E', 'N', 'D'};
    static const unsigned char eoi[2] = {0xff, 0xd9};
    if (strcmp(kind, "PNG") == 0 && !contains(tail, tail_len, iend, 4))
        return tt_error_new(TT_ERR_FORMAT, "%s: truncated PNG (no IEND chunk at the end); "
                            "re-export or re-download the file", name);
    if (strcmp(kind, "JPEG") == 0 && !contains(tail, tail_len, eoi, 2))
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

tt_status tt_probe_image_memory(const unsigned char *data, size_t size, const char *name,
                                uint64_t max_pixels, tt_image_header *header)
{
    memset(header, 0, sizeof *header);
    if (size == 0) return tt_error_new(TT_ERR_IO, "%s: empty file (0 bytes)", name);
    const char *kind = kind_of(data, size);
    if (!kind)
        return tt_error_new(TT_ERR_FORMAT, "%s: not a PNG, JPEG, BMP or TIFF image (unknown first "
                            "bytes)", name);
    header->kind = kind;
    if (strcmp(kind, "TIFF") == 0)
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: TIFF headers are only checked from files", name);
    int w = 0, h = 0, comp = 0;
    if (size > INT32_MAX) return tt_error_new(TT_ERR_TOO_LARGE, "%s: above 2 GiB in memory", name);
    if (!stbi_info_from_memory(data, (int)size, &w, &h, &comp)) {
        if (strcmp(kind, "PNG") == 0 && png_ihdr(data, size, &w, &h)) {
            header->width = w;
            header->height = h;
            TT_TRY(check_header(name, kind, NULL, 0, max_pixels, header));
        }
        return stb_error(name, kind);
    }
    header->width = w;
    header->height = h;
    header->channels = comp;
    size_t tail = size < TT_PROBE_TAIL ? size : TT_PROBE_TAIL;
    return check_header(name, kind, data + size - tail, tail, max_pixels, header);
}

typedef struct tiff_errors {
    char message[256];
} tiff_errors;

static int tiff_error_handler(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)module;
    tiff_errors *errors = user;
    if (!errors->message[0]) vsnprintf(errors->message, sizeof errors->message, fmt, ap);
    return 1;
}

static int tiff_warning_handler(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1; /* unknown tags and the like: not our business here */
}

static tt_status probe_tiff(const char *path, uint64_t max_pixels, tt_image_header *header)
{
    tiff_errors errors = {{0}};
    TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
    if (!options) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_error_handler, &errors);
    TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_warning_handler, NULL);
    TIFF *tif = TIFFOpenExt(path, "r", options);
    TIFFOpenOptionsFree(options);
    if (!tif)
        return tt_error_new(TT_ERR_FORMAT, "%s: unreadable TIFF header (%s); the file is damaged",
                            path, errors.message[0] ? errors.message : "libtiff gave no reason");
    uint32_t w = 0, h = 0;
    uint16_t spp = 1;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFClose(tif);
    if (w > 0x7fffffff || h > 0x7fffffff)
        return tt_error_new(TT_ERR_TOO_LARGE, "%s: TIFF header claims %u x %u pixels; refused", path, w, h);
    header->width = (int)w;
    header->height = (int)h;
    header->channels = spp;
    return check_header(path, "TIFF", NULL, 0, max_pixels, header);
}

/* Missing or empty files, as one line. */
static tt_status stat_file(const char *path, off_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return tt_error_new(TT_ERR_IO, "%s: %s", path, errno == ENOENT ? "file missing" : strerror(errno));
    if (!S_ISREG(st.st_mode)) return tt_error_new(TT_ERR_IO, "%s: not a regular file", path);
    if (st.st_size == 0) return tt_error_new(TT_ERR_IO, "%s: empty file (0 bytes)", path);
    *size = st.st_size;
    return NULL;
}

tt_status tt_probe_image(const char *path, uint64_t max_pixels, tt_image_header *header)
{
    tt_status status = NULL;
    memset(header, 0, sizeof *header);
    off_t size = 0;
    TT_TRY(stat_file(path, &size));
    unsigned char head[32], tail[TT_PROBE_TAIL];
    FILE *f = fopen(path, "rb");
    if (!f) return tt_error_new(TT_ERR_IO, "%s: %s", path, strerror(errno));
    size_t head_len = fread(head, 1, sizeof head, f);
    size_t tail_len = 0;
    const char *kind = kind_of(head, head_len);
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
    off_t from = size > TT_PROBE_TAIL ? size - TT_PROBE_TAIL : 0;
    if (fseeko(f, from, SEEK_SET) == 0) tail_len = fread(tail, 1, sizeof tail, f);
    int w = 0, h = 0, comp = 0;
    rewind(f);
    if (!stbi_info_from_file(f, &w, &h, &comp)) {
        if (strcmp(kind, "PNG") == 0 && png_ihdr(head, head_len, &w, &h)) {
            header->width = w;
            header->height = h;
            TT_CHECK(check_header(path, kind, NULL, 0, max_pixels, header));
        }
        status = stb_error(path, kind);
        goto cleanup;
    }
    header->width = w;
    header->height = h;
    header->channels = comp;
    status = check_header(path, kind, tail, tail_len, max_pixels, header);
cleanup:
    fclose(f);
    return status;
}

tt_status tt_probe_read_file(const char *path, unsigned char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    off_t file_size = 0;
    TT_TRY(stat_file(path, &file_size));
    unsigned char *buffer = malloc((size_t)file_size);
    if (!buffer) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: no host memory to read it", path);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(buffer, 1, (size_t)file_size, f) : 0;
    int saved = errno;
    if (f) fclose(f);
    if (got != (size_t)file_size) {
        free(buffer);
        return tt_error_new(TT_ERR_IO, "%s: read failed (%s)", path, f ? "short read" : strerror(saved));
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
    out = malloc(count ? count : 1);
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
