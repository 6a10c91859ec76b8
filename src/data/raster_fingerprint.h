/*
 * A raster set's fingerprint (data/fingerprint.h), for the plan: the
 * rasters' sizes, the class-index labels, each class's share of the
 * labelled pixels and the share ignored (nodata included), from the band
 * statistics' grid of crops (data/raster_stats.h).  Regions are not
 * traced (a scene's are too many), so rules that size crops by them keep
 * their defaults.  A scene counts as its 512-pixel tiles, the unit the
 * crop sampler draws from: "images" is their number.
 */
#ifndef TT_DATA_RASTER_FINGERPRINT_H
#define TT_DATA_RASTER_FINGERPRINT_H

#include "data/fingerprint.h"
#include "data/raster_set.h"
#include "data/raster_stats.h"

#define TT_RASTER_FINGERPRINT_TILE 512

/* Fills *out from the set and its finished statistics.  TT_ERR_UNSUPPORTED
 * past TT_FINGERPRINT_MAX_CLASSES classes. */
tt_status tt_raster_fingerprint(tt_raster_set *set, const tt_raster_stats *stats,
                                tt_fingerprint *out);

#endif
