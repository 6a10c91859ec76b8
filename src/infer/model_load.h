/*
 * A trained model for prediction, from a safetensors checkpoint.
 *
 * The checkpoint's __metadata__ says what the model is:
 *   "model":     JSON object, required: {"in_channels": 3, "classes": 4,
 *                "base_channels": 16, "depth": 3, "norm": "group",
 *                "groups": 8} (tt_model_spec_parse: "kind" absent means
 *                "unet", missing keys take tt_model_spec_default's values,
 *                except classes, which is required);
 *   "classes":   JSON array of class names, optional;
 *   "mask_kind": "class-index" or "multi-label", optional (or "format":
 *                "folder" / "kaggle-rle", as the data set was);
 *   "mean", "std": JSON arrays of 3 numbers, optional: the input
 *                normalisation after / 255 that training used.
 *   "bands", "band_mean", "band_std": JSON arrays of one number per input
 *                channel, optional: a raster run's bands (from 1) and each
 *                one's mean and std in its samples' own scale.
 *   "tile":      "HxW", optional: the crop size training ran at (export's
 *                default input size; read by the CLI, not here).
 * This is the "model" JSON that train/checkpoint.c writes, so `tiletrain
 * train` checkpoints load as they are.  The weights are read by
 * tt_weights_read: tensors under the PyTorch state_dict names of the
 * model (F32, exact shapes), batch norm running statistics
 * required, num_batches_tracked taken when present; other tensors
 * (optimizer state) are ignored.
 */
#ifndef TT_INFER_MODEL_LOAD_H
#define TT_INFER_MODEL_LOAD_H

#include "data/raster_pair.h"
#include "model/model.h"

typedef enum tt_infer_kind {
    TT_INFER_KIND_UNKNOWN,     /* the checkpoint does not say */
    TT_INFER_KIND_CLASS_INDEX, /* softmax over classes, argmax map (folder data sets) */
    TT_INFER_KIND_MULTI_LABEL, /* sigmoid per class, thresholded planes (kaggle-rle) */
} tt_infer_kind;

typedef struct tt_infer_model {
    tt_model *model;
    tt_model_spec spec;
    char **class_names;   /* (spec.classes) never NULL entries: "0", "1".. when unnamed */
    tt_infer_kind kind;
    float mean[3], std[3]; /* 0 and 1 when the checkpoint does not say */
    tt_band_norm bands;    /* a raster run's input bands and their normalisation (count 0:
                              RGB; metadata "bands", "band_mean", "band_std") */
    /* the training run's post-processing search (metadata "postprocess"):
     * per class (spec.classes), or NULL when the checkpoint has none */
    float *class_threshold;
    int *class_min_size;
} tt_infer_model;

/* Opens `path`, reads its metadata, builds the model on `be` for
 * `capacity` tiles of tile_h x tile_w, its convolutions run by `algo`
 * (TT_CONV_ALGO_AUTO: the autotuner's pick) and what it keeps stored in
 * `precision` (fp32, fp16 or bf16; model.h), and loads the weights (those of
 * the moving average, ema.<name>, when the run kept one: --ema).  Errors name the file:
 * TT_ERR_IO / TT_ERR_FORMAT from the reader, TT_ERR_FORMAT for missing or
 * bad metadata or a missing or misshapen tensor, the model's errors for a
 * bad tile.  *model: tt_infer_model_free(). */
tt_status tt_infer_model_load(tt_backend *be, const char *path, int capacity, int tile_h,
                              int tile_w, tt_conv_algo algo, tt_precision precision,
                              tt_infer_model *model);
/* The checkpoint's raw weights in place of its moving average (predict and
 * eval --weights raw); nothing to do for a checkpoint without one.
 * `path`: the file the model was loaded from. */
tt_status tt_infer_model_use_raw(tt_infer_model *model, const char *path);

/* Frees everything; the struct is zeroed.  NULL allowed. */
void tt_infer_model_free(tt_infer_model *model);

#endif
