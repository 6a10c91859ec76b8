/*
 * One checking procedure for every convolution-like op (conv2d,
 * conv_transpose2d): forward against the double reference, finite-difference
 * gradients of input, weight and bias against the device backward, backward
 * twice adds twice, each gradient alone, workspace given or allocated, and a
 * cross-check against PyTorch when /usr/bin/python3 has torch.
 */
#ifndef TT_TESTS_REF_CONV_CHECK_H
#define TT_TESTS_REF_CONV_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"

/* The forward of an op with all sizes bound by `desc`. */
typedef void (*ref_conv_ref_fn)(double *out, const double *inp, const double *weight,
                                const double *bias, const void *desc);
typedef tt_status (*ref_conv_forward_fn)(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                         tt_mem bias, const void *desc, tt_mem workspace);
/* The double reference's gradients of L = sum(dout * forward), ADDED to
 * dinp and dweight (ref_conv2d_backward). */
typedef void (*ref_conv_ref_backward_fn)(double *dinp, double *dweight, const double *inp,
                                         const double *weight, const double *dout,
                                         const void *desc);
typedef tt_status (*ref_conv_backward_fn)(tt_backend *be, tt_mem dinp, tt_mem dweight,
                                          tt_mem dbias, tt_mem dout, tt_mem inp, tt_mem weight,
                                          const void *desc, tt_mem workspace);

typedef struct ref_conv_op {
    const char *name;          /* the case, for the printed errors */
    const void *desc;
    size_t inp_count, weight_count, bias_count, out_count;  /* floats */
    int with_bias;             /* 0: bias and dbias are (tt_mem){0} */
    int pass_workspace;        /* 1: the caller allocates workspace_bytes and passes it */
    size_t workspace_bytes;
    ref_conv_ref_fn ref_forward;
    /* Optional (NULL: finite differences of every element): the reference
     * backward, which large cases check against finite differences of a
     * sample of elements and then use for every element
     * (REF_CONV_FD_ALL). */
    ref_conv_ref_backward_fn ref_backward;
    ref_conv_forward_fn forward;
    ref_conv_backward_fn backward;
} ref_conv_op;

/* The largest errors one case measured. */
typedef struct ref_conv_errors {
    double forward;   /* vs the reference, relative with floor REF_CONV_FWD_FLOOR */
    double dinp, dweight, dbias;  /* vs finite differences, floor REF_CONV_GRAD_FLOOR */
} ref_conv_errors;

#define REF_CONV_FWD_TOL 1e-4
#define REF_CONV_FWD_FLOOR 1.0
#define REF_CONV_GRAD_TOL 1e-3
#define REF_CONV_GRAD_FLOOR 0.1
/* Cases with at most this many input and weight elements take finite
 * differences of every one (two reference forwards an element); larger
 * ones with a ref_backward, of REF_CONV_FD_SAMPLE of each, spread over the
 * tensor and its ends. */
#define REF_CONV_FD_ALL 2048
#define REF_CONV_FD_SAMPLE 64
#define REF_CONV_REF_GAP 1e-6 /* the reference backward vs the sample, relative */

/* The largest gap between op->ref_backward and finite differences at the
 * sampled elements, on data drawn from `seed` (what a large case checks
 * before the reference stands in for finite differences). */
double ref_conv_backward_gap(const ref_conv_op *op, uint64_t seed);

/* Whether the test backend has what `desc` runs (tt_conv2d_runs_on: a
 * forced algorithm's kernels and library); when not, says that the case
 * `name` is left out and why (th_left_out) and returns 0. */
int ref_conv2d_runs_here(const char *name, const tt_conv2d_desc *desc);
int ref_convt_runs_here(const char *name, const tt_conv_transpose2d_desc *desc);

/* Runs every check on one case with data drawn from `seed`; CUnit asserts
 * each error against its tolerance, prints them, and returns them. */
ref_conv_errors ref_conv_check_case(const ref_conv_op *op, uint64_t seed);

/* Runs the op on random data, then PyTorch (float64, autograd) on the same
 * data: `torch_expr` is a Python expression of x, w, b (b is None without a
 * bias) and F (torch.nn.functional); shapes are 4 ints each.  Asserts the
 * device output and gradients match.  Returns 0 when python3 or torch is
 * missing (printed, nothing asserted), 1 when compared. */
int ref_conv_check_torch(const ref_conv_op *op, const char *torch_expr, const int inp_shape[4],
                         const int weight_shape[4], const int out_shape[4], uint64_t seed);

#endif
