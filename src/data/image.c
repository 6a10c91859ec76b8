/*
 * Whole-image decoding (stb_image for JPEG/PNG/BMP, libtiff for TIFF) into
 * interleaved 8-bit RGB; header-only size queries.  The format, the
 * max_pixels refusal and the truncation check come from image_probe.c.
 * See image.h for the contracts.
 */
#include "data/image.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <stb_image.h>
#include <stb_image_write.h>
#include <tiffio.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "data/image_probe.h"

static tt_status open_error(const char *path)
{
    return tt_error_new(TT_ERR_IO, "image %s: cannot open: %s; check the path and permissions", path,
                        strerror(errno));
}

tt_status tt_image_check_size(const char *path, int width, int height, uint64_t max_pixels)
{
    return tt_image_check_pixels(path, "image", width, height, max_pixels);
}

/* ---- header-only size ----------------------------------------------------- */

/* Opens a TIFF (errors into *errors, which must outlive the handle) and
 * reads its size, which must be 1..2^31-1 a side; on success the caller
 * closes *tif. */
static tt_status open_tiff(const char *path, tt_tiff_errors *errors, TIFF **tif, uint32_t *w, uint32_t *h)
{
    *tif = tt_tiff_open(path, "r", errors);
    if (!*tif)
        return tt_error_new(TT_ERR_FORMAT, "image %s: not a readable TIFF (%s)", path, tt_tiff_reason(errors));
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
    unsigned char head[16];
    FILE *f = fopen(path, "rb");
    if (!f) return open_error(path);
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (tiled) *tiled = 0;
    const char *kind = tt_image_kind(head, n);
    if (kind && strcmp(kind, "TIFF") == 0) {
        tt_tiff_errors errors;
        TIFF *tif;
        uint32_t w, h;
        TT_TRY(open_tiff(path, &errors, &tif, &w, &h));
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
    tt_tiff_errors errors;
    TIFF *tif;
    uint32_t w, h;
    TT_TRY(open_tiff(path, &errors, &tif, &w, &h));
    TT_CHECK(tt_image_check_size(path, (int)w, (int)h, max_pixels));
    char why[1024] = "";
    if (!TIFFRGBAImageOK(tif, why)) {
        status = tt_error_new(TT_ERR_UNSUPPORTED, "image %s: TIFF layout not supported (%s)", path, why);
        goto cleanup;
    }
    size_t n = (size_t)w * h;
    raster = tt_malloc(n * sizeof *raster);
    out->pixels = tt_malloc(n * 3);
    if (!raster || !out->pixels) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "image %s: no host memory for %u x %u pixels",
                              path, (unsigned)w, (unsigned)h);
        goto cleanup;
    }
    if (!TIFFReadRGBAImageOriented(tif, w, h, raster, ORIENTATION_TOPLEFT, 1)) {
        status = tt_error_new(TT_ERR_FORMAT, "image %s: corrupt or truncated TIFF (%s)", path,
                              tt_tiff_reason(&errors));
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
    /* size, limit and truncation from the header, before any pixel */
    tt_image_header header;
    TT_TRY(tt_probe_image(path, max_pixels, &header));
    TT_TRY(tt_read_fault("the image", path));
    if (strcmp(header.kind, "TIFF") == 0) return load_tiff(path, max_pixels, out);
    int w, h, comp;
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

typedef struct png_job {
    int w, h, channels;
    const uint8_t *pixels;
    FILE *file;
} png_job;

static void png_bytes(void *ctx, void *data, int size)
{
    png_job *job = ctx;
    fwrite(data, 1, (size_t)size, job->file); /* an error is noticed by the atomic writer */
}

static tt_status png_encode(FILE *f, void *ctx)
{
    png_job *job = ctx;
    job->file = f;
    if (!stbi_write_png_to_func(png_bytes, job, job->w, job->h, job->channels, job->pixels,
                                job->w * job->channels))
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "no host memory to encode a %d x %d PNG",
                            job->w, job->h);
    return NULL;
}

tt_status tt_image_write_png(const char *path, int w, int h, int channels, const uint8_t *pixels)
{
    png_job job = {w, h, channels, pixels, NULL};
    return tt_error_prefix(tt_file_write_atomic(path, png_encode, &job), "writing %s", path);
}

void tt_image_free(tt_image *image)
{
    if (!image) return;
    free(image->pixels);
    memset(image, 0, sizeof *image);
}

/* ---- folders of images ------------------------------------------------------ */

static int has_image_extension(const char *name)
{
    static const char *const extensions[] = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff"};
    const char *dot = strrchr(name, '.');
    if (!dot || name[0] == '.') return 0;
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
        if (strcasecmp(dot, extensions[i]) == 0) return 1;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tt_image_free_names(char **names, int count)
{
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

tt_status tt_image_list_dir(const char *dir, char ***names, int *count)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return tt_error_new(TT_ERR_IO, "cannot read the images folder %s: %s", dir, strerror(errno));
    char **list = NULL;
    int n = 0, capacity = 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        if (!has_image_extension(entry->d_name)) continue;
        if (n == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = tt_realloc(list, sizeof *grown * (size_t)capacity);
            if (!grown) goto fail;
            list = grown;
        }
        if (!(list[n] = tt_strdup(entry->d_name))) goto fail;
        n++;
    }
    closedir(d);
    if (n) qsort(list, (size_t)n, sizeof *list, compare_names);
    *names = list;
    *count = n;
    return NULL;
fail:
    closedir(d);
    tt_image_free_names(list, n);
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "listing the images folder %s: out of host memory", dir);
}
