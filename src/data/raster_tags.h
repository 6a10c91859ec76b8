/*
 * The GeoTIFF tags a raster's georeference lives in (the GeoTIFF 1.1
 * standard's numbers) and GDAL's nodata tag, for raster.c (reads them) and
 * raster_write.c (registers them with libtiff and writes them).
 */
#ifndef TT_DATA_RASTER_TAGS_H
#define TT_DATA_RASTER_TAGS_H

#define TT_TAG_PIXEL_SCALE 33550    /* ModelPixelScaleTag: DOUBLE x 3 */
#define TT_TAG_TIEPOINT 33922       /* ModelTiepointTag: DOUBLE x 6K */
#define TT_TAG_TRANSFORMATION 34264 /* ModelTransformationTag: DOUBLE x 16 */
#define TT_TAG_GEO_KEYS 34735       /* GeoKeyDirectoryTag: SHORT x 4(1 + keys) */
#define TT_TAG_GEO_DOUBLES 34736    /* GeoDoubleParamsTag: DOUBLE */
#define TT_TAG_GEO_ASCII 34737      /* GeoAsciiParamsTag: ASCII */
#define TT_TAG_GDAL_NODATA 42113    /* GDAL_NODATA: ASCII */

#endif
