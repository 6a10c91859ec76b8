/*
 * Plain-C references for the normalisation ops, in double precision
 * (PyTorch semantics: biased variance for normalising, unbiased for the
 * running variance), and a runner for cross-checks against torch.
 * weight and bias may be NULL (1 and 0).  Tensors are NCHW.
 */
#ifndef TT_TESTS_REF_NORM_H
#define TT_TESTS_REF_NORM_H

#include <stddef.h>

/* y (N,C,H,W); mean, rstd (N*G, index n*G+g; may be NULL). */
void ref_group_norm_forward(double *y, double *mean, double *rstd, const double *x,
                            const double *weight, const double *bias, int batch, int channels,
                            int height, int width, int groups, double eps);

/* Training mode: y; mean and biased var per channel (may be NULL). */
void ref_batch_norm_forward_train(double *y, double *mean, double *var, const double *x,
                                  const double *weight, const double *bias, int batch,
                                  int channels, int height, int width, double eps);

/* Eval mode with running statistics. */
void ref_batch_norm_forward_eval(double *y, const double *x, const double *running_mean,
                                 const double *running_var, const double *weight,
                                 const double *bias, int batch, int channels, int height,
                                 int width, double eps);

/* Eval mode (frozen: running statistics fixed, weight and bias trained)
 * backward, written (not added): g = dy, masked where the forward's
 * pre-ReLU value is <= 0 when relu; dinp = g weight / sqrt(running_var +
 * eps), dweight[c] = sum g xhat, dbias[c] = sum g (either may be NULL). */
void ref_batch_norm_backward_eval(double *dinp, double *dweight, double *dbias, const double *dy,
                                  const double *x, const double *running_mean,
                                  const double *running_var, const double *weight,
                                  const double *bias, int batch, int channels, int height,
                                  int width, double eps, int relu);

/* running = (1 - m) running + m stat, the variance made unbiased with
 * count / (count - 1), count = N*H*W. */
void ref_batch_norm_update_running(double *running_mean, double *running_var, const double *mean,
                                   const double *var, int channels, int count, double momentum);

/* A fused ReLU's check: masked[i] = dy[i] where plain[i] > 0, else 0 (the
 * gradient the unfused backward takes); *zeros counts fused's zeros.
 * Returns how many fused[i] have the bits of relu(plain[i]). */
size_t ref_norm_relu_check(const float *plain, const float *fused, const float *dy, float *masked,
                           size_t n, size_t *zeros);

/* Runs a Python body under /usr/bin/python3 with numpy as np and torch
 * imported, `inp` (n_in float32) as a flat numpy array and emit(*arrays)
 * writing the flat float32 result, which must hold n_out floats.  Returns 0
 * on success; otherwise 1 with the reason (no python, no torch, script
 * failed, wrong size) in why: the caller then skips the cross-check. */
int ref_norm_torch_run(const char *body, const float *inp, size_t n_in, float *out, size_t n_out,
                  char *why, size_t why_size);

#endif
