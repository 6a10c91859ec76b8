/* tiletrain train: parses the flags, resolves the recipe and runs it
 * (train/train_run.c: the loop with gradient accumulation), saying on the
 * terminal what the run does. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/profile.h"
#include "cli/commands.h"
#include "cli/tune_progress.h"
#include "core/alloc.h"
#include "core/memstats.h"
#include "core/status.h"
#include "dist/dist.h"
#include "train/run_plan.h"
#include "train/train_run.h"
#include "train/trainer.h"

static const char *plan_note(const char *option)
{
    return tt_run_plan_chooses(option) ? "[train: from the plan]" : NULL;
}

static void help(void)
{
    printf("usage: tiletrain train --data DIR [options]\n"
           "\n"
           "Trains a segmentation model (--model: the plain UNet, or the UNet, FPN, Linknet\n"
           "or DeepLabV3+ of segmentation_models_pytorch over a ResNet or EfficientNet\n"
           "encoder) on full-resolution crops with gradient accumulation: --accum N\n"
           "micro-batches of --micro-batch B images give the update of one batch of N*B.\n"
           "One line per optimizer step, also written to OUT/train.jsonl; checkpoints go\n"
           "to OUT/last.safetensors.\n"
           "\n"
           "The recipe is planned from the data set and the device (--plan auto, the\n"
           "default: `tiletrain plan` prints it with its reasons): tile, network size,\n"
           "micro-batch and accum that fit the memory, norm, intensities, loss, sampling,\n"
           "learning rate, steps and validation, written to OUT/plan.json.  Every flag\n"
           "given overrides its part of the plan; --plan off takes the defaults below.\n"
           "\n"
           "Data parallel: mpirun -np K tiletrain train ... runs one rank per device;\n"
           "every rank trains its share of each window and the update is the one of a\n"
           "single process with K times the window (docs/data-parallel.md).\n"
           "\n"
           "example:\n"
           "  tiletrain data synth --out clouds --format kaggle-rle --count 40\n"
           "  tiletrain train --data clouds --out runs/planned\n"
           "  tiletrain train --data clouds --out runs/a --tile 256x256 --micro-batch 4 \\\n"
           "      --accum 5 --steps 500 --loss bce+dice --val-fraction 0.1 --val-every 50\n"
           "  tiletrain train --data clouds --out runs/r34 --model unet-resnet34 \\\n"
           "      --init resnet34.safetensors --init-prefix encoder. --freeze-encoder-bn\n"
           "\n"
           "options (the defaults are --plan off's; those marked are the plan's by default):\n");
    tt_train_options defaults;
    tt_train_options_default(&defaults);
    tt_opt_print_help_full(tt_train_option_table, tt_train_option_count, &defaults, stdout,
                           plan_note);
}

static volatile int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
    signal(SIGINT, SIG_DFL); /* a second Ctrl-C stops at once */
}

/* The live progress line on a terminal: redrawn in place. */
typedef struct progress {
    int tty;
    tt_trainer *t;
    double last_loss, images_per_s;
} progress;

static void draw(progress *p, int m, int accum)
{
    char mem[32];
    double left = p->images_per_s > 0
                      ? (double)(p->t->max_steps - p->t->counters.step) * p->t->opt.micro_batch * accum /
                            p->images_per_s
                      : 0;
    printf("\rstep %lld/%lld  micro-batch %d/%d  loss %.5f  %.2f img/s  ETA %02d:%02d:%02d  "
           "device %s   ",
           (long long)p->t->counters.step + (m < accum ? 1 : 0), (long long)p->t->max_steps, m, accum,
           p->last_loss, p->images_per_s, (int)(left / 3600), (int)(left / 60) % 60,
           (int)left % 60, tt_format_bytes(p->t->be->mem.peak_total, mem, sizeof mem));
    fflush(stdout);
}

static void on_micro_batch(void *ctx, int m, int accum)
{
    progress *p = ctx;
    if (p->tty && m < accum) draw(p, m, accum);
}

static void print_validation(void *ctx, tt_trainer *t, const tt_metrics *m)
{
    (void)ctx;
    if (t->opt.quiet) return;
    int c = tt_cli_colour(stdout);
    printf("validation at step %lld: %smean Dice %.4f%s, mean IoU %.4f over %d images (",
           (long long)t->counters.step, c ? "\033[1;32m" : "", tt_metrics_mean_dice(m), c ? "\033[0m" : "",
           tt_metrics_mean_iou(m), m->images);
    for (int c = 0; c < m->classes; c++) { /* a raster set's classes are numbers */
        if (t->dataset) printf("%s%s", c ? ", " : "", tt_dataset_class_name(t->dataset, c));
        else printf("%sclass %d", c ? ", " : "", c);
        printf(" %.3f", tt_metrics_dice(m, c));
    }
    printf(")\n");
}

