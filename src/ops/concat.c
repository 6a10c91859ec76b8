/* Channel concatenation (see concat.h): host side of opencl/concat.cl. */
#include "ops/concat.h"

#include "core/status.h"

static tt_status check_desc(const char *op, const tt_concat_desc *d)
{
    if (d->batch <= 0 || d->channels_a <= 0 || d->channels_b <= 0 || d->height <= 0 ||
        d->width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: a (%d, %d, %d, %d), b (%d, %d, %d, %d): every size must be "
                            "positive",
                            op, d->batch, d->channels_a, d->height, d->width, d->batch,
                            d->channels_b, d->height, d->width);
    return tt_launch_check_count(
        op, (size_t)d->batch * ((size_t)d->channels_a + d->channels_b) * d->height * d->width);
}

static int same_place(tt_mem x, tt_mem y)
{
    return x.buffer == y.buffer && x.offset == y.offset;
}

/* [x, x + x_floats) and [y, y + y_floats) share bytes. */
static int overlaps(tt_mem x, size_t x_floats, tt_mem y, size_t y_floats)
{
    return x.buffer == y.buffer && x.offset < y.offset + y_floats * sizeof(float) &&
           y.offset < x.offset + x_floats * sizeof(float);
}

int tt_concat_views(const tt_concat_desc *d, tt_mem out, tt_mem *a_view, tt_mem *b_view,
                    size_t *batch_stride)
{
    size_t plane = (size_t)d->height * d->width;
    if (a_view) *a_view = out;
    if (b_view) *b_view = tt_mem_f32(out, (size_t)d->channels_a * plane);
    if (batch_stride) *batch_stride = (size_t)(d->channels_a + d->channels_b) * plane;
    return d->batch == 1;
}

/* One part's copy into the whole (forward) or accumulation from the whole
 * (backward); nothing when the part is its own view. */
static tt_status run_part(tt_backend *be, int forward, const char *name, tt_mem part,
                          tt_mem view, tt_mem whole, int part_channels, int channel_offset,
                          const tt_concat_desc *d)
{
    const char *op = forward ? "concat forward" : "concat backward";
    if (same_place(part, view)) return NULL; /* already in place */
    int plane = d->height * d->width, channels = d->channels_a + d->channels_b;
    size_t count = (size_t)d->batch * part_channels * plane;
    size_t whole_count = (size_t)d->batch * channels * plane;
    TT_TRY(tt_mem_check(op, name, part, count * sizeof(float)));
    if (overlaps(part, count, whole, whole_count))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %s overlaps the concatenated tensor but is not its view; pass "
                            "the place tt_concat_views() gives, or a separate buffer",
                            op, name);
    /* outputs first: the whole in forward, the part's gradient in backward */
    tt_mem first = forward ? whole : part, second = forward ? part : whole;
    return TT_LAUNCH_1D(be, "concat", forward ? "concat_forward_part" : "concat_backward_part",
                        count, tt_arg_mem(first), tt_arg_mem(second), tt_arg_i32((int)count), tt_arg_i32(part_channels),
                        tt_arg_i32(channel_offset), tt_arg_i32(channels), tt_arg_i32(plane));
}

tt_status tt_concat_forward(tt_backend *be, tt_mem out, tt_mem a, tt_mem b,
                            const tt_concat_desc *d)
{
    const char *op = "concat forward";
    TT_TRY(check_desc(op, d));
    size_t whole = (size_t)d->batch * (d->channels_a + d->channels_b) * d->height * d->width;
    TT_TRY(tt_mem_check(op, "out", out, whole * sizeof(float)));
    tt_mem a_view, b_view;
    tt_concat_views(d, out, &a_view, &b_view, NULL);
    TT_TRY(run_part(be, 1, "a", a, a_view, out, d->channels_a, 0, d));
    return run_part(be, 1, "b", b, b_view, out, d->channels_b, d->channels_a, d);
}

tt_status tt_concat_backward(tt_backend *be, tt_mem da, tt_mem db, tt_mem dout,
                             const tt_concat_desc *d)
{
    const char *op = "concat backward";
    TT_TRY(check_desc(op, d));
    size_t whole = (size_t)d->batch * (d->channels_a + d->channels_b) * d->height * d->width;
    TT_TRY(tt_mem_check(op, "dout", dout, whole * sizeof(float)));
    tt_mem a_view, b_view;
    tt_concat_views(d, dout, &a_view, &b_view, NULL);
    if (da.buffer) TT_TRY(run_part(be, 0, "da", da, a_view, dout, d->channels_a, 0, d));
    if (db.buffer)
        TT_TRY(run_part(be, 0, "db", db, b_view, dout, d->channels_b, d->channels_a, d));
    return NULL;
}
