/*
 * Tables of conv2d cases, each forced to one algorithm, checked against the
 * double reference (ref_conv_check_case) with the dispatch's choice of
 * algorithm per direction: what test_conv_algos.c and test_conv_winograd.c
 * share.
 */
#ifndef TT_TESTS_REF_CONV_CASES_H
#define TT_TESTS_REF_CONV_CASES_H

#include <stddef.h>

#include "ops/conv2d.h"
#include "ref_conv_check.h"

typedef struct conv2d_case {
    const char *name;
    tt_conv2d_desc desc;
    int with_bias;
} conv2d_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, algorithm */
#define D(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, 1, TT_CONV_ALGO_##a, 0, {0}, 0}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* The directions a case's algorithm runs itself (bit d: tt_conv_dir d). */
#define ALL_DIRS 7
#define FWD_AND_DATA 3

/* The case as ref_conv_check_case takes it (conv2d's forward, backward and
 * reference); pass_workspace: the caller allocates the workspace. */
ref_conv_op ref_conv2d_case_op(const conv2d_case *c, int pass_workspace);

/* Checks every case with its algorithm, which must run the directions of
 * `runs` itself and fall back to IM2COL_GEMM for the rest; cases the test
 * backend cannot run are left out (th_left_out). Prints the largest errors
 * under `label` and the seconds taken. */
void ref_conv2d_check_cases(const char *label, const conv2d_case *cases, size_t count, int runs);

/* The forward, input gradient and weight gradient of `d` with its
 * algorithm, from the same random data each call; returns them
 * concatenated (n_out + n_in + n_w floats, malloc'd). */
float *ref_conv2d_run_three(const tt_conv2d_desc *d, size_t n_in, size_t n_w, size_t n_out);

/* A monotonic clock in milliseconds. */
double ref_conv_now_ms(void);

#endif
