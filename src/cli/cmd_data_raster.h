/* `tiletrain data check` on a raster data set (data/raster_set.h). */
#ifndef TT_CLI_CMD_DATA_RASTER_H
#define TT_CLI_CMD_DATA_RASTER_H

/* Opens the set in dir with the bands (a list, or "" for all) and reports
 * each raster pair: size, bands, sample format, layout, nodata, and the
 * set's band statistics, nodata and ignored shares and class pixels, from
 * a grid of crops; as text, or one JSON object.  Returns 0, or 1 (the
 * error printed naming the file). */
int tt_data_check_rasters(const char *dir, const char *bands, int mask_nodata, int json);

#endif
