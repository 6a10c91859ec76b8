/* `tiletrain data check` on raster pairs; see cmd_data_raster.h. */
#include "cli/cmd_data_raster.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/common.h"
#include "core/alloc.h"
#include "core/status.h"
#include "data/raster_set.h"
#include "data/raster_stats.h"

static double share(uint64_t part, uint64_t whole) { return whole ? (double)part / whole : 0; }

static cJSON *pair_json(tt_raster_set *set, int i, const tt_raster_stats *st)
{
    const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, i));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", tt_raster_set_name(set, i));
    cJSON_AddNumberToObject(o, "width", in->width);
    cJSON_AddNumberToObject(o, "height", in->height);
    cJSON_AddNumberToObject(o, "bands", in->raster_bands);
    cJSON_AddStringToObject(o, "sample", tt_raster_sample_name(in->sample));
    cJSON_AddStringToObject(o, "layout", in->tiled ? "tiles" : "strips");
    cJSON_AddBoolToObject(o, "bigtiff", in->bigtiff);
    if (in->has_nodata) cJSON_AddNumberToObject(o, "nodata", in->nodata);
    cJSON_AddNumberToObject(o, "nodata_share", share(st->nodata, st->pixels));
    return o;
}

static void print_pair(tt_raster_set *set, int i, const tt_raster_stats *st)
{
    const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, i));
    char nodata[48] = "no nodata";
    if (in->has_nodata) snprintf(nodata, sizeof nodata, "nodata %g", in->nodata);
    printf("  %-24s %dx%d, %d band%s of %s, %s of %dx%d%s, %s: %.2f%% of the pixels read\n",
           tt_raster_set_name(set, i), in->width, in->height, in->raster_bands,
           in->raster_bands == 1 ? "" : "s", tt_raster_sample_name(in->sample),
           in->tiled ? "tiles" : "strips", in->block_w, in->block_h, in->bigtiff ? ", BigTIFF" : "",
           nodata, 100 * share(st->nodata, st->pixels));
}

static void add_stats(tt_raster_stats *all, const tt_raster_stats *one)
{
    all->channels = one->channels;
    all->pixels += one->pixels, all->nodata += one->nodata, all->ignored += one->ignored;
    for (int v = 0; v < 256; v++) all->class_pixels[v] += one->class_pixels[v];
    for (int c = 0; c < one->channels; c++)
        all->sum[c] += one->sum[c], all->sum_sq[c] += one->sum_sq[c];
}

int tt_data_check_rasters(const char *dir, const char *bands, int mask_nodata, int json)
{
    tt_raster_set *set = NULL;
    tt_raster_stats all = {0}, *each = NULL;
    tt_status status = NULL;
    TT_CHECK(tt_raster_set_open_flags(dir, bands, mask_nodata, &set));
    int n = tt_raster_set_count(set);
    if (!(each = tt_calloc((size_t)n, sizeof *each))) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        TT_CHECK(tt_raster_stats_add(tt_raster_set_pair(set, i), 8, 256, &each[i]));
        add_stats(&all, &each[i]);
    }
    tt_raster_stats_finish(&all);
    const tt_raster_pair_info *first = tt_raster_pair_get_info(tt_raster_set_pair(set, 0));
    if (json) {
        cJSON *root = cJSON_CreateObject(), *rasters = cJSON_AddArrayToObject(root, "rasters");
        cJSON_AddStringToObject(root, "dir", dir);
        cJSON_AddStringToObject(root, "format", "raster");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(rasters, pair_json(set, i, &each[i]));
        cJSON *b = cJSON_AddArrayToObject(root, "bands");
        for (int c = 0; c < all.channels; c++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "band", first->bands[c]);
            cJSON_AddNumberToObject(o, "mean", all.mean[c]);
            cJSON_AddNumberToObject(o, "std", all.std[c]);
            cJSON_AddItemToArray(b, o);
        }
        cJSON_AddNumberToObject(root, "pixels_read", (double)all.pixels);
        cJSON_AddNumberToObject(root, "nodata_share", share(all.nodata, all.pixels));
        cJSON_AddNumberToObject(root, "ignore_share", share(all.ignored, all.pixels));
        cJSON *cls = cJSON_AddArrayToObject(root, "classes");
        for (int v = 0; v < 255; v++)
            if (all.class_pixels[v]) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "value", v);
                cJSON_AddNumberToObject(o, "share", share(all.class_pixels[v], all.pixels));
                cJSON_AddItemToArray(cls, o);
            }
        cJSON_AddBoolToObject(root, "ok", 1);
        char *text = cJSON_Print(root);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(root);
    } else {
        printf("data set  %s (raster)\n", dir);
        printf("rasters   %d raster pair%s, %d band%s chosen, read from a grid of 8x8 crops of "
               "256 px each\n", n, n == 1 ? "" : "s", all.channels, all.channels == 1 ? "" : "s");
        for (int i = 0; i < n; i++) print_pair(set, i, &each[i]);
        printf("bands    ");
        for (int c = 0; c < all.channels; c++)
            printf(" %d: mean %.4g std %.4g%s", first->bands[c], all.mean[c], all.std[c],
                   c + 1 < all.channels ? ";" : "\n");
        printf("nodata    %.2f%% of the pixels read; ignored in the loss %.2f%% (nodata, mask "
               "255%s)\n", 100 * share(all.nodata, all.pixels), 100 * share(all.ignored, all.pixels),
               mask_nodata >= 0 ? " and --mask-nodata" : "");
        printf("classes   (class index per pixel, of the pixels read)\n");
        for (int v = 0; v < 255; v++)
            if (all.class_pixels[v])
                printf("  %-20d %14llu px  %6.2f%%\n", v, (unsigned long long)all.class_pixels[v],
                       100 * share(all.class_pixels[v], all.pixels));
    }
cleanup:
    free(each);
    tt_raster_set_destroy(set);
    return status ? tt_cli_fail(status) : 0;
}
