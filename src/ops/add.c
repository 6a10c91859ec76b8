/* Element-wise add with an optional fused ReLU (see add.h): host side,
 * launching opencl/add.cl.  The checks here enforce add.h's aliasing rule:
 * any two tensors are the very same place or apart. */
#include "ops/add.h"

#include "core/status.h"

static int same_place(tt_mem x, tt_mem y) { return x.buffer == y.buffer && x.offset == y.offset; }

/* Both present, in one buffer, sharing a byte of their `bytes` each. */
static int overlap(tt_mem x, tt_mem y, size_t bytes)
{
    return x.buffer && x.buffer == y.buffer && x.offset < y.offset + bytes &&
           y.offset < x.offset + bytes;
}

/* Fails unless x and y are the same place or apart. */
static tt_status same_or_apart(const char *pass, const char *x_name, tt_mem x, const char *y_name,
                               tt_mem y, size_t bytes)
{
    if (!overlap(x, y, bytes) || same_place(x, y)) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "add %s: %s and %s overlap without being the same place; pass the same "
                        "place to work in place, or separate memory",
                        pass, x_name, y_name);
}

tt_status tt_add_forward(tt_backend *be, tt_mem out, tt_mem a, tt_mem b, int relu, size_t n)
{
    TT_TRY(tt_launch_check_count("add forward", n));
    size_t bytes = n * sizeof(float);
    TT_TRY(tt_mem_check("add", "out", out, bytes));
    TT_TRY(tt_mem_check("add", "a", a, bytes));
    TT_TRY(tt_mem_check("add", "b", b, bytes));
    TT_TRY(same_or_apart("forward", "out", out, "a", a, bytes));
    TT_TRY(same_or_apart("forward", "out", out, "b", b, bytes));
    return TT_LAUNCH_1D(be, "add", "add_forward", n, tt_arg_mem(out), tt_arg_mem(a), tt_arg_mem(b),
                        tt_arg_i32(relu != 0), tt_arg_i32((int)n));
}

tt_status tt_add_backward(tt_backend *be, tt_mem da, tt_mem db, tt_mem dout, tt_mem out, int relu,
                          size_t n)
{
    TT_TRY(tt_launch_check_count("add backward", n));
    if (!da.buffer && !db.buffer) return NULL; /* no gradient wanted */
    size_t bytes = n * sizeof(float);
    TT_TRY(tt_mem_check("add", "dout", dout, bytes));
    if (da.buffer) TT_TRY(tt_mem_check("add", "da", da, bytes));
    if (db.buffer) TT_TRY(tt_mem_check("add", "db", db, bytes));
    if (relu) {
        if (!out.buffer)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "add backward: the fused ReLU needs the forward's output for its "
                                "mask; pass out");
        TT_TRY(tt_mem_check("add", "out", out, bytes));
        if (overlap(da, out, bytes) || overlap(db, out, bytes))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "add backward: a gradient overlaps the forward's output, which "
                                "holds the ReLU's mask; give the gradient its own memory");
    }
    if (overlap(da, db, bytes))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "add backward: da and db overlap; give each its own memory (for "
                            "out = x + x pass one gradient and call backward twice, or scale)");
    TT_TRY(same_or_apart("backward", "da", da, "dout", dout, bytes));
    TT_TRY(same_or_apart("backward", "db", db, "dout", dout, bytes));
    /* absent buffers reach the kernel as dout, which a flag keeps unwritten */
    tt_mem stand_in = dout;
    return TT_LAUNCH_1D(be, "add", "add_backward", n, tt_arg_mem(da.buffer ? da : stand_in),
                        tt_arg_mem(db.buffer ? db : stand_in), tt_arg_mem(dout),
                        tt_arg_mem(relu ? out : stand_in), tt_arg_i32(da.buffer != NULL),
                        tt_arg_i32(!same_place(da, dout)), tt_arg_i32(db.buffer != NULL),
                        tt_arg_i32(!same_place(db, dout)), tt_arg_i32(relu != 0),
                        tt_arg_i32((int)n));
}
