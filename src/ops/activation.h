/*
 * Element-wise activations: ReLU, leaky ReLU, sigmoid and SiLU, over n
 * floats of any shape (NCHW or flat).  Memory is (buffer, byte offset).
 *
 * In place: `out` may be the same tt_mem as `inp` (the input is then
 * overwritten).  For ReLU, leaky ReLU and sigmoid that is safe for training
 * because their backward reads the forward OUTPUT, never the input: ReLU's
 * gradient mask is out > 0 (equal to inp > 0), leaky ReLU's too (for
 * negative_slope >= 0), and sigmoid's derivative is out * (1 - out).
 *
 * SiLU (x * sigmoid(x), EfficientNet's "swish") is the exception: its
 * derivative s (1 + x (1 - s)), s = sigmoid(x), cannot be had from the
 * output alone, so its backward reads the forward INPUT
 * (tt_silu_backward).  Its forward may still run in place where the input
 * is not needed afterwards (inference, or a recomputed input).
 * tt_activation_backward refuses TT_ACT_SILU, and
 * tt_activation_backward_reads_input says which kinds read the input.
 *
 * Backward ADDS into dinp (beta = 1).  dinp must not alias dout (the sum
 * would count dout twice); a dinp of (tt_mem){0} means "not wanted" and the
 * call does nothing.
 */
#ifndef TT_OPS_ACTIVATION_H
#define TT_OPS_ACTIVATION_H

#include "backend/backend.h"

typedef enum tt_activation_kind {
    TT_ACT_RELU,
    TT_ACT_LEAKY_RELU,
    TT_ACT_SIGMOID,
    TT_ACT_SILU, /* x * sigmoid(x); backward from the INPUT: tt_silu_backward */
    TT_ACT_COUNT
} tt_activation_kind;

/* PyTorch's default slope for nn.LeakyReLU / F.leaky_relu. */
#define TT_LEAKY_RELU_DEFAULT_SLOPE 0.01f

typedef struct tt_activation {
    tt_activation_kind kind;
    float negative_slope; /* leaky ReLU only; must be >= 0 */
} tt_activation;

/* "relu", "leaky_relu", "sigmoid", "silu"; "?" for anything else. */
const char *tt_activation_name(tt_activation_kind kind);
/* The kind named `name` (as above); TT_ERR_INVALID_ARGUMENT naming the
 * choices when there is none. */
tt_status tt_activation_parse(const char *name, tt_activation_kind *kind);

/* out = f(inp), n floats; out may equal inp (in place). */
tt_status tt_activation_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_activation act,
                                size_t n);
/* dinp += dout * f'(.) computed from the forward output `out`.  A kind
 * whose gradient needs the input (TT_ACT_SILU) is TT_ERR_UNSUPPORTED naming
 * the function to call instead. */
tt_status tt_activation_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out,
                                 tt_activation act, size_t n);
/* 1 when the kind's backward reads the forward input (SiLU: keep the input
 * alive, do not run the forward in place), 0 when it reads the output. */
int tt_activation_backward_reads_input(tt_activation_kind kind);

/* Shorthands for the kinds that read the output. */
tt_status tt_relu_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n);
tt_status tt_relu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out, size_t n);
/* d = out > 0 ? d : 0 in place: the ReLU gradient when d is dout and
 * nothing else is to be added (no second buffer). */
tt_status tt_relu_backward_inplace(tt_backend *be, tt_mem d, tt_mem out, size_t n);
tt_status tt_leaky_relu_forward(tt_backend *be, tt_mem out, tt_mem inp, float negative_slope,
                                size_t n);
tt_status tt_leaky_relu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out,
                                 float negative_slope, size_t n);
tt_status tt_sigmoid_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n);
tt_status tt_sigmoid_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out, size_t n);

/* SiLU: out = inp * sigmoid(inp), n floats; out may equal inp (in place,
 * the input then lost: the backward needs it).  Any finite input gives a
 * finite output (sigmoid from exp(-|x|), which never overflows); NaN gives
 * NaN. */
tt_status tt_silu_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n);
/* dinp += dout * s (1 + inp (1 - s)), s = sigmoid(inp), from the forward
 * INPUT `inp`.  A dinp of (tt_mem){0} means not wanted: nothing is done.
 * dinp must not be dout's memory. */
tt_status tt_silu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem inp, size_t n);

#endif
