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
 * error names it. */
tt_status tt_checkpoint_load_weights(tt_unet *unet, const char *path);

/* Writes the gradient arena under the parameter names. */
tt_status tt_checkpoint_save_grads(tt_unet *unet, const char *path);

#endif
