/* Normalisation kinds (none | group | batch) and the launches of opencl/norm.cl
 * that group norm and batch norm share.  See norm.h. */
#include "ops/norm.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>

#include "core/status.h"
#include "ops/device_traits.h"

const char *const tt_norm_kind_names[TT_NORM_KIND_COUNT] = {
    [TT_NORM_NONE] = "none",
    [TT_NORM_GROUP] = "group",
    [TT_NORM_BATCH] = "batch",
};
_Static_assert(sizeof tt_norm_kind_names / sizeof tt_norm_kind_names[0] == TT_NORM_KIND_COUNT,
               "every tt_norm_kind needs a name");

const char *tt_norm_kind_name(tt_norm_kind kind)
{
    if ((int)kind < 0 || kind >= TT_NORM_KIND_COUNT) return "?";
    return tt_norm_kind_names[kind];
}

static int equals_ignoring_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

tt_status tt_norm_kind_parse(const char *text, tt_norm_kind *kind)
{
    if (text)
        for (int k = 0; k < TT_NORM_KIND_COUNT; k++)
            if (equals_ignoring_case(text, tt_norm_kind_names[k])) {
                *kind = (tt_norm_kind)k;
                return NULL;
            }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "normalisation \"%s\" is unknown: use one of none, group, batch",
                        text ? text : "(null)");
}

size_t tt_norm_kind_param_floats(tt_norm_kind kind, int channels)
{
    return (kind == TT_NORM_GROUP || kind == TT_NORM_BATCH) && channels > 0 ? 2 * (size_t)channels
                                                                            : 0;
}

size_t tt_norm_kind_state_floats(tt_norm_kind kind, int channels)
{
    return kind == TT_NORM_BATCH && channels > 0 ? 2 * (size_t)channels : 0;
}

/* ---- shared launch helpers ------------------------------------------------ */

tt_status tt_norm_check_shape(const char *op, int batch, int channels, int height, int width)
{
    if (batch <= 0 || channels <= 0 || height <= 0 || width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: shape (N=%d, C=%d, H=%d, W=%d) must be positive", op, batch,
                            channels, height, width);
    double total = (double)batch * channels * height * width;
    if (total > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: shape (N=%d, C=%d, H=%d, W=%d) has %.0f elements, more than one "
                            "launch takes (%d); use a smaller micro-batch or tile",
                            op, batch, channels, height, width, total, INT_MAX);
    return NULL;
}

/* A plane's work-items: shares of at least NORM_MIN_CHUNK_VECS float8
 * vectors (enough streaming per work-item to pay for its start), at most
 * NORM_MAX_CHUNKS of them (the partial sums stay a small fraction of the
 * statistics' cost). */
#define NORM_MIN_CHUNK_VECS 128
#define NORM_MAX_CHUNKS 64

static tt_norm_layout with_chunks(tt_norm_layout l)
{
    int nv = l.hw / 8;
    l.chunks = (nv + NORM_MIN_CHUNK_VECS - 1) / NORM_MIN_CHUNK_VECS;
    if (l.chunks > NORM_MAX_CHUNKS) l.chunks = NORM_MAX_CHUNKS;
    if (l.chunks < 1) l.chunks = 1;
    l.chunk_vecs = (nv + l.chunks - 1) / l.chunks;
    return l;
}

tt_norm_layout tt_norm_layout_group(int batch, int channels, int height, int width, int groups)
{
    int per_group = channels / groups;
    return with_chunks((tt_norm_layout){
        .batch = batch, .channels = channels, .hw = height * width,
        .stat_count = batch * groups, .stat_n_stride = groups, .channels_per_stat = per_group,
        .planes_per_stat = per_group, .stat_plane_stride = per_group, .plane_stride = 1,
    });
}

tt_norm_layout tt_norm_layout_batch(int batch, int channels, int height, int width)
{
    return with_chunks((tt_norm_layout){
        .batch = batch, .channels = channels, .hw = height * width,
        .stat_count = channels, .stat_n_stride = 0, .channels_per_stat = 1,
        .planes_per_stat = batch, .stat_plane_stride = 1, .plane_stride = channels,
    });
}

