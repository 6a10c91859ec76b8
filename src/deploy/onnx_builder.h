/*
 * An ONNX model under construction, through protobuf-c's messages of the
 * IR subset in onnx_ir.proto: nodes in order, float and int64
 * initializers, the graph's input and output, and the file written from
 * them (protobuf_c_message_pack; nothing encoded by hand).
 *
 * The builder owns every message and string it makes.  Functions that add
 * return NULL when host memory ran out or the opset is too old for the op;
 * the first such failure is kept and tt_onnx_builder_write returns it, so a
 * caller adds everything and checks once.
 */
#ifndef TT_DEPLOY_ONNX_BUILDER_H
#define TT_DEPLOY_ONNX_BUILDER_H

#include <stdint.h>

#include "onnx_ir.pb-c.h"
#include "tiletrain.h"

typedef struct tt_onnx_builder tt_onnx_builder;

/* An empty graph for ONNX operator set `opset` (ai.onnx).  *out:
 * tt_onnx_builder_destroy() (NULL allowed). */
tt_status tt_onnx_builder_create(int opset, tt_onnx_builder **out);
void tt_onnx_builder_destroy(tt_onnx_builder *b);

/* Keeps an out-of-host-memory failure (a caller's allocation). */
void tt_onnx_out_of_memory(tt_onnx_builder *b);

/* The opset the builder writes. */
int tt_onnx_builder_opset(const tt_onnx_builder *b);

/* A name no other value of the graph has: `base`, or base + "_2", "_3"..
 * (owned by the builder). */
const char *tt_onnx_name(tt_onnx_builder *b, const char *base);

/* Node op_type(inputs) -> outputs, named `name`, appended in order; "" is an
 * absent optional input.  `layer` names the tiletrain layer for the error
 * when the opset is older than the op's version the exporter writes
 * (onnx_builder.c's table). */
Onnx__NodeProto *tt_onnx_node(tt_onnx_builder *b, const char *op_type, const char *layer,
                              int n_in, const char *const *inputs, int n_out,
                              const char *const *outputs);
/* Attributes of a node (a NULL node is ignored). */
void tt_onnx_attr_int(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, int64_t value);
void tt_onnx_attr_float(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, float value);
void tt_onnx_attr_string(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name,
                         const char *value);
void tt_onnx_attr_ints(tt_onnx_builder *b, Onnx__NodeProto *node, const char *name, int count,
                       const int64_t *values);

/* A float initializer of `ndim` dims under a unique name made from `name`;
 * the values are copied.  Returns that name, or NULL. */
const char *tt_onnx_init_f32(tt_onnx_builder *b, const char *name, int ndim, const int64_t *dims,
                             const float *values);
/* The same, its values not copied but pointed at: they must stay as they
 * are until tt_onnx_builder_write has written the file (a model's
 * parameters, which can be most of the host memory export needs). */
const char *tt_onnx_init_f32_in_place(tt_onnx_builder *b, const char *name, int ndim,
                                      const int64_t *dims, const float *values);
/* A 1-D int64 initializer (shapes, slices). */
const char *tt_onnx_init_i64(tt_onnx_builder *b, const char *name, int count,
                             const int64_t *values);

/* The graph's float input or output `name` of 4 dims: a dim > 0 is fixed,
 * else symbolic, called symbols[i]. */
void tt_onnx_graph_input(tt_onnx_builder *b, const char *name, const int64_t dims[4],
                         const char *const symbols[4]);
void tt_onnx_graph_output(tt_onnx_builder *b, const char *name, const int64_t dims[4],
                          const char *const symbols[4]);

/* A metadata_props entry of the model. */
void tt_onnx_metadata(tt_onnx_builder *b, const char *key, const char *value);

/* Packs the model (producer tiletrain `version`, graph `graph_name`) and
 * writes it to PATH.tmp, then renames that over `path`: a failure leaves
 * no file at PATH.tmp and whatever was at `path` as it was.  Returns the
 * first failure of the building first.  Errors: TT_ERR_IO naming the path
 * and the system's reason. */
tt_status tt_onnx_builder_write(tt_onnx_builder *b, const char *graph_name, const char *version,
                                const char *path);

#endif
