/*
 * A run's recipe: the options resolved once (tt_recipe_resolve) into one
 * typed struct the trainer takes whole, and what those options mean for
 * the device side: the model spec, the step engine's configuration and
 * the learning-rate schedule.  `train`, `mem` and `bench` all build their
 * engines through these, so the three agree on what a set of options
 * allocates and runs.
 */
#ifndef TT_TRAIN_RECIPE_H
#define TT_TRAIN_RECIPE_H

#include "data/augment.h"
#include "data/dataset.h"
#include "data/raster_set.h"
#include "data/raster_stats.h"
#include "dist/dist.h"
#include "optim/schedule.h"
#include "train/run_plan.h"
#include "train/step.h"
#include "train/train_options.h"

struct cJSON;


/* A run's recipe.  train's command line fills `opt` and `given`
 * (tt_opt_parse_args_given over train's table); everything
 * else is tt_recipe_resolve's, in one pass:
 *   1. defaults, --config and flags, each option given marked;
 *   2. the data set, opened once (the trainer takes it);
 *   3. the device: this rank's (data parallel), its backend created once;
 *   4. --plan: auto runs the plan's rules (train/run_plan.h) on the data
 *      set's fingerprint and this device over every option not given,
 *      FILE (or a resumed run's plan.json) sets its args likewise, off
 *      keeps the defaults; under mpirun rank 0's plan is every rank's;
 *   5. the model, the inputs' normalisation;
 *   6. --precision auto, timed on the device, rank 0's kept;
 *   7. the memory fit (a plan's memory rule has done it);
 *   8. the ranks' agreement on --micro-batch auto.
 * What it leaves in `opt` is what the run does: no later step parses,
 * plans or fits again. */
typedef struct tt_recipe {
    tt_train_options opt;
    unsigned char given[TT_TRAIN_OPTION_MAX]; /* by index of train's table */
    /* resolved */
    tt_model_spec model;
    tt_mask_kind mask_kind;
    int planes;                 /* label planes: classes (multi-label) or 1 */
    int normalize;              /* mean/std given, or a ResNet encoder's */
    float mean[3], std[3];      /* of pixels / 255 */
    char precision_reason[320]; /* --precision auto: what was chosen and why */
    tt_augment_config augment;  /* --augment's spec, parsed */
    tt_run_plan *plan;          /* --plan auto's choices and reasons; NULL without */
    char plan_file[TT_OPT_STRING_MAX + 16]; /* plan.json: to write (auto), read (FILE,
                                               a resume) or "" */
    tt_dataset *dataset;        /* owned until a trainer takes it (sets NULL); NULL for rasters */
    tt_raster_set *rasters;     /* a raster data set instead (--format raster, or detected):
                                   owned likewise */
    tt_raster_stats raster_stats; /* its bands' statistics, from a grid of crops */
    tt_band_norm bands;         /* its bands chosen and their normalisation (count 0: RGB) */
    tt_backend *be;             /* likewise */
    /* the caller's: every line of the run's log (train.jsonl's JSON
     * Lines, without the newline) also goes here; NULL: nowhere else */
    void (*on_log_line)(void *ctx, const char *line);
    void *log_ctx;
} tt_recipe;

/* The defaults (tt_train_options_default), nothing given. */
void tt_recipe_init(tt_recipe *recipe);
/* Resolves the recipe as described above, as rank dist->rank of a job
 * (dist NULL: alone).  Errors name the option or file at fault. */
tt_status tt_recipe_resolve(tt_recipe *recipe, const tt_dist *dist);
/* The recipe as rows {"option", "value", "from", "reason"} of every
 * option of train's table, in its order, with `opt` the run's final
 * options: from "flag" (the command line or --config), "plan" (with the
 * plan's reason), "plan file", "resolved" (fitted, measured or this rank's
 * device, with why) or "default".  NULL when out of memory; the caller
 * owns it (cJSON_Delete). */
struct cJSON *tt_recipe_table_json(const tt_recipe *recipe, const tt_train_options *opt);
/* Frees what the recipe still owns (data set, backend, plan). */
void tt_recipe_release(tt_recipe *recipe);

/* The model the options describe.  data_classes: the data set's class
 * count (0 without a data set: --classes, else 4); --classes below it is
 * an error naming the data set. */
tt_status tt_recipe_model(const tt_train_options *options, int data_classes, tt_model_spec *out);

/* --loss and --class-weights into out->loss and out->class_weights; an
 * error naming the option. */
tt_status tt_recipe_loss(const tt_train_options *options, tt_mask_kind kind, int classes,
                         tt_step_config *out);

/* The step engine of a run of these options on this model and labels
 * (options resolving refused for --loss fall back to the kind's default). */
tt_step_config tt_recipe_step(const tt_train_options *options, const tt_model_spec *model,
                              tt_mask_kind kind, int planes);

/* The run's configuration as a JSON object (train.jsonl's "config", mem
 * --json's): tile, micro-batch, accum, the model and the optimizer.  The
 * caller owns it (cJSON_Delete); NULL when host memory runs out. */
struct cJSON *tt_recipe_json(const tt_train_options *options, const tt_model_spec *model);

/* --encoder-lr as a scale of --lr (1 without it); an error naming it when
 * it is neither a rate nor a ratio ("0.1x"). */
tt_status tt_recipe_encoder_scale(const tt_train_options *options, double *scale);
/* Before step `step` (1-based): the encoder group frozen while step <=
 * --freeze-encoder-steps. */
void tt_recipe_freeze(const tt_train_options *options, tt_optimizer *optimizer, int64_t step);

/* The backend the options ask for (--backend, --device, profiling). */
tt_status tt_recipe_backend(const tt_train_options *options, tt_backend_request *out);

/* The schedule: a kind name plus --warmup and friends, or the full
 * "kind:key=value" form of tt_schedule_parse. */
tt_status tt_recipe_schedule(const tt_train_options *options, tt_schedule *out);

#endif
