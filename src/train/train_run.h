/*
 * A whole training run of a resolved recipe (tt_recipe_resolve), the one
 * path `tiletrain train` and the library's tt_train_args (the Python
 * package) both take: --plan auto's OUT/plan.json; the trainer; the recipe and plan lines of the log;
 * the windows, with validation and checkpoints at their intervals; after
 * the last (or an interrupt), the end's validation, OUT/last.safetensors,
 * the memory and profile lines and OUT/report.html.  Nothing is printed to
 * stdout: the caller's hooks see each stage and say what they like.
 */
#ifndef TT_TRAIN_TRAIN_RUN_H
#define TT_TRAIN_TRAIN_RUN_H

#include "train/metrics.h"
#include "train/recipe.h"
#include "train/trainer.h"

typedef struct tt_train_hooks {
    void *ctx;                                          /* passed to every hook */
    /* each may be NULL */
    void (*on_start)(void *ctx, tt_trainer *t);         /* made; before the first window */
    void (*on_micro_batch)(void *ctx, int m, int accum);
    /* after each window: its report, or NULL when it failed or had no data */
    void (*on_step)(void *ctx, tt_trainer *t, const tt_step_report *report);
    void (*on_validation)(void *ctx, tt_trainer *t, const tt_metrics *metrics);
    /* last, before the trainer goes, with the run's status (not freed here) */
    void (*on_finish)(void *ctx, tt_trainer *t, tt_status status);
    /* set non-zero (a signal handler, a callback) to stop: the window is
     * dropped and OUT/last.safetensors holds the steps before it */
    volatile int *interrupt;
} tt_train_hooks;

typedef struct tt_train_outcome {
    long long steps, skipped_steps;
    int interrupted;      /* stopped through hooks->interrupt (the run's status is NULL) */
    int stopped_early;    /* --patience ran out; best_* say what is in best.safetensors */
    long long best_step, validations_since_best;
    double best_dice;
    int stopped_together; /* data parallel: the error was every rank's at once */
    int trainer_made;     /* the error came after the trainer was made */
    char report_error[256]; /* why report.html was not written; "" when it was or none is due */
} tt_train_outcome;

/* Runs `recipe` as rank dist->rank of a job (dist NULL: alone); hooks may be
 * NULL.  The recipe's data set and backend go to the trainer.  Returns the
 * first error (a window's, a validation's, a checkpoint's); *outcome is
 * filled either way. */
tt_status tt_train_run(tt_recipe *recipe, const tt_dist *dist, const tt_train_hooks *hooks,
                       tt_train_outcome *outcome);

#endif
