/*
 * What a command says while the autotuner times convolutions (a first run
 * on a device: it compiles each candidate's kernels as it goes, minutes on
 * a CPU).  On a terminal, one live line:
 *
 *   tuning convolutions for <device> (first run only) 5/18, 23 programs compiled: <layer>
 *
 * elsewhere a line when tuning starts; a summary when the layers known
 * then are tuned (a validation's shapes later tune without one); every pick goes
 * to `log` (train.jsonl) as {"tune": {"key", "algo", "ms", "done", "total"}}.
 */
#ifndef TT_CLI_TUNE_PROGRESS_H
#define TT_CLI_TUNE_PROGRESS_H

#include <stdio.h>

typedef struct tt_trainer tt_trainer;

typedef struct tt_tune_progress {
    int tty, quiet;
    tt_trainer *log;       /* the run whose train.jsonl gets the picks; NULL: none */
    FILE *out;             /* the terminal's stream: stdout */
    double started;        /* when tuning began; 0: not yet */
    int line_open;         /* a live line is on the terminal */
    int announced, summarised;
    unsigned long long done; /* keys timed so far */
    char device[128];
} tt_tune_progress;

/* Starts telling (the autotuner's observer is set to p until _stop). */
void tt_tune_progress_start(tt_tune_progress *p);
/* The tuning so far is over (a step ended): its summary, once, and no
 * live line left open.  Also called when the pending count reaches its
 * total; a count that never does (a layer sized but never run) still
 * gets its summary here. */
void tt_tune_progress_settle(tt_tune_progress *p);
/* Ends a live line still open and removes the observer. */
void tt_tune_progress_stop(tt_tune_progress *p);

#endif
