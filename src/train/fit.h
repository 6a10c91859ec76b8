/*
 * Fitting a run under a memory limit before anything is allocated, from
 * the engine's own estimate (the step engine on a dry backend).
 */
#ifndef TT_TRAIN_FIT_H
#define TT_TRAIN_FIT_H

#include "train/recipe.h"

/* The estimated peak of a run of these options with this micro-batch,
 * tile and checkpointing on a device like `device`; UINT64_MAX when a
 * single buffer would be too large for it. */
tt_status tt_fit_estimate(const tt_device_info *device, const tt_train_options *options,
                          const tt_model_spec *model, tt_mask_kind kind, int planes,
                          int micro_batch, const int tile[2], int checkpointing, uint64_t *peak);

/* Fits the run under --mem-limit (else the device's memory less a
 * margin): picks the micro-batch (and accum) for --micro-batch auto, turns
 * checkpointing on in *model when even one image does not fit without it,
 * or fails naming a micro-batch or a tile that would fit.  Says what it
 * chose on stderr. */
tt_status tt_fit_memory(const tt_device_info *device, tt_train_options *options,
                        tt_model_spec *model, tt_mask_kind kind, int planes);
/* The same, saying nothing (the caller reports the choice its own way). */
tt_status tt_fit_memory_silently(const tt_device_info *device, tt_train_options *options,
                                 tt_model_spec *model, tt_mask_kind kind, int planes);

#endif
