/*
 * Normalisation: which kind a layer uses (group | batch | none), and the
 * launch helpers that group norm and batch norm share (opencl/norm.cl).
 *
 * TT_NORM_NONE is the identity and is SKIPPED BY THE CALLER: a model built
 * with "none" creates no normalisation layer at all (no parameters, no
 * activation buffer, no copy); the next layer reads the previous output.
 * There is deliberately no tt_norm_none_forward.
 *
 * Everything below the "shared launch helpers" line is for group_norm.c and
 * batch_norm.c; other code calls tt_group_norm_* / tt_batch_norm_*.
 */
#ifndef TT_OPS_NORM_H
#define TT_OPS_NORM_H

#include <stdint.h>

#include "backend/backend.h"
#include "ops/band.h"
#include "core/precision.h"

typedef enum tt_norm_kind {
    TT_NORM_NONE,  /* identity; the caller makes no layer */
    TT_NORM_GROUP, /* torch.nn.GroupNorm: statistics per (sample, group) */
    TT_NORM_BATCH, /* torch.nn.BatchNorm2d: statistics per channel over the micro-batch */
    TT_NORM_KIND_COUNT
} tt_norm_kind;

/* "none", "group", "batch", indexed by tt_norm_kind. */
extern const char *const tt_norm_kind_names[TT_NORM_KIND_COUNT];

/* The name of a kind; "?" for a value out of range. */
const char *tt_norm_kind_name(tt_norm_kind kind);

/* Parses "none", "group" or "batch" (ASCII case-insensitive) into *kind.
 * Anything else (NULL, "", "groupnorm") is TT_ERR_INVALID_ARGUMENT whose
 * message quotes the bad value and lists the valid ones; *kind is then
 * left unchanged. */
tt_status tt_norm_kind_parse(const char *text, tt_norm_kind *kind);

/* Trainable floats of one layer with `channels` channels: weight and bias
 * (2 * channels) for group and batch, 0 for none. */
size_t tt_norm_kind_param_floats(tt_norm_kind kind, int channels);
/* Non-trainable state floats: running_mean and running_var (2 * channels)
 * for batch, 0 otherwise. */
size_t tt_norm_kind_state_floats(tt_norm_kind kind, int channels);

/* Synchronised batch norm across data-parallel ranks (PyTorch's
 * SyncBatchNorm): a layer given one sums its per-channel statistics over
 * every rank's micro-batch.  allreduce_sum adds `n` doubles element-wise
 * across the ranks, in place, and leaves the same sums on every rank; every
 * rank calls it the same number of times in the same order.  The ops know
 * no transport: the trainer supplies one (train/dist.h). */
typedef struct tt_norm_sync {
    tt_status (*allreduce_sum)(void *ctx, double *values, size_t n);
    void *ctx;
} tt_norm_sync;

/* Default epsilon of both kinds, as in PyTorch. */
#define TT_NORM_DEFAULT_EPS 1e-5f

/* ---- shared launch helpers (group_norm.c, batch_norm.c) ------------------ */

/* Where the statistics of an (N, C, H, W) tensor live, in whole planes; see
 * opencl/norm.cl. */
typedef struct tt_norm_layout {
    int batch, channels, hw;    /* N, C, H*W */
    int stat_count;             /* N*G (group) or C (batch) */
    int stat_n_stride;          /* statistic of (n, c) = n * stat_n_stride + */
    int channels_per_stat;      /*                       c / channels_per_stat */
    int planes_per_stat;        /* its planes: s * stat_plane_stride + */
    int stat_plane_stride;      /*             j * plane_stride, */
    int plane_stride;           /*             j < planes_per_stat */
    int chunks, chunk_vecs;     /* the work-items of a plane, float8 vectors each */
    tt_precision x_precision;   /* how x, the normalised tensor, is stored: fp32, or
                                   fp16/bf16 (2 bytes an element, read as stored and
                                   computed in fp32); every other tensor is fp32 */
    tt_precision g_precision;   /* how the backward's dy and dinp are stored: fp32, or
                                   fp16/bf16 (rounded where written) */
} tt_norm_layout;

/* Checks N, C, H, W > 0 and that N*C*H*W fits one launch; `op` names the
 * caller in the message. */
tt_status tt_norm_check_shape(const char *op, int batch, int channels, int height, int width);
tt_norm_layout tt_norm_layout_group(int batch, int channels, int height, int width, int groups);
tt_norm_layout tt_norm_layout_batch(int batch, int channels, int height, int width);

/* Floats of a layer's saved buffer: mean and rstd (2 per statistic), then
 * the scratch the reductions pass their partial sums through. */
