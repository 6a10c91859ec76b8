/*
 * A model's tensors in safetensors files, by PyTorch state_dict name.
 *
 * Trainable tensors and running statistics are F32 under their names
 * (model->params), the model's counters (batch norm num_batches_tracked)
 * I64 scalars; so a file loads into PyTorch with load_state_dict and a
 * PyTorch state_dict saved as safetensors loads here.  Checkpoints
 * (train/checkpoint.c) add the optimizer state and the run's counters
 * around these; prediction reads only these.
 */
#ifndef TT_MODEL_WEIGHTS_H
#define TT_MODEL_WEIGHTS_H

#include "model/model.h"
#include "io/safetensors.h"

/* What tt_weights_read requires besides the trainable tensors; what is
 * not required is taken when present. */
typedef enum tt_weights_need {
    TT_WEIGHTS_NEED_WEIGHTS, /* --init: running statistics optional */
    TT_WEIGHTS_NEED_STATS,   /* prediction: batch norm running mean and var too */
    TT_WEIGHTS_NEED_ALL,     /* resume: the counters too */
} tt_weights_need;

/* Adds every tensor and counter of the model to a writer. */
tt_status tt_weights_add(tt_st_writer *writer, tt_model *model);

/* Reads trainable tensors, running statistics and counters by name into
 * the model, one tensor at a time (no host copy of the whole model).
 * Errors name the tensor, not the file; the caller prefixes that.  After an
 * error the model holds some of the file's tensors: load again or drop it. */
tt_status tt_weights_read(tt_model *model, const tt_safetensors *file, tt_weights_need need);

/* tt_weights_read of a file by path, weights only (train's --init); errors
 * are prefixed "--init PATH". */
tt_status tt_weights_load(tt_model *model, const char *path);

/* What --init found, as PyTorch's load_state_dict(strict=False) reports it. */
#define TT_WEIGHTS_REPORT_NAMES 6
typedef struct tt_weights_report {
    int matched;          /* model tensors and counters loaded */
    int missing;          /* model tensors and counters the file lacks (kept as they were) */
    int unexpected;       /* file tensors the model lacks */
    int ignored;          /* a tiletrain checkpoint's optimizer state (optim.*) */
    char missing_names[TT_WEIGHTS_REPORT_NAMES][96];    /* the first ones */
    char unexpected_names[TT_WEIGHTS_REPORT_NAMES][96];
} tt_weights_report;

/* Loads every tensor of the file at `path` whose name, with `prefix` put
 * before it (NULL or "": none; "encoder." loads a bare torchvision ResNet
 * into a model's encoder), is one of the model's: parameters, running
 * statistics and counters; the others stay as they are.  A shape that
 * differs is an error naming the tensor and both shapes; a file of which
 * nothing matches is an error (another model, or another prefix).  Errors
 * are prefixed "--init PATH". */
tt_status tt_weights_init(tt_model *model, const char *path, const char *prefix,
                          tt_weights_report *report);
/* One paragraph: "matched 106 tensors; missing 54, kept as initialised
 * (decoder..., ...); unexpected 2, not used (fc.weight, fc.bias)". */
void tt_weights_report_text(const tt_weights_report *report, char *buf, size_t size);

/* Writes the gradient arena under the parameter names. */
tt_status tt_weights_save_grads(tt_model *model, const char *path);

/* ---- arenas by name, for state laid out like the parameters -------------- */

/* A host copy of `floats` floats of a device buffer; without a buffer, a
 * zeroed array.  *out: free(). */
tt_status tt_weights_download(tt_backend *be, tt_buffer *buffer, size_t floats, float **out);
/* Adds each tensor of the table (trainable or state ones) of a host arena
 * under prefix + name + suffix. */
tt_status tt_weights_add_arena(tt_st_writer *writer, const tt_param_table *table,
                               const float *arena, int trainable, const char *prefix,
                               const char *suffix);
/* Reads each tensor of the table (trainable or state ones) from prefix +
 * name + suffix into the device buffer that holds that arena, at its
 * offset, through a host array of the largest tensor only; with `optional`
 * a tensor the file lacks is left as it was, else it is an error.  The
 * buffer's alignment gaps keep what they hold.  A NULL buffer (an arena
 * with no tensors) reads nothing. */
tt_status tt_weights_upload_arena(tt_backend *be, tt_buffer *buffer, const tt_safetensors *file,
                                  const tt_param_table *table, int trainable, const char *prefix,
                                  const char *suffix, int optional);
/* Reads each tensor of the table (trainable or state ones) from prefix +
 * name + suffix into a host arena; a missing or misshapen one is an error. */
tt_status tt_weights_read_arena(const tt_safetensors *file, const tt_param_table *table,
                                float *arena, int trainable, const char *prefix,
                                const char *suffix);

#endif
