/* ONNX export in a build without protobuf-c (cmake/onnx.cmake): says so and
 * how to get it. */
#include "deploy/onnx_export.h"

#include "core/status.h"

tt_status tt_onnx_built(void)
{
    return tt_error_new(TT_ERR_UNSUPPORTED, "this tiletrain was built without ONNX export "
                        "(protobuf-c was not found, or -DTT_ONNX=OFF): install "
                        "protobuf-c-compiler and libprotobuf-c-dev (tools/deps.sh does) and build "
                        "again");
}

tt_status tt_onnx_export(tt_model *model, const tt_onnx_options *options, const char *path)
{
    (void)model, (void)options, (void)path;
    return tt_onnx_built();
}