/* The saved buffer: [mean | rstd] (stat_count each), then the scratch:
 * 3 floats per work-item (norm_moments; norm_grad_sums uses 2 of them),
 * then 2 per statistic (norm_input_coefs). */
static size_t partial_floats(const tt_norm_layout *l)
{
    return 3 * (size_t)l->batch * (size_t)l->channels * (size_t)l->chunks;
}

size_t tt_norm_saved_floats(const tt_norm_layout *l)
{
    return 4 * (size_t)l->stat_count + partial_floats(l);
}

tt_status tt_norm_check_saved(const char *op, tt_mem saved, const tt_norm_layout *l)
{
    char what[64];
    snprintf(what, sizeof what, "saved (size it with tt_%s_saved_floats)", op);
    return tt_mem_check(op, what, saved, tt_norm_saved_floats(l) * sizeof(float));
}

tt_mem tt_norm_saved_mean(tt_mem saved) { return saved; }

tt_mem tt_norm_saved_rstd(tt_mem saved, const tt_norm_layout *l)
{
    return tt_mem_f32(saved, (size_t)l->stat_count);
}

tt_mem tt_norm_saved_scratch(tt_mem saved, const tt_norm_layout *l)
{
    return tt_mem_f32(saved, 2 * (size_t)l->stat_count);
}

/* A launch over the grid (chunks, planes).  On CPUs each work-item is a
 * work-group: its loop is explicit float8 code, which PoCL's vectorising
 * across work-items would only get in the way of. */
static tt_status launch_grid(tt_backend *be, const char *kernel, const tt_norm_layout *l,
                             size_t width, int arg_count, const tt_arg *args)
{
    int inter = tt_device_traits_of(be).norm_interleave;
    size_t global[2] = {width, (size_t)l->batch * (size_t)l->channels};
    size_t one[2] = {1, 1};
    /* x or the gradients stored in 16 bits: NORM_X16, NORM_G16 = 1 fp16,
     * 2 bf16 (no option for fp32: the programs built so far stay what they
     * were) */
    int x16 = tt_precision_format(l->x_precision);
    int g16 = tt_precision_format(l->g_precision);
    char options[96];
    snprintf(options, sizeof options, "%s%s%s", inter ? " -DNORM_INTERLEAVE=1" : "",
             x16 == 1 ? " -DNORM_X16=1" : x16 == 2 ? " -DNORM_X16=2" : "",
             g16 == 1 ? " -DNORM_G16=1" : g16 == 2 ? " -DNORM_G16=2" : "");
    return tt_launch_kernel(be, "norm", kernel, options[0] ? options + 1 : NULL, 2, global,
                            inter ? NULL : one, arg_count, args);
}

static tt_status launch_planes(tt_backend *be, const char *kernel, const tt_norm_layout *l,
                               int arg_count, const tt_arg *args)
{
    return launch_grid(be, kernel, l, (size_t)l->chunks, arg_count, args);
}

static int present(tt_mem m) { return m.buffer != NULL; }
/* Absent buffers reach the kernel as a stand-in that a flag keeps unused. */
static tt_mem or_stand_in(tt_mem m, tt_mem stand_in) { return present(m) ? m : stand_in; }

tt_status tt_norm_launch_stats(tt_backend *be, const tt_norm_layout *l, tt_mem mean, tt_mem rstd,
                               tt_mem running_mean, tt_mem running_var, tt_mem x, tt_mem scratch,
                               float eps, float momentum)
{
    TT_TRY(launch_planes(be, "norm_moments", l,
                         TT_ARGS(tt_arg_mem(scratch), tt_arg_mem(x), tt_arg_i32(l->hw),
                                 tt_arg_i32(l->chunks), tt_arg_i32(l->chunk_vecs))));
    int update = present(running_mean) && present(running_var);
    return TT_LAUNCH_1D(be, "norm", "norm_stats", (size_t)l->stat_count, tt_arg_mem(mean),
                        tt_arg_mem(rstd), tt_arg_mem(or_stand_in(running_mean, mean)),
                        tt_arg_mem(or_stand_in(running_var, rstd)), tt_arg_mem(scratch),
                        tt_arg_i32(l->stat_count), tt_arg_i32(l->planes_per_stat),
                        tt_arg_i32(l->stat_plane_stride), tt_arg_i32(l->plane_stride),
                        tt_arg_i32(l->chunks), tt_arg_f32(eps), tt_arg_i32(update),
                        tt_arg_f32(momentum));
}

