/*
 * Checkpoints: one safetensors file per save, written atomically (temporary
 * file, fsync, rename).  It holds
 *   - the weights under PyTorch's state_dict names (torch_unet.py), batch
 *     norm running statistics and num_batches_tracked included, so
 *     `model.load_state_dict({k: v for k, v in f.items() if not
 *     k.startswith("optim.")})` loads them in PyTorch;
 *   - the optimizer state: optim.<name>.exp_avg / exp_avg_sq (AdamW) or
 *     optim.<name>.momentum_buffer (SGD);
 *   - in __metadata__: format, counters (step, updates, micro_batches,
 *     skipped_steps), the data position (sampler seed, epoch, position),
 *     the optimizer and the model configuration.
 */
#ifndef TT_TRAIN_CHECKPOINT_H
#define TT_TRAIN_CHECKPOINT_H

#include "model/unet.h"
#include "io/safetensors.h"

struct tt_trainer;

#define TT_CHECKPOINT_FORMAT "tiletrain-checkpoint/1"

/* Saves everything a resume needs. */
tt_status tt_checkpoint_save(struct tt_trainer *trainer, const char *path);

/* Restores weights, optimizer state, counters and data position; the
 * model and optimizer of the file must be those of the trainer (an error
 * names what differs).  Call before the prefetch thread starts. */
tt_status tt_checkpoint_resume(struct tt_trainer *trainer, const char *path);

/* Loads only the weights (and running statistics when present) into a
 * model: every trainable tensor must be there with its shape, else an
 * error names it.  Errors are prefixed "--init PATH" (train's option). */
tt_status tt_checkpoint_load_weights(tt_unet *unet, const char *path);

/* What tt_checkpoint_read_weights requires besides the trainable tensors;
 * what is not required is taken when present. */
typedef enum tt_checkpoint_need {
    TT_CHECKPOINT_NEED_WEIGHTS, /* --init: running statistics optional */
    TT_CHECKPOINT_NEED_STATS,   /* prediction: batch norm running mean and var too */
    TT_CHECKPOINT_NEED_ALL,     /* resume: num_batches_tracked too */
} tt_checkpoint_need;

/* The loader behind tt_checkpoint_load_weights, for a file the caller has
 * open (e.g. to read its metadata too): trainable tensors, running
 * statistics and num_batches_tracked by name into unet.  Errors name the
 * tensor, not the file; the caller prefixes that. */
tt_status tt_checkpoint_read_weights(tt_unet *unet, const tt_safetensors *file,
                                     tt_checkpoint_need need);

/* Writes the gradient arena under the parameter names. */
tt_status tt_checkpoint_save_grads(tt_unet *unet, const char *path);

#endif
