/*
 * `tiletrain export --verify`: the ONNX file run in onnxruntime against
 * tiletrain's own prediction.  For a random image (and a real one when
 * given) of the model's tile, tiletrain's logits come from predict's path
 * (tt_predict_image, one tile: the model's forward on the normalised
 * image); the pixel values and those logits (after the file's sigmoid or
 * softmax, if it has one) go to files in a temporary folder, and the
 * embedded tools/onnx_verify.py runs the file on the same pixels in
 * onnxruntime and compares: max |diff| / max |output| must be at most
 * 1e-4.  Its lines are printed as they come.
 */
#ifndef TT_CLI_EXPORT_VERIFY_H
#define TT_CLI_EXPORT_VERIFY_H

#include "deploy/onnx_export.h"
#include "infer/model_load.h"

typedef struct tt_export_check {
    const char *onnx;     /* the file export wrote */
    const char *python;   /* NULL or "": venv/bin/python3 beside the binary, else python3 */
    const char *image;    /* NULL: the random image only */
    tt_onnx_head head;    /* what the file's output is */
} tt_export_check;

/* Errors: TT_ERR_FORMAT (the outputs differ: the checker's lines say by
 * how much), TT_ERR_UNSUPPORTED (onnxruntime or numpy missing: the message
 * gives the pip command), TT_ERR_IO (the temporary folder, the image, the
 * interpreter), the model's errors. */
tt_status tt_export_verify(tt_infer_model *model, const tt_export_check *check);

#endif