/* NORM_PLANE_ARGS of opencl/norm.cl after the `lead` arguments already in
 * a[]; returns the count of all. */
static int plane_args(tt_arg *a, int lead, const tt_norm_layout *l, const tt_norm_params *p,
                      tt_mem stand_in)
{
    tt_arg tail[] = {
        tt_arg_mem(p->mean), tt_arg_mem(p->stat), tt_arg_mem(or_stand_in(p->weight, stand_in)),
        tt_arg_mem(or_stand_in(p->bias, stand_in)), tt_arg_i32(p->relu),
        tt_arg_i32(p->stat_is_var), tt_arg_f32(p->eps), tt_arg_i32(present(p->weight)),
        tt_arg_i32(present(p->bias)), tt_arg_i32(l->channels), tt_arg_i32(l->hw),
        tt_arg_i32(l->stat_n_stride), tt_arg_i32(l->channels_per_stat), tt_arg_i32(l->chunks),
        tt_arg_i32(l->chunk_vecs),
    };
    int n = (int)(sizeof tail / sizeof tail[0]);
    for (int i = 0; i < n; i++) a[lead + i] = tail[i];
    return lead + n;
}

tt_status tt_norm_launch_apply(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x,
                               const tt_norm_params *p)
{
    tt_arg a[TT_MAX_KERNEL_ARGS] = {tt_arg_mem(y), tt_arg_mem(x)};
    return launch_planes(be, "norm_apply", l, plane_args(a, 2, l, p, x), a);
}

tt_status tt_norm_launch_apply_band(tt_backend *be, const tt_norm_layout *l, tt_mem y, tt_mem x,
                                    const tt_norm_params *p, const tt_band *band)
{
    const char *op = "norm apply band";
    TT_TRY(tt_band_check(op, band));
    if (band->planes != l->batch * l->channels ||
        (size_t)band->height * band->width != (size_t)l->hw)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: a band of %d planes %dx%d of a tensor of %d planes of %d; give "
                            "the norm's own shape",
                            op, band->planes, band->height, band->width, l->batch * l->channels,
                            l->hw);
    TT_TRY(tt_mem_check(op, "band", y, 4 * tt_band_floats(band)));
    tt_band_span span = tt_band_span_of(band);
    tt_arg a[TT_MAX_KERNEL_ARGS] = {tt_arg_mem(y), tt_arg_mem(x)};
    int n = plane_args(a, 2, l, p, x);
    a[n++] = tt_arg_i32(span.from);
    a[n++] = tt_arg_i32(span.lead);
    a[n++] = tt_arg_i32(span.count);
    a[n++] = tt_arg_i32(span.trail);
    size_t len = (size_t)span.lead + span.count + span.trail;
    return launch_grid(be, "norm_apply_band", l, (len + 7) / 8, n, a);
}

/* dinp at dy's very place: overwrite (in place).  Any other overlap is a
 * caller's mistake. */
static tt_status in_place(const char *op, const tt_norm_layout *l, tt_mem dinp, tt_mem dy,
                          int *overwrite)
{
    size_t bytes = (size_t)l->batch * l->channels * l->hw * tt_precision_bytes(l->g_precision);
    *overwrite = dinp.buffer == dy.buffer && dinp.offset == dy.offset;
    if (dinp.buffer == dy.buffer && !*overwrite && dinp.offset < dy.offset + bytes &&
        dy.offset < dinp.offset + bytes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: the input gradient overlaps the output gradient without being "
                            "it; pass the same place to work in place, or separate ones", op);
    return NULL;
}

tt_mem tt_norm_scratch_coefs(tt_mem scratch, const tt_norm_layout *l)
{
    return tt_mem_f32(scratch, partial_floats(l));
}

