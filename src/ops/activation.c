/*
 * Element-wise activations (see activation.h): host side, launching
 * opencl/activation.cl.  The kinds are one enum with parallel tables of
 * names and kernels; adding a kind without filling them does not compile.
 * A kind whose backward reads the input (SiLU) has no entry in the
 * output-reading backward table (NULL) and a function of its own.
 */
#include "ops/activation.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"

static const char *const kind_names[] = {"relu", "leaky_relu", "sigmoid", "silu"};
static const char *const forward_kernels[] = {"relu_forward", "leaky_relu_forward",
                                              "sigmoid_forward", "silu_forward"};
/* Backward kernels that read the forward output; NULL where the kind's
 * backward reads the input instead. */
static const char *const backward_kernels[] = {"relu_backward", "leaky_relu_backward",
                                               "sigmoid_backward", NULL};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == TT_ACT_COUNT, "a name per kind");
_Static_assert(sizeof forward_kernels / sizeof forward_kernels[0] == TT_ACT_COUNT,
               "a forward kernel per kind");
_Static_assert(sizeof backward_kernels / sizeof backward_kernels[0] == TT_ACT_COUNT,
               "a backward kernel (NULL: reads the input) per kind");

const char *tt_activation_name(tt_activation_kind kind)
{
    return (unsigned)kind < TT_ACT_COUNT ? kind_names[kind] : "?";
}

tt_status tt_activation_parse(const char *name, tt_activation_kind *kind)
{
    for (int k = 0; k < TT_ACT_COUNT; k++)
        if (name && strcmp(name, kind_names[k]) == 0) {
            *kind = (tt_activation_kind)k;
            return NULL;
        }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "unknown activation '%s': use relu, leaky_relu, sigmoid or silu",
                        name ? name : "(null)");
}

static tt_status check_act(const char *pass, tt_activation act, size_t n)
{
    if ((unsigned)act.kind >= TT_ACT_COUNT)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "activation %s: unknown kind %d", pass,
                            (int)act.kind);
    char op[48];
    snprintf(op, sizeof op, "%s %s", kind_names[act.kind], pass);
    TT_TRY(tt_launch_check_count(op, n));
    if (act.kind == TT_ACT_LEAKY_RELU && !(act.negative_slope >= 0.0f && isfinite(act.negative_slope)))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "leaky_relu %s: negative_slope %g is not supported; use a finite "
                            "slope >= 0 (the backward reads the output's sign)",
                            pass, (double)act.negative_slope);
    return NULL;
}

tt_status tt_activation_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_activation act,
                                size_t n)
{
    TT_TRY(check_act("forward", act, n));
    const char *op = kind_names[act.kind];
    TT_TRY(tt_mem_check(op, "out", out, n * sizeof(float)));
    TT_TRY(tt_mem_check(op, "inp", inp, n * sizeof(float)));
    const char *kernel = forward_kernels[act.kind];
    if (act.kind == TT_ACT_LEAKY_RELU)
        return TT_LAUNCH_1D(be, "activation", kernel, n, tt_arg_mem(out), tt_arg_mem(inp),
                            tt_arg_f32(act.negative_slope), tt_arg_i32((int)n));
    return TT_LAUNCH_1D(be, "activation", kernel, n, tt_arg_mem(out), tt_arg_mem(inp),
                        tt_arg_i32((int)n));
}

int tt_activation_backward_reads_input(tt_activation_kind kind)
{
    return (unsigned)kind < TT_ACT_COUNT && backward_kernels[kind] == NULL;
}

