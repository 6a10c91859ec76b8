/*
 * tiletrain bench --layers: every convolution shape of the model (the 3x3
 * ones, the strided ones, the heads) timed alone, forward, input gradient
 * and weight gradient, through the algorithm a training step runs (the
 * autotuner's pick, or --algo), and with --compare-openblas next to
 * OpenBLAS SGEMM on the same layer's im2col GEMMs on the host.
 */
#ifndef TT_CLI_BENCH_LAYERS_H
#define TT_CLI_BENCH_LAYERS_H

#include "tiletrain.h"
#include "train/train_options.h"

tt_status tt_bench_layers(const tt_train_options *t, int json, int compare_openblas);

#endif
