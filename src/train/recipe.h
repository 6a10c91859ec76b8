/*
 * What a run's options mean for the device side: the model spec, the step
 * engine's configuration and the learning-rate schedule.  `train`, `mem`
 * and `bench` all build their engines through these, so the three agree on
 * what a set of options allocates and runs.
 */
#ifndef TT_TRAIN_RECIPE_H
#define TT_TRAIN_RECIPE_H

#include "optim/schedule.h"
#include "train/step.h"
#include "train/train_options.h"

/* The model the options describe.  data_classes: the data set's class
 * count (0 without a data set: --classes, else 4); --classes below it is
 * an error naming the data set. */
tt_status tt_recipe_model(const tt_train_options *options, int data_classes, tt_model_spec *out);

/* The step engine of a run of these options on this model and labels. */
tt_step_config tt_recipe_step(const tt_train_options *options, const tt_model_spec *model,
                              tt_mask_kind kind, int planes);

/* The run's configuration as a JSON object (train.jsonl's "config", mem
 * --json's): tile, micro-batch, accum, the model and the optimizer.  The
 * caller owns it (cJSON_Delete); NULL when host memory runs out. */
struct cJSON;
struct cJSON *tt_recipe_json(const tt_train_options *options, const tt_model_spec *model);

/* --encoder-lr and --freeze-encoder-steps: the optimizer's parameter
 * groups, the encoder's tensors ("encoder.*", the first range of the
 * arena) and the rest; nothing without those options.  The encoder group
 * is index 0 (tt_recipe_freeze). */
tt_status tt_recipe_groups(const tt_train_options *options, const tt_param_table *params,
                           tt_optimizer *optimizer);
/* Before step `step` (1-based): the encoder group frozen while step <=
 * --freeze-encoder-steps. */
void tt_recipe_freeze(const tt_train_options *options, tt_optimizer *optimizer, int64_t step);

/* The backend the options ask for (--backend, --device, profiling). */
tt_status tt_recipe_backend(const tt_train_options *options, tt_backend_request *out);

/* The schedule: a kind name plus --warmup and friends, or the full
 * "kind:key=value" form of tt_schedule_parse. */
tt_status tt_recipe_schedule(const tt_train_options *options, tt_schedule *out);

#endif
