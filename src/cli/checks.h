/*
 * A list of checks and their verdicts, for the commands that check a
 * device (selftest, doctor): each check's name, its error against the
 * bound it must keep within (none for a check that only passes or fails),
 * its seconds and a note; printed as it comes when the list has a stream,
 * and written as JSON for a report a user can paste into an issue.
 */
#ifndef TT_CLI_CHECKS_H
#define TT_CLI_CHECKS_H

#include <stdio.h>

#include <cjson/cJSON.h>

typedef struct tt_check {
    char what[112];
    double error, bound; /* bound <= 0: no measure, pass or fail */
    double seconds;
    int failed;
    int slow;            /* right, but far slower than another way (not a failure) */
    char note[200];
} tt_check;

typedef struct tt_checks {
    tt_check *items;
    int count, capacity;
    int failures;
    int oom;             /* a check could not be kept: out of host memory */
    FILE *out;           /* one line per check as it is added; NULL: none */
} tt_checks;

/* Adds `one` (failed set by the caller) and prints its line to c->out. */
void tt_checks_add(tt_checks *c, const tt_check *one);
/* The checks as a JSON array of {what, verdict: "right" | "wrong" |
 * "slow", error, bound, seconds, note}. */
cJSON *tt_checks_json(const tt_checks *c);
void tt_checks_free(tt_checks *c);

#endif
