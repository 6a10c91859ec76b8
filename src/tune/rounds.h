/*
 * `tiletrain tune`'s search as rounds, each in a process of its own.
 *
 * CLBlast 1.5.3 on PoCL 3.1 crashed (SIGSEGV, "double free or corruption")
 * after a dozen or more rebuilds of its GEMM program in one process, never
 * with the crashing configuration alone (docs/tune.md).  So one process
 * times at most 10 configurations (search.c), and a longer search
 * runs this program again, `tiletrain tune --one-round --json ...`, until
 * the budget is spent: each round starts from the best so far (saved to
 * the output file as it is found) with new random candidates, and a round
 * that crashes loses only its unsaved rest.
 */
#ifndef TT_TUNE_ROUNDS_H
#define TT_TUNE_ROUNDS_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "tiletrain.h"

typedef struct tt_tune_rounds {
    const char *const *args;  /* the options every round gets (device, shapes, model) */
    int arg_count;
    double budget_s;          /* wall clock for all rounds */
    uint64_t seed;            /* round k gets seed + k */
    int max_xgemm;            /* over all rounds; 0: no limit */
    int max_direct;           /* per round; < 0: no limit */
    const char *output;       /* where the rounds keep the best (--output) */
    int log_to_stdout;        /* the rounds' progress on stdout, else stderr */
    FILE *log;
} tt_tune_rounds;

/* Runs rounds until the budget or max_xgemm is spent or a round tries
 * nothing new.  *last: the last round's JSON report (tune --json), NULL if
 * none finished; *candidates and *rejected add up over the rounds.  A round
 * that fails (exit status 1 or 2) ends the search with its error. */
tt_status tt_tune_run_rounds(const tt_tune_rounds *r, cJSON **last, int *rounds, int *candidates,
                             int *rejected);

#endif
