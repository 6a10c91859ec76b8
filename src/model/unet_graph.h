/* The UNet as a layer list on the executor (unet_graph.c): every step but
 * the banded one (unet_banded.c).  *out: tt_model_destroy(). */
#ifndef TT_MODEL_UNET_GRAPH_H
#define TT_MODEL_UNET_GRAPH_H

#include "model/unet.h"

tt_status tt_unet_graph_create(tt_backend *be, const tt_unet_config *config, int capacity,
                               int height, int width, uint64_t seed, tt_model **out);

#endif
