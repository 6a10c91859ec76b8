/*
 * Plain-C references of the optimizer updates in double precision, and a
 * bridge to torch.optim for cross-checks (tests/optim_torch_check.py run by
 * /usr/bin/python3).
 */
#ifndef TT_TESTS_REF_OPTIM_H
#define TT_TESTS_REF_OPTIM_H

#include <stddef.h>
#include <stdint.h>

/* One AdamW step (1-based `step`) at rate lr, in place on double arrays. */
void ref_adamw_step(double *param, const double *grad, double *exp_avg, double *exp_avg_sq,
                    size_t n, double lr, double beta1, double beta2, double eps,
                    double weight_decay, int64_t step);

/* One SGD step (torch.optim.SGD semantics; step 1 initialises the buffer). */
void ref_sgd_step(double *param, const double *grad, double *momentum_buffer, size_t n, double lr,
                  double momentum, double dampening, double weight_decay, int nesterov,
                  int64_t step);

/* The directory of this source file (tests/), for scripts beside it. */
const char *ref_tests_dir(void);

/* 1 when `/usr/bin/python3 -c "import <module>"` succeeds; prints nothing. */
int ref_python_has(const char *module);

/* Writes n floats, raw little-endian, to path; 0 on success. */
int ref_write_floats(const char *path, const float *x, size_t n);
/* Reads exactly n floats from path; 0 on success. */
int ref_read_floats(const char *path, float *x, size_t n);

/* One optimizer run for torch: `steps` steps from param0 with the given
 * gradients and learning rates; torch's final parameters and state come back
 * in out (n floats of parameters, then n per state array: AdamW exp_avg,
 * exp_avg_sq; SGD with momentum the momentum buffer). */
typedef struct ref_torch_case {
    const char *optimizer; /* "adamw" or "sgd" */
    size_t n;
    int steps;
    const double *lrs;     /* (steps) */
    const float *param0;   /* (n) */
    const float *grads;    /* (steps, n) */
    double beta1, beta2, eps, weight_decay;       /* AdamW */
    double momentum, dampening;                   /* SGD (and weight_decay) */
    int nesterov;
    float *out;            /* (out_count) */
    size_t out_count;      /* n * (1 + number of state arrays) */
    /* parameter groups (0: one): begin, end, lr scale and the steps it is
     * frozen for (grad None: no update, no state) of each, 4 doubles a group */
    int group_count;
    const double *groups;
} ref_torch_case;

/* Runs every case through tests/optim_torch_check.py in one python process.
 * Returns 0 on success, 1 when torch is missing (the reason is printed: the
 * caller skips), -1 on failure (printed). */
int ref_optim_torch_run(ref_torch_case *cases, int count);

#endif