size_t tt_norm_saved_floats(const tt_norm_layout *l);

/* Fails with TT_ERR_INVALID_ARGUMENT, naming `op` ("group_norm"), unless
 * saved holds tt_norm_saved_floats(l) floats. */
tt_status tt_norm_check_saved(const char *op, tt_mem saved, const tt_norm_layout *l);

/* The parts of a saved buffer. */
tt_mem tt_norm_saved_mean(tt_mem saved);
tt_mem tt_norm_saved_rstd(tt_mem saved, const tt_norm_layout *l);
tt_mem tt_norm_saved_scratch(tt_mem saved, const tt_norm_layout *l);

/* mean[s], rstd[s] for every statistic; running_mean/var (may be absent,
 * (tt_mem){0}) are updated with `momentum` when present.  scratch: from
 * tt_norm_saved_scratch. */
tt_status tt_norm_launch_stats(tt_backend *be, const tt_norm_layout *l, tt_mem mean, tt_mem rstd,
                               tt_mem running_mean, tt_mem running_var, tt_mem x, tt_mem scratch,
                               float eps, float momentum);

/* What the element-wise and backward passes read besides the tensors: the
 * statistics (r = stat, or 1/sqrt(stat + eps) when stat_is_var), the affine
 * parameters (either may be absent: 1 and 0) and whether a ReLU follows
 * (fused: the forward writes relu(norm(x)), the backward takes the gradient
 * at the ReLU's output and masks it with the forward's own arithmetic). */
typedef struct tt_norm_params {
    tt_mem mean, stat;
    int stat_is_var;
    float eps;
    tt_mem weight, bias;
    int relu;
} tt_norm_params;

/* y = [relu]((x - mean) * r * weight + bias).  y may be x. */
tt_status tt_norm_launch_apply(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x,
                               const tt_norm_params *p);
/* y (a band, ops/band.h) = the rows of tt_norm_launch_apply's output that
 * the band holds, the same bits, zeros outside the tensor's rows; the band
 * has the layout's planes and plane size. */
tt_status tt_norm_launch_apply_band(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x,
                                    const tt_norm_params *p, const tt_band *band);
/* dweight += sum g * xhat, dbias += sum g per channel, and dinp += dL/dx
 * (training: through the batch statistics; otherwise r * weight * g), g the
 * gradient at the norm's output (dy, masked with a fused ReLU).  Any output
 * may be absent.  dinp may be dy itself (the same place): then it is
 * overwritten.  scratch: from tt_norm_saved_scratch. */
tt_status tt_norm_launch_backward(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                                  tt_mem dweight, tt_mem dbias, tt_mem dy, tt_mem x,
                                  const tt_norm_params *p, int training, tt_mem scratch);


/* The parts of tt_norm_launch_backward, for batch norm summed over ranks
 * (batch_norm.c with a sync), which sums the coefficients between them. */

/* The scratch's 2 floats per statistic that norm_input_coefs writes and
 * norm_backward_input reads (the mean of g w and of g w xhat). */
tt_mem tt_norm_scratch_coefs(tt_mem scratch, const tt_norm_layout *l);

/* moments[2 s], moments[2 s + 1] = mean and sum of squared deviations of
 * statistic s over this process's elements (planes_per_stat * hw of them),
 * as tt_norm_launch_stats merges them.  moments may be
 * tt_norm_scratch_coefs(scratch): the partials lie before it. */
tt_status tt_norm_launch_moments(tt_backend *be, const tt_norm_layout *l, tt_mem moments,
                                 tt_mem x, tt_mem scratch);

/* dweight, dbias as in tt_norm_launch_backward (either may be absent); with
 * coefs, tt_norm_scratch_coefs(scratch) gets the training coefficients of
 * this process's elements. */
tt_status tt_norm_launch_grad_sums(tt_backend *be, const tt_norm_layout *l, tt_mem dweight,
                                   tt_mem dbias, tt_mem dy, tt_mem x, const tt_norm_params *p,
                                   int coefs, tt_mem scratch);

/* Fails unless dinp is dy's very place or apart from it (`op` names the
 * caller). */
tt_status tt_norm_check_in_place(const char *op, const tt_norm_layout *l, tt_mem dinp, tt_mem dy);

/* dinp (+)= dL/dx as in tt_norm_launch_backward: with coefs through the
 * coefficients in tt_norm_scratch_coefs(scratch), else element-wise. */
tt_status tt_norm_launch_input_grad(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                                    tt_mem dy, tt_mem x, const tt_norm_params *p, int coefs,
                                    tt_mem scratch);

#endif
