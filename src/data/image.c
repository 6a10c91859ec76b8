/*
 * Whole-image decoding (stb_image for JPEG/PNG/BMP, libtiff for TIFF) into
 * interleaved 8-bit RGB; header-only size queries; the max_pixels refusal.
 * See image.h for the contracts.
 */
#include "data/image.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>
#include <tiffio.h>

#include "core/status.h"

/* ---- libtiff error routing ------------------------------------------------ */

static _Thread_local char tiff_error[512];
static pthread_once_t tiff_once = PTHREAD_ONCE_INIT;

static void tiff_error_handler(const char *module, const char *fmt, va_list ap)
{
    char msg[448];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(tiff_error, sizeof tiff_error, "%s%s%s", module ? module : "", module ? ": " : "", msg);
}

static void tiff_warning_handler(const char *module, const char *fmt, va_list ap)
{
    (void)module, (void)fmt, (void)ap; /* warnings (unknown tags, GeoTIFF keys) are not errors */
}

static void tiff_install(void)
{
    TIFFSetErrorHandler(tiff_error_handler);
    TIFFSetWarningHandler(tiff_warning_handler);
}

void tt_tiff_quiet(void) { pthread_once(&tiff_once, tiff_install); }
const char *tt_tiff_last_error(void) { return tiff_error; }
void tt_tiff_clear_error(void) { tiff_error[0] = '\0'; }

/* ---- helpers -------------------------------------------------------------- */

tt_image_format tt_image_sniff(const char *path)
{
    unsigned char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return TT_IMAGE_UNKNOWN;
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && ((magic[0] == 'I' && magic[1] == 'I' && (magic[2] == 42 || magic[2] == 43) && magic[3] == 0) ||
                     (magic[0] == 'M' && magic[1] == 'M' && magic[2] == 0 && (magic[3] == 42 || magic[3] == 43))))
        return TT_IMAGE_TIFF;
    return TT_IMAGE_STB;
}

static tt_status open_error(const char *path)
{
    return tt_error_new(TT_ERR_IO, "image %s: cannot open: %s; check the path and permissions", path,
                        strerror(errno));
}

tt_status tt_image_check_size(const char *path, int width, int height, uint64_t max_pixels)
{
    if (!max_pixels) max_pixels = TT_IMAGE_DEFAULT_MAX_PIXELS;
    uint64_t pixels = (uint64_t)width * (uint64_t)height;
    if (pixels > max_pixels)
        return tt_error_new(TT_ERR_TOO_LARGE,
                            "image %s: %d x %d = %llu pixels is above the limit of %llu pixels "
                            "(max_pixels); images are never shrunk, so raise the limit if the "
                            "host has the memory, or split the image",
                            path, width, height, (unsigned long long)pixels,
                            (unsigned long long)max_pixels);
    return NULL;
}

/* A JPEG whose end-of-image marker (FF D9) is missing from its last 64 KiB
 * was cut short: stb_image would decode it silently with grey rows. */
static tt_status check_jpeg_complete(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return open_error(path);
    unsigned char head[2] = {0};
    tt_status status = NULL;
    unsigned char *tail = NULL;
    if (fread(head, 1, 2, f) != 2 || head[0] != 0xFF || head[1] != 0xD8) goto cleanup; /* not a JPEG */
    if (fseek(f, 0, SEEK_END) != 0) goto cleanup;
    long size = ftell(f);
    long take = size < 65536 ? size : 65536;
    tail = malloc((size_t)take);
    if (!tail || fseek(f, size - take, SEEK_SET) != 0 || fread(tail, 1, (size_t)take, f) != (size_t)take) {
        status = tt_error_new(TT_ERR_IO, "image %s: cannot read the file's end", path);
        goto cleanup;
    }
    for (long i = take - 2; i >= 0; i--)
        if (tail[i] == 0xFF && tail[i + 1] == 0xD9) goto cleanup;
    status = tt_error_new(TT_ERR_FORMAT,
                          "image %s: truncated JPEG (no end-of-image marker); the file was cut "
                          "short, copy it again",
                          path);
cleanup:
    free(tail);
    fclose(f);
    return status;
}

/* ---- header-only size ----------------------------------------------------- */

/* Opens a TIFF quietly and reads its size, which must be 1..2^31-1 a side;
 * on success the caller closes *tif. */
