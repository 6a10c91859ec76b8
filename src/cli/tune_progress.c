/* The autotuner's progress on the terminal and in train.jsonl; see tune_progress.h. */
#include "cli/tune_progress.h"

#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "ops/conv_autotune.h"
#include "train/train_log.h"

static void on_event(void *ctx, const tt_conv_tune_event *e)
{
    tt_tune_progress *p = ctx;
    if (e->phase == TT_CONV_TUNE_START) {
        if (!p->started) p->started = tt_seconds();
        if (!p->quiet && !p->tty && !p->announced)
            fprintf(p->out,
                    "tuning convolutions for %s (first run only): %llu layer directions to "
                    "time, compiling their kernels\n",
                    e->device, (unsigned long long)(e->total - e->done));
        if (!p->quiet && p->tty) {
            /* \033[K clears what a longer line left */
            fprintf(p->out, "\rtuning convolutions for %s (first run only) %llu/%llu, %llu "
                            "programs compiled: %.70s\033[K",
                    e->device, (unsigned long long)e->done + 1, (unsigned long long)e->total,
                    (unsigned long long)e->programs, e->key);
            p->line_open = 1;
        }
        p->announced = 1;
        fflush(p->out);
        return;
    }
    if (p->log)
        tt_trainer_log(p->log,
                       "{\"tune\":{\"key\":\"%s\",\"algo\":\"%s\",\"ms\":%.6g,\"done\":%llu,"
                       "\"total\":%llu,\"programs\":%llu}}\n",
                       e->key, tt_conv_algo_name(e->algo), e->ms, (unsigned long long)e->done,
                       (unsigned long long)e->total, (unsigned long long)e->programs);
    p->done = e->done;
    snprintf(p->device, sizeof p->device, "%s", e->device);
    if (e->done >= e->total) tt_tune_progress_settle(p);
}

void tt_tune_progress_settle(tt_tune_progress *p)
{
    if (!p->started) return; /* nothing tuned yet */
    /* the first time, a summary; later stretches (a validation's own
     * shapes) only clear their live line */
    if (p->line_open && !p->quiet) fprintf(p->out, "\r\033[K");
    if (!p->quiet && !p->summarised)
        fprintf(p->out,
                "tuned %llu convolution layer directions on %s in %.0f s (kept in the find-db: "
                "later runs start at once)\n",
                (unsigned long long)p->done, p->device, tt_seconds() - p->started);
    fflush(p->out);
    p->summarised = 1;
    p->line_open = 0;
}

void tt_tune_progress_start(tt_tune_progress *p)
{
    if (!p->out) p->out = stdout;
    tt_conv_autotune_observe(on_event, p);
}

void tt_tune_progress_stop(tt_tune_progress *p)
{
    tt_conv_autotune_observe(NULL, NULL);
    if (p->line_open && !p->quiet) fprintf(p->out, "\n");
    p->line_open = 0;
}