/* A data-parallel rank's error: named with the rank; one the ranks did not
 * all return together stops the whole job (MPI_Abort), so none waits on it. */
static int fail_ranked(const tt_dist *dist, tt_status status, int together)
{
    if (dist->size < 2) return tt_cli_fail(status);
    if (!together) status = tt_error_prefix(status, "rank %d of %d", dist->rank, dist->size);
    int rc = tt_cli_fail(status);
    if (!together) {
        fflush(stdout);
        fflush(stderr);
        tt_dist_abort(dist, rc);
    }
    return rc;
}

static int train(tt_recipe *recipe, const tt_dist *dist);

/* --plan auto's plan, made this run, to stderr (the run writes OUT/plan.json). */
static void announce_plan(const tt_recipe *r, const tt_dist *dist)
{
    const tt_train_options *o = &r->opt;
    if (!r->plan || dist->rank != 0) return;
    if (!o->quiet && o->log_format != TT_LOG_JSONL) {
        fprintf(stderr, "tiletrain: planned for the data set and the device (%s says why; "
                "--plan off for the built-in defaults):", o->out[0] ? r->plan_file : "tiletrain plan");
        tt_run_plan_print_args(r->plan, stderr);
        fprintf(stderr, "\n");
    }
}

int tt_cmd_train(int argc, char **argv)
{
    tt_recipe *recipe = tt_malloc(sizeof *recipe);
    if (!recipe) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    tt_recipe_init(recipe);
    strcpy(recipe->opt.plan, "auto"); /* train's own default; mem and bench take no plan */
    int rc = tt_cli_parse_given("train", tt_train_option_table, tt_train_option_count,
                                &recipe->opt, recipe->given, argc, argv, help);
    if (rc >= 0) {
        free(recipe);
        return rc;
    }
    tt_dist dist;
    tt_status status = tt_dist_start(&dist);
    if (status) {
        rc = tt_cli_fail(status);
        tt_dist_finish(&dist);
        free(recipe);
        return rc;
    }
    status = tt_recipe_resolve(recipe, &dist);
    if (!status) announce_plan(recipe, &dist);
    rc = status ? fail_ranked(&dist, status, 0) : train(recipe, &dist);
    tt_recipe_release(recipe);
    free(recipe);
    tt_dist_finish(&dist);
    return rc;
}

/* What the terminal shows of a run: the live line or one line a step. */
typedef struct cli_run {
    progress prog;
    tt_tune_progress tuning;
    const tt_dist *dist;
} cli_run;

static void on_start(void *ctx, tt_trainer *t)
{
    cli_run *run = ctx;
    const tt_train_options *opt = &t->opt;
    run->tuning.log = t;
    run->prog.t = t;
    run->prog.tty = isatty(STDOUT_FILENO) && !opt->quiet;
    if (opt->quiet) return;
    if (run->dist->size > 1)
        printf("data parallel: %d ranks x micro-batch %d x accum %d = %d images per step\n",
               run->dist->size, opt->micro_batch, opt->accum,
               run->dist->size * opt->micro_batch * opt->accum);
    char data[96];
    if (t->rasters)
        snprintf(data, sizeof data, "%d raster%s of %d bands", tt_raster_set_count(t->rasters),
                 tt_raster_set_count(t->rasters) == 1 ? "" : "s", t->bands.count);
    else snprintf(data, sizeof data, "%d images", t->train_count);
    printf("training on %s: %s, %d classes, tile %dx%d, micro-batch %d x accum %d, "
           "%s, %zu parameters\n",
           t->be->device.name, data, t->model.classes, opt->tile[0], opt->tile[1],
           opt->micro_batch, opt->accum, t->engine->optimizer->ops->title,
           tt_params_trainable_count(t->engine->model->params));
}

static void on_cli_micro_batch(void *ctx, int m, int accum)
{
    on_micro_batch(&((cli_run *)ctx)->prog, m, accum);
}