tt_status tt_norm_launch_moments(tt_backend *be, const tt_norm_layout *l, tt_mem moments,
                                 tt_mem x, tt_mem scratch)
{
    TT_TRY(launch_planes(be, "norm_moments", l,
                         TT_ARGS(tt_arg_mem(scratch), tt_arg_mem(x), tt_arg_i32(l->hw),
                                 tt_arg_i32(l->chunks), tt_arg_i32(l->chunk_vecs))));
    return TT_LAUNCH_1D(be, "norm", "norm_stat_moments", (size_t)l->stat_count,
                        tt_arg_mem(moments), tt_arg_mem(scratch), tt_arg_i32(l->stat_count),
                        tt_arg_i32(l->planes_per_stat), tt_arg_i32(l->stat_plane_stride),
                        tt_arg_i32(l->plane_stride), tt_arg_i32(l->chunks));
}

tt_status tt_norm_launch_grad_sums(tt_backend *be, const tt_norm_layout *l, tt_mem dweight,
                                   tt_mem dbias, tt_mem dy, tt_mem x, const tt_norm_params *p,
                                   int coefs, tt_mem scratch)
{
    int params = present(dweight) || present(dbias);
    tt_arg a[TT_MAX_KERNEL_ARGS] = {tt_arg_mem(scratch), tt_arg_mem(dy), tt_arg_mem(x)};
    if (params || coefs) TT_TRY(launch_planes(be, "norm_grad_sums", l, plane_args(a, 3, l, p, x), a));
    if (params) {
        tt_mem stand_in = present(dweight) ? dweight : dbias;
        TT_TRY(TT_LAUNCH_1D(be, "norm", "norm_param_grads", (size_t)l->channels,
                            tt_arg_mem(or_stand_in(dweight, stand_in)),
                            tt_arg_mem(or_stand_in(dbias, stand_in)), tt_arg_mem(scratch),
                            tt_arg_i32(present(dweight)), tt_arg_i32(present(dbias)),
                            tt_arg_i32(l->batch), tt_arg_i32(l->channels),
                            tt_arg_i32(l->chunks)));
    }
    if (!coefs) return NULL;
    return TT_LAUNCH_1D(be, "norm", "norm_input_coefs", (size_t)l->stat_count,
                        tt_arg_mem(tt_norm_scratch_coefs(scratch, l)), tt_arg_mem(scratch),
                        tt_arg_mem(or_stand_in(p->weight, x)), tt_arg_i32(present(p->weight)),
                        tt_arg_i32(l->stat_count), tt_arg_i32(l->planes_per_stat),
                        tt_arg_i32(l->stat_plane_stride), tt_arg_i32(l->plane_stride),
                        tt_arg_i32(l->channels), tt_arg_i32(l->hw), tt_arg_i32(l->chunks));
}

tt_status tt_norm_check_in_place(const char *op, const tt_norm_layout *l, tt_mem dinp, tt_mem dy)
{
    int overwrite;
    return in_place(op, l, dinp, dy, &overwrite);
}

tt_status tt_norm_launch_input_grad(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                                    tt_mem dy, tt_mem x, const tt_norm_params *p, int coefs,
                                    tt_mem scratch)
{
    int overwrite = 0;
    TT_TRY(in_place("norm backward", l, dinp, dy, &overwrite));
    tt_arg b[TT_MAX_KERNEL_ARGS] = {tt_arg_mem(dinp), tt_arg_mem(dy), tt_arg_mem(x),
                                    tt_arg_mem(coefs ? tt_norm_scratch_coefs(scratch, l) : x),
                                    tt_arg_i32(coefs), tt_arg_i32(!overwrite)};
    return launch_planes(be, "norm_backward_input", l, plane_args(b, 6, l, p, x), b);
}

tt_status tt_norm_launch_backward(tt_backend *be, const tt_norm_layout *l, tt_mem dinp,
                                  tt_mem dweight, tt_mem dbias, tt_mem dy, tt_mem x,
                                  const tt_norm_params *p, int training, tt_mem scratch)
{
    if (present(dinp)) TT_TRY(tt_norm_check_in_place("norm backward", l, dinp, dy));
    int coefs = present(dinp) && training;
    TT_TRY(tt_norm_launch_grad_sums(be, l, dweight, dbias, dy, x, p, coefs, scratch));
    if (!present(dinp)) return NULL;
    return tt_norm_launch_input_grad(be, l, dinp, dy, x, p, coefs, scratch);
}
