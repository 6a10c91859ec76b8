/*
 * A trained model as an ONNX file (`tiletrain export`).
 *
 * The graph takes `image`, float (N, 3, H, W) pixel values 0..255, and
 * gives `logits` (N, classes, H, W), or `probabilities` with a sigmoid or
 * a softmax over the classes after them.  Its first nodes are the
 * checkpoint's normalisation, (image / 255 - mean) / std per channel, as
 * prediction feeds the model; then one node or a few per layer of the
 * model's layer list (model/graph.h), its parameters as initializers under
 * their PyTorch state_dict names.  Batch norms after a convolution are
 * folded into it (the convolution's weight and bias, under its names) or
 * kept as BatchNormalization nodes; group norms are InstanceNormalization
 * over (N, groups, -1) between two Reshapes, then the per-channel affine,
 * so any opset from 7 takes them.  Ops that need a newer opset (Resize and
 * Softmax: 13) are refused by name under an older one.
 *
 * Built without protobuf-c, tt_onnx_export says so and what to install.
 */
#ifndef TT_DEPLOY_ONNX_EXPORT_H
#define TT_DEPLOY_ONNX_EXPORT_H

#include "model/model.h"

#define TT_ONNX_OPSET_MIN 7
#define TT_ONNX_OPSET_MAX 21
#define TT_ONNX_OPSET_DEFAULT 17

typedef enum tt_onnx_batch_norm {
    TT_ONNX_BN_FOLD, /* into the convolution before it, where it is that one's only reader */
    TT_ONNX_BN_KEEP, /* BatchNormalization nodes with the running statistics */
} tt_onnx_batch_norm;

typedef enum tt_onnx_head {
    TT_ONNX_HEAD_LOGITS,
    TT_ONNX_HEAD_SIGMOID, /* per class: multi-label */
    TT_ONNX_HEAD_SOFTMAX, /* across classes: class-index */
} tt_onnx_head;

typedef struct tt_onnx_options {
    int opset;                 /* TT_ONNX_OPSET_MIN .. TT_ONNX_OPSET_MAX */
    int dynamic_size;          /* N, H and W symbolic; else N 1 and the model's tile */
    tt_onnx_batch_norm batch_norm;
    tt_onnx_head head;
    float mean[3], std[3];     /* after / 255 (the checkpoint's) */
    const char *description;   /* the model's, for the file's doc and metadata */
} tt_onnx_options;

/* opset 17, fixed size, batch norm folded, logits, mean 0, std 1. */
tt_onnx_options tt_onnx_options_default(void);

/* NULL when this build writes ONNX (it was built with protobuf-c); else
 * TT_ERR_UNSUPPORTED saying what to install. */
tt_status tt_onnx_built(void);

/* Writes `model` (a layer-list model, any kind of model.c's table; its
 * weights read back from its device) to `path` as described above, through
 * PATH.tmp renamed on success: on any failure no file is left at either.
 * The fixed size is the model's tile (model->height x width).  Errors:
 * TT_ERR_INVALID_ARGUMENT (an opset out of range or too old for an op the
 * model needs, naming the op, the layer and the opset to give; a model
 * that is not a layer list; a model not of 3 input channels),
 * TT_ERR_UNSUPPORTED (built without protobuf-c), TT_ERR_IO naming the
 * path, the device's errors. */
tt_status tt_onnx_export(tt_model *model, const tt_onnx_options *options, const char *path);

#endif