static tt_status open_tiff(const char *path, TIFF **tif, uint32_t *w, uint32_t *h)
{
    tt_tiff_quiet();
    tt_tiff_clear_error();
    *tif = TIFFOpen(path, "r");
    if (!*tif)
        return tt_error_new(TT_ERR_FORMAT, "image %s: not a readable TIFF (%s)", path,
                            tt_tiff_last_error());
    *w = *h = 0;
    TIFFGetField(*tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFGetField(*tif, TIFFTAG_IMAGELENGTH, h);
    if (*w == 0 || *h == 0 || *w > INT32_MAX || *h > INT32_MAX) {
        TIFFClose(*tif);
        *tif = NULL;
        return tt_error_new(TT_ERR_FORMAT, "image %s: TIFF header gives a size of %u x %u", path,
                            (unsigned)*w, (unsigned)*h);
    }
    return NULL;
}

tt_status tt_image_info(const char *path, int *width, int *height, int *tiled)
{
    FILE *f = fopen(path, "rb");
    if (!f) return open_error(path);
    fclose(f);
    if (tiled) *tiled = 0;
    if (tt_image_sniff(path) == TT_IMAGE_TIFF) {
        TIFF *tif;
        uint32_t w, h;
        TT_TRY(open_tiff(path, &tif, &w, &h));
        if (tiled) *tiled = TIFFIsTiled(tif) ? 1 : 0;
        TIFFClose(tif);
        *width = (int)w;
        *height = (int)h;
        return NULL;
    }
    int w, h, comp;
    if (!stbi_info(path, &w, &h, &comp))
        return tt_error_new(TT_ERR_FORMAT,
                            "image %s: not a readable JPEG, PNG, BMP or TIFF header (%s)", path,
                            stbi_failure_reason());
    *width = w;
    *height = h;
    return NULL;
}

/* ---- whole decode --------------------------------------------------------- */

static tt_status load_tiff(const char *path, uint64_t max_pixels, tt_image *out)
{
    tt_status status = NULL;
    uint32_t *raster = NULL;
    TIFF *tif;
    uint32_t w, h;
    TT_TRY(open_tiff(path, &tif, &w, &h));
    TT_CHECK(tt_image_check_size(path, (int)w, (int)h, max_pixels));
    char why[1024] = "";
    if (!TIFFRGBAImageOK(tif, why)) {
        status = tt_error_new(TT_ERR_UNSUPPORTED, "image %s: TIFF layout not supported (%s)", path, why);
        goto cleanup;
    }
    size_t n = (size_t)w * h;
    raster = malloc(n * sizeof *raster);
    out->pixels = malloc(n * 3);
    if (!raster || !out->pixels) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "image %s: no host memory for %u x %u pixels",
                              path, (unsigned)w, (unsigned)h);
        goto cleanup;
    }
    if (!TIFFReadRGBAImageOriented(tif, w, h, raster, ORIENTATION_TOPLEFT, 1)) {
        status = tt_error_new(TT_ERR_FORMAT, "image %s: corrupt or truncated TIFF (%s)", path,
                              tt_tiff_last_error());
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        out->pixels[3 * i + 0] = (uint8_t)TIFFGetR(raster[i]);
        out->pixels[3 * i + 1] = (uint8_t)TIFFGetG(raster[i]);
        out->pixels[3 * i + 2] = (uint8_t)TIFFGetB(raster[i]);
    }
    out->width = (int)w;
    out->height = (int)h;
cleanup:
    if (status) {
        free(out->pixels);
        out->pixels = NULL;
    }
    free(raster);
    TIFFClose(tif);
    return status;
}

tt_status tt_image_load(const char *path, uint64_t max_pixels, tt_image *out)
{
    memset(out, 0, sizeof *out);
    int w, h;
    TT_TRY(tt_image_info(path, &w, &h, NULL));
    TT_TRY(tt_image_check_size(path, w, h, max_pixels));
    if (tt_image_sniff(path) == TT_IMAGE_TIFF) return load_tiff(path, max_pixels, out);
    TT_TRY(check_jpeg_complete(path));
    int comp;
    uint8_t *pixels = stbi_load(path, &w, &h, &comp, 3);
    if (!pixels)
        return tt_error_new(TT_ERR_FORMAT, "image %s: corrupt or truncated image (%s)", path,
                            stbi_failure_reason());
    /* stb's buffer came from malloc (STBI_MALLOC default), so free() owns it */
    out->pixels = pixels;
    out->width = w;
    out->height = h;
    return NULL;
}

void tt_image_free(tt_image *image)
{
    if (!image) return;
    free(image->pixels);
    memset(image, 0, sizeof *image);
}
