/*
 * tiletrain selftest --algos: every convolution algorithm on every
 * convolution shape of a recipe's model (its tile and micro-batch; the
 * transposed up-convolutions too), in
 * every direction it runs, checked on random inputs as the autotuner
 * checks a candidate before it trusts it (src/ops/conv_verify.h): against
 * the reference algorithm everywhere and the host's double at sampled
 * elements, within what fp32 rounding allows for the reduction.
 */
#ifndef TT_CLI_SELFTEST_ALGOS_H
#define TT_CLI_SELFTEST_ALGOS_H

#include "backend/backend.h"
#include "cli/checks.h"
#include "train/train_options.h"

/* A check per layer, direction and algorithm into *checks (one line per
 * layer and direction on checks->out), failed when off the bound. */
tt_status tt_selftest_algos(tt_backend *be, const tt_train_options *t, tt_checks *checks);

#endif