static void on_step(void *ctx, tt_trainer *t, const tt_step_report *r)
{
    cli_run *run = ctx;
    progress *prog = &run->prog;
    tt_tune_progress_settle(&run->tuning); /* before the step's own line */
    if (!r) return;
    char peak[32];
    prog->last_loss = r->loss;
    prog->images_per_s = r->seconds > 0 ? r->images / r->seconds : 0.0;
    if (prog->tty) {
        draw(prog, t->opt.accum, t->opt.accum);
        if (r->skipped || t->counters.step == t->max_steps) printf("\n");
    } else if (!t->opt.quiet) {
        printf("step %6lld  loss %.5f  lr %.3g  grad-norm %.4g  %.2f img/s  data-wait %.2fs  "
               "peak %s%s\n",
               (long long)r->step, r->loss, r->lr, r->grad_norm,
               r->seconds > 0 ? r->images / r->seconds : 0.0, r->data_wait_seconds,
               tt_format_bytes(r->peak_bytes, peak, sizeof peak), r->skipped ? "  SKIPPED" : "");
    }
}

/* The end: the profile's table, and what to do after an error. */
static void on_finish(void *ctx, tt_trainer *t, tt_status status)
{
    cli_run *run = ctx;
    if (run->prog.tty) printf("\n");
    if (t->interrupted && !status) return;
    if (t->be->profile && !t->opt.quiet) {
        printf("device time per kind of op (%s timers), %.3f s in all:\n", t->be->ops->name,
               tt_profile_seconds(t->be->profile));
        tt_profile_print(t->be->profile, stdout, "  ");
    }
    if (status && tt_status_code(status) == TT_ERR_OUT_OF_MEMORY) {
        tt_memory_report_text(t->be, stderr, 8);
        fprintf(stderr,
                "the device ran out of memory: try --micro-batch %d --accum %d (the same "
                "update)%s, or a smaller --tile; `tiletrain mem` estimates a configuration "
                "before it runs. %s/last.safetensors%s\n",
                t->opt.micro_batch > 1 ? t->opt.micro_batch / 2 : 1,
                t->opt.micro_batch > 1 ? t->opt.accum * 2 : t->opt.accum,
                t->model.checkpointing ? "" : ", --checkpointing", t->opt.out,
                t->opt.checkpoint_every ? " holds the last checkpoint" : " was not written");
    }
}

static int train(tt_recipe *recipe, const tt_dist *dist)
{
    tt_train_options *opt = &recipe->opt;
    if (opt->log_format == TT_LOG_JSONL) opt->quiet = 1; /* stdout is the JSON Lines alone */
    if (dist->rank != 0) opt->quiet = 1;                 /* rank 0 speaks for the job */
    cli_run run = {.tuning = {.tty = isatty(STDOUT_FILENO), .quiet = opt->quiet}, .dist = dist};
    tt_train_hooks hooks = {.ctx = &run, .on_start = on_start, .on_micro_batch = on_cli_micro_batch,
                            .on_step = on_step, .on_validation = print_validation,
                            .on_finish = on_finish, .interrupt = &interrupted};
    tt_train_outcome outcome;
    tt_tune_progress_start(&run.tuning);
    signal(SIGINT, on_sigint);
    tt_status status = tt_train_run(recipe, dist, &hooks, &outcome);
    signal(SIGINT, SIG_DFL);
    tt_tune_progress_stop(&run.tuning);
    if (status && !outcome.trainer_made) return fail_ranked(dist, status, 0);
    if (outcome.interrupted && !status) {
        if (dist->rank == 0)
            fprintf(stderr,
                    "tiletrain: interrupted during step %lld; the unfinished window was "
                    "dropped and %s/last.safetensors holds step %lld. To continue, run the "
                    "same command with\n  --resume %s/last.safetensors\n",
                    outcome.steps + 1, opt->out, outcome.steps, opt->out);
        return 130;
    }
    if (outcome.report_error[0]) fprintf(stderr, "tiletrain: warning: no report (the run is whole): %s\n",
                                          outcome.report_error);
    if (!status && outcome.stopped_early && !opt->quiet)
        printf("early stop at step %lld: mean Dice has not improved for %lld validation%s "
               "(--patience %d); the best, %.4f at step %lld, is %s/best.safetensors\n",
               outcome.steps, outcome.validations_since_best,
               outcome.validations_since_best == 1 ? "" : "s", opt->patience, outcome.best_dice,
               outcome.best_step, opt->out);
    if (!status && !opt->quiet)
        printf("done: %lld steps (%lld skipped); weights in %s/last.safetensors, report in "
               "%s/report.html\n",
               outcome.steps, outcome.skipped_steps, opt->out, opt->out);
    /* a failed collective: the others may be waiting in the next one */
    int together = outcome.stopped_together && !tt_dist_broken();
    if (status && (dist->rank == 0 || !together))
        fprintf(stderr, "tiletrain: training stopped at step %lld\n", outcome.steps);
    return status ? fail_ranked(dist, status, together) : 0;
}
