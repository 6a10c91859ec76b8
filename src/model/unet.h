/*
 * The UNet (unet_config.h) as a model of kind "unet": a layer list run by
 * the executor (unet.c, model/exec.c), every step of it: fp32 or 16-bit
 * storage, with or without checkpointing, and the banded step (16-bit
 * storage with checkpointing and a norm, model/exec_band.c).
 *
 * A model is built for a micro-batch capacity and a tile (H, W multiples
 * of 2^depth); forward and backward may run on fewer images (the short last
 * micro-batch).  Backward ADDS into the gradient arena, so N micro-batches
 * accumulate; the trainer zeroes it once per window.
 */
#ifndef TT_MODEL_UNET_H
#define TT_MODEL_UNET_H

#include "backend/backend.h"
#include "model/model.h"
#include "model/unet_config.h"

#define TT_UNET_MAX_DEPTH 8

/* The UNet as a tt_model of kind "unet" (its row in model.c's table).
 * Parameters are initialised from `seed` (PyTorch's default
 * distributions).  *out: tt_model_destroy(). */
tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out);

/* The UNet's configuration from a spec of kind "unet", and back. */
tt_unet_config tt_unet_config_of(const tt_model_spec *spec);
tt_model_spec tt_unet_spec_of(const tt_unet_config *config);

#endif
