/*
 * Checkpoints: one safetensors file per save, written atomically (temporary
 * file, fsync, rename).  It holds
 *   - the model's tensors under their PyTorch state_dict names
 *     (model/weights.h), batch norm running statistics and
 *     num_batches_tracked included, so `model.load_state_dict({k: v for k, v
 *     in f.items() if not k.startswith("optim.")})` loads them into
 *     python/tiletrain_torch.py's UNet;
 *   - the optimizer state: optim.<name>.<state> (exp_avg and exp_avg_sq
 *     for AdamW, momentum_buffer for SGD);
 *   - in __metadata__: format, the run's counters (step, updates,
 *     micro_batches, images_seen, skipped_steps), the data position
 *     (sampler seed, epoch, position), the optimizer, the model (JSON) and
 *     what prediction needs of the data (class names, mask kind, mean/std);
 *     a data-parallel run adds world_size and sampler.ranks, the stream
 *     index of every rank's next crop (rank 0's is the position above).
 */
#ifndef TT_TRAIN_CHECKPOINT_H
#define TT_TRAIN_CHECKPOINT_H

#include "data/raster_pair.h"
#include "data/sampler.h"
#include "infer/pp_search.h"
#include "train/loss_scale.h"
#include "train/step.h"

#define TT_CHECKPOINT_FORMAT "tiletrain-checkpoint/1"

/* The run's position, saved and restored whole. */
#define TT_KEEP_BEST_MAX 16

/* Validation's record: the best so far (best.safetensors), the validations
 * since (--patience), and the checkpoints --keep-best keeps, best first. */
typedef struct tt_validation_state {
    double best;              /* mean Dice; -1 before the first validation */
    int64_t best_step;
    int64_t since_best;       /* validations since the best (0 at it) */
    int kept;
    struct { int64_t step; double score; } keep[TT_KEEP_BEST_MAX];
} tt_validation_state;

typedef struct tt_train_counters {
    int64_t step;             /* windows done */
    int64_t micro_batches;    /* of every rank */
    int64_t images_seen;      /* crops trained on, over the whole run (every rank's) */
    int64_t skipped_steps;
    tt_sampler_state sampler; /* after the last batch used */
    tt_loss_scale loss_scale; /* dynamic loss scaling's state (scale 0: none) */
    tt_validation_state validation;
} tt_train_counters;

/* Where every rank of a data-parallel run stands (a single process: one). */
typedef struct tt_checkpoint_ranks {
    int world_size;
    const int64_t *next;      /* (world_size) each rank's next crop, a stream index */
} tt_checkpoint_ranks;

/* What prediction needs to know of the data. */
typedef struct tt_checkpoint_data {
    int named_classes;               /* class_names has this many; classes above are "classN" */
    const char *const *class_names;
    tt_mask_kind mask_kind;
    int normalize;                   /* mean and std given */
    float mean[3], std[3];
    tt_checkpoint_ranks ranks;       /* world_size 0 or 1: a single process */
    const tt_pp_choice *postprocess; /* per class, the search's (metadata "postprocess"); NULL */
    const tt_band_norm *bands;       /* a raster run's bands and their normalisation (metadata
                                        "bands", "band_mean", "band_std"); NULL: RGB */
} tt_checkpoint_data;

/* Saves everything a resume needs. */
tt_status tt_checkpoint_save(tt_step *step, const tt_train_counters *counters,
                             const tt_checkpoint_data *data, const char *path);

/* Restores weights, optimizer state and counters into the engine and
 * *counters; the model and optimizer of the file must be the engine's (an
 * error names what differs).  The caller restores the sampler's position.
 * *world_size: the world that wrote it (1 for a single process); *next
 * (may be NULL): the stream index of rank `rank`'s next crop in that world
 * (-1 when the file has no such rank). */
tt_status tt_checkpoint_resume(tt_step *step, tt_train_counters *counters, const char *path,
                               int rank, int *world_size, int64_t *next);

#endif
