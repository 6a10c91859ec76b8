/* Raster pairs in DIR/images and DIR/masks; see raster_set.h. */
#include "data/raster_set.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/status.h"

struct tt_raster_set {
    tt_raster_pair **pairs;
    char **names;
    int count;
};

static int is_tiff_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && dot != name && (!strcasecmp(dot, ".tif") || !strcasecmp(dot, ".tiff"));
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The .tif/.tiff names of a folder, sorted; NULL and *count -1 when it
 * cannot be read, or out of memory. */
static char **tiff_names(const char *dir, int *count)
{
    *count = -1;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    int n = 0, ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (!is_tiff_name(e->d_name)) continue;
        char **more = tt_realloc(names, (size_t)(n + 1) * sizeof *names);
        ok = more && (more[n] = tt_strdup(e->d_name));
        if (more) names = more;
        n += ok;
    }
    closedir(d);
    if (!ok) {
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
        return NULL;
    }
    for (int i = 1; i < n; i++) /* insertion sort: a few hundred names at most */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1], names[j - 1] = t;
        }
    *count = n;
    return names;
}

static void free_names(char **names, int count)
{
    if (!names) return;
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

int tt_raster_set_detect(const char *dir)
{
    char images[4096], masks[4096];
    snprintf(images, sizeof images, "%s/images", dir);
    snprintf(masks, sizeof masks, "%s/masks", dir);
    if (!is_dir(images) || !is_dir(masks)) return 0;
    int count = 0;
    char **names = tiff_names(masks, &count);
    free_names(names, count > 0 ? count : 0);
    return count > 0;
}

void tt_raster_set_destroy(tt_raster_set *set)
{
    if (!set) return;
    for (int i = 0; i < set->count; i++) tt_raster_pair_close(set->pairs[i]);
    free_names(set->names, set->count);
    free(set->pairs);
    free(set);
}

int tt_raster_set_count(const tt_raster_set *set) { return set->count; }
tt_raster_pair *tt_raster_set_pair(tt_raster_set *set, int index) { return set->pairs[index]; }
const char *tt_raster_set_name(const tt_raster_set *set, int index) { return set->names[index]; }

/* DIR/masks/STEM.tif or .tiff (either case) for image NAME, into buf. */
static int find_mask(const char *masks, const char *name, char *buf, size_t size)
{
    int stem = (int)(strrchr(name, '.') - name);
    static const char *const ext[] = {".tif", ".tiff", ".TIF", ".TIFF"};
    for (size_t k = 0; k < sizeof ext / sizeof ext[0]; k++) {
        snprintf(buf, size, "%s/%.*s%s", masks, stem, name, ext[k]);
        if (is_file(buf)) return 1;
    }
    snprintf(buf, size, "%s/%.*s.tif", masks, stem, name);
    return 0;
}

tt_status tt_raster_set_open_flags(const char *dir, const char *bands, int mask_nodata,
                                   tt_raster_set **out)
{
    *out = NULL;
    int list[TT_RASTER_MAX_BANDS], count = 0;
    if (bands[0])
        TT_TRY(tt_raster_bands_parse(bands, "--bands", list, TT_RASTER_MAX_BANDS, &count));
    tt_raster_pair_options po = {count ? list : NULL, count, mask_nodata};
    return tt_raster_set_open(dir, &po, out);
}

tt_status tt_raster_set_open(const char *dir, const tt_raster_pair_options *options,
                             tt_raster_set **out)
{
    *out = NULL;
    char images[4096], masks[4096], image[8192], mask[8192];
    snprintf(images, sizeof images, "%s/images", dir);
    snprintf(masks, sizeof masks, "%s/masks", dir);
    if (!is_dir(images) || !is_dir(masks))
        return tt_error_new(TT_ERR_IO, "%s: a raster data set holds images/ and masks/ (NAME.tif "
                            "in each); %s is missing", dir, is_dir(images) ? masks : images);
    int count = 0;
    char **names = tiff_names(images, &count);
    if (count < 0)
        return tt_error_new(TT_ERR_IO, "%s: cannot be listed (or out of host memory)", images);
    if (count == 0) {
        free(names);
        return tt_error_new(TT_ERR_FORMAT, "%s: no .tif raster in it; put the image rasters "
                            "there, their masks in %s under the same names", images, masks);
    }
    tt_raster_set *set = tt_calloc(1, sizeof *set);
    tt_status status = NULL;
    if (!set || !(set->pairs = tt_calloc((size_t)count, sizeof *set->pairs))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", dir);
        goto cleanup;
    }
    set->names = names, set->count = count;
    names = NULL;
    for (int i = 0; i < count; i++) {
        snprintf(image, sizeof image, "%s/%s", images, set->names[i]);
        if (!find_mask(masks, set->names[i], mask, sizeof mask)) {
            status = tt_error_new(TT_ERR_FORMAT, "%s: no mask for it (%s is missing); add its "
                                  "labels there on the image's grid, or move the image out of "
                                  "%s", image, mask, images);
            goto cleanup;
        }
        TT_CHECK(tt_raster_pair_open(image, mask, options, &set->pairs[i]));
        int first = tt_raster_pair_get_info(set->pairs[0])->channels;
        int here = tt_raster_pair_get_info(set->pairs[i])->channels;
        if (here != first) {
            status = tt_error_new(TT_ERR_FORMAT, "%s: %d bands, and %s has %d; a model takes one "
                                  "band count: choose the same bands of each with --bands",
                                  image, here, set->names[0], first);
            goto cleanup;
        }
    }
cleanup:
    free_names(names, count);
    if (status) {
        tt_raster_set_destroy(set);
        return status;
    }
    *out = set;
    return NULL;
}
