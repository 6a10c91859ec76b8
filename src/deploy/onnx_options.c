/* The export's defaults (onnx_export.h), in builds with and without protobuf-c. */
#include "deploy/onnx_export.h"

tt_onnx_options tt_onnx_options_default(void)
{
    return (tt_onnx_options){.opset = TT_ONNX_OPSET_DEFAULT, .std = {1, 1, 1}};
}