tt_status tt_activation_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out,
                                 tt_activation act, size_t n)
{
    TT_TRY(check_act("backward", act, n));
    if (tt_activation_backward_reads_input(act.kind))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s backward: its gradient needs the forward input, not the output; "
                            "call tt_%s_backward with the input",
                            kind_names[act.kind], kind_names[act.kind]);
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    const char *op = kind_names[act.kind];
    TT_TRY(tt_mem_check(op, "dinp", dinp, n * sizeof(float)));
    TT_TRY(tt_mem_check(op, "dout", dout, n * sizeof(float)));
    TT_TRY(tt_mem_check(op, "out", out, n * sizeof(float)));
    if (dinp.buffer == dout.buffer && dinp.offset == dout.offset)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s backward: dinp and dout are the same memory; backward adds "
                            "into dinp, so give it its own buffer",
                            op);
    const char *kernel = backward_kernels[act.kind];
    if (act.kind == TT_ACT_LEAKY_RELU)
        return TT_LAUNCH_1D(be, "activation", kernel, n, tt_arg_mem(dinp), tt_arg_mem(dout),
                            tt_arg_mem(out), tt_arg_f32(act.negative_slope), tt_arg_i32((int)n));
    return TT_LAUNCH_1D(be, "activation", kernel, n, tt_arg_mem(dinp), tt_arg_mem(dout),
                        tt_arg_mem(out), tt_arg_i32((int)n));
}

tt_status tt_relu_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n)
{
    return tt_activation_forward(be, out, inp, (tt_activation){TT_ACT_RELU, 0}, n);
}

tt_status tt_relu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out, size_t n)
{
    return tt_activation_backward(be, dinp, dout, out, (tt_activation){TT_ACT_RELU, 0}, n);
}

tt_status tt_relu_backward_inplace(tt_backend *be, tt_mem d, tt_mem out, size_t n)
{
    TT_TRY(check_act("backward", (tt_activation){TT_ACT_RELU, 0}, n));
    TT_TRY(tt_mem_check("relu", "d", d, n * sizeof(float)));
    TT_TRY(tt_mem_check("relu", "out", out, n * sizeof(float)));
    return TT_LAUNCH_1D(be, "activation", "relu_backward_inplace", n, tt_arg_mem(d), tt_arg_mem(out),
                        tt_arg_i32((int)n));
}

tt_status tt_leaky_relu_forward(tt_backend *be, tt_mem out, tt_mem inp, float negative_slope,
                                size_t n)
{
    return tt_activation_forward(be, out, inp,
                                 (tt_activation){TT_ACT_LEAKY_RELU, negative_slope}, n);
}

tt_status tt_leaky_relu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out,
                                 float negative_slope, size_t n)
{
    return tt_activation_backward(be, dinp, dout, out,
                                  (tt_activation){TT_ACT_LEAKY_RELU, negative_slope}, n);
}

tt_status tt_sigmoid_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n)
{
    return tt_activation_forward(be, out, inp, (tt_activation){TT_ACT_SIGMOID, 0}, n);
}

tt_status tt_sigmoid_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem out, size_t n)
{
    return tt_activation_backward(be, dinp, dout, out, (tt_activation){TT_ACT_SIGMOID, 0}, n);
}

tt_status tt_silu_forward(tt_backend *be, tt_mem out, tt_mem inp, size_t n)
{
    return tt_activation_forward(be, out, inp, (tt_activation){TT_ACT_SILU, 0}, n);
}

tt_status tt_silu_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem inp, size_t n)
{
    TT_TRY(check_act("backward", (tt_activation){TT_ACT_SILU, 0}, n));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    TT_TRY(tt_mem_check("silu backward", "dinp", dinp, n * sizeof(float)));
    TT_TRY(tt_mem_check("silu backward", "dout", dout, n * sizeof(float)));
    TT_TRY(tt_mem_check("silu backward", "inp", inp, n * sizeof(float)));
    if (dinp.buffer == dout.buffer && dinp.offset == dout.offset)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "silu backward: dinp and dout are the same memory; backward adds "
                            "into dinp, so give it its own buffer");
    return TT_LAUNCH_1D(be, "activation", "silu_backward", n, tt_arg_mem(dinp), tt_arg_mem(dout),
                        tt_arg_mem(inp), tt_arg_i32((int)n));
}
