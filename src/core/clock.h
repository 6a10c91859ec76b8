/*
 * The one clock every timing in tiletrain reads: monotonic seconds, for
 * differences only (a step, a trial, a search), never a date.
 */
#ifndef TT_CORE_CLOCK_H
#define TT_CORE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC. */
double tt_seconds(void);

#endif
