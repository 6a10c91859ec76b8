/* Helpers shared by the convolution ops; see conv_algo.h. */
#include "ops/conv_algo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/loop_budget.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/knobs.h"
#include "core/status.h"
#include "ops/conv_autotune.h"
#include "ops/conv_verify.h"
#include "ops/device_traits.h"
#include "ops/util.h"

/* The work-group of conv_bias_backward; opencl/conv.cl takes it from here. */
#define CONV_BIAS_WG 64
#define STR(x) #x
#define XSTR(x) STR(x)
#define CONV_OPTIONS "-DTT_CONV_BIAS_WG=" XSTR(CONV_BIAS_WG)

static const char *const dir_names[] = {
    [TT_CONV_DIR_FORWARD] = "forward",
    [TT_CONV_DIR_BACKWARD_DATA] = "backward_data",
    [TT_CONV_DIR_BACKWARD_WEIGHT] = "backward_weight",
};
_Static_assert(sizeof dir_names / sizeof dir_names[0] == TT_CONV_DIR_COUNT,
               "every tt_conv_dir needs a name");

const char *tt_conv_dir_name(tt_conv_dir dir)
{
    return (unsigned)dir < TT_CONV_DIR_COUNT ? dir_names[dir] : "unknown";
}

int tt_conv_algo_runs(const tt_conv_algo_impl *impl, const tt_conv_shape *s, tt_conv_dir dir)
{
    if (!impl) return 0;
    int has = dir == TT_CONV_DIR_FORWARD         ? impl->forward != NULL
              : dir == TT_CONV_DIR_BACKWARD_DATA ? impl->backward_data != NULL
                                                 : impl->backward_weight != NULL;
    return has && (!impl->supports || impl->supports(s, dir));
}

tt_status tt_conv_bias_fill(tt_backend *be, tt_mem y, tt_mem bias, size_t batch,
                            size_t channels, size_t plane)
{
    TT_TRY(tt_launch_check_count("conv bias fill", batch * channels * plane));
    size_t global[2] = {plane, batch * channels};
    return tt_launch_kernel(be, "conv", "conv_bias_fill", CONV_OPTIONS, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(y), tt_arg_mem(bias), tt_arg_i32((int)channels),
                                    tt_arg_i32((int)plane), tt_arg_i32((int)(batch * channels))));
}

/* One launch of the bias gradient over `batch` images of `plane` pixels,
 * rows `pitch` floats apart, starting at `dout`. */
static tt_status bias_backward_launch(tt_backend *be, int w8, tt_mem dbias, tt_mem dout,
                                      size_t batch, size_t channels, size_t plane, size_t pitch)
{
    size_t global[1] = {w8 ? channels : channels * CONV_BIAS_WG};
    size_t local[1] = {w8 ? 1 : CONV_BIAS_WG};
    return tt_launch_kernel(be, "conv", w8 ? "conv_bias_backward_w8" : "conv_bias_backward",
                            CONV_OPTIONS, 1, global, local,
                            TT_ARGS(tt_arg_mem(dbias), tt_arg_mem(dout), tt_arg_i32((int)batch),
                                    tt_arg_i32((int)channels), tt_arg_i32((int)plane),
                                    tt_arg_i32((int)pitch)));
}

int tt_conv_winograd_shape(const tt_conv_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->dh == 1 && s->dw == 1 &&
           s->groups == 1;
}

tt_status tt_conv_clear_input(tt_backend *be, tt_mem dinp, const tt_conv_shape *s, int accumulate)
{
    return accumulate ? NULL : tt_fill(be, dinp, 0.0f, s->batch * s->cin * s->in_plane);
}

/* An invocation sums batch x plane / (8 or CONV_BIAS_WG) steps of its
 * channel: past TT_LOOP_BUDGET of them the sum runs as several launches,
 * each adding its share into dbias (whole images while one fits, else
 * slices of each plane), in the same order on every backend. */
tt_status tt_conv_bias_backward(tt_backend *be, tt_mem dbias, tt_mem dout, size_t batch,
                                size_t channels, size_t plane)
{
    TT_TRY(tt_launch_check_count("conv bias backward", batch * channels * plane));
    int w8 = tt_device_traits_of(be).w8; /* CPUs: a channel a work-item */
    size_t share = (size_t)TT_LOOP_BUDGET * (w8 ? 8 : CONV_BIAS_WG);
    if (batch * plane <= share)
        return bias_backward_launch(be, w8, dbias, dout, batch, channels, plane, plane);
    if (plane <= share) {
        size_t images = share / plane;
        for (size_t n = 0; n < batch; n += images)
            TT_TRY(bias_backward_launch(be, w8, dbias, tt_mem_f32(dout, n * channels * plane),
                                        batch - n < images ? batch - n : images, channels,
                                        plane, plane));
        return NULL;
    }
    for (size_t n = 0; n < batch; n++)
        for (size_t p = 0; p < plane; p += share)
            TT_TRY(bias_backward_launch(be, w8, dbias,
                                        tt_mem_f32(dout, n * channels * plane + p), 1, channels,
                                        plane - p < share ? plane - p : share, plane));
    return NULL;
}

tt_status tt_conv_workspace_acquire(tt_backend *be, const char *name,
                                    tt_mem given, size_t bytes, tt_conv_workspace *out)
{
    *out = (tt_conv_workspace){{0}, NULL};
    if (bytes == 0) return NULL;
    if (given.buffer && given.offset <= given.buffer->bytes &&
        bytes <= given.buffer->bytes - given.offset) {
        out->mem = given;
        return NULL;
    }
    TT_TRY(tt_buffer_alloc(be, bytes, TT_MEM_WORKSPACE, name, &out->owned));
    out->mem = tt_mem_of(out->owned);
    return NULL;
}

void tt_conv_workspace_release(tt_conv_workspace *ws)
{
    /* In-order queue: OpenCL keeps the buffer alive until queued work ends. */
    tt_buffer_free(ws->owned);
    ws->owned = NULL;
}

/* ---- dispatch ----------------------------------------------------------- */

/* `want` (not AUTO) if it runs `dir` of the call's shape itself, else the
 * IM2COL_GEMM fallback, which runs everything. */
static tt_conv_algo concrete(const tt_conv_call *c, tt_conv_algo want, tt_conv_dir dir)
{
    return c->family->runs(want, c->shape, dir) ? want : TT_CONV_ALGO_IM2COL_GEMM;
}

/* Whether `be` has what `algo` launches on the call's shape (a backend may
 * lack programs: Vulkan has neither winograd4x4, nor direct_w16); NULL: any. */
static int on_backend(const tt_backend *be, const tt_conv_call *c, tt_conv_algo algo)
{
    const tt_conv_algo_impl *impl = c->family->row(algo);
    if (!be) return 1;
    if (!impl) return 0;
    /* a dry backend has the members of the one it stands in for; its
     * has_program answers for that one's kernels */
    int dry = be->ops->runs_nothing;
    if (!dry && (impl->needs & TT_CONV_NEEDS_GEMM) && !be->ops->gemm) return 0;
    if (!dry && (impl->needs & TT_CONV_NEEDS_IM2COL) && !(be->ops->im2col && be->ops->col2im))
        return 0;
    return tt_backend_has_program(be, c->family->program(algo, c->shape));
}

int tt_conv_algo_impl_tuned_on(const tt_backend *be, const tt_conv_algo_impl *impl)
{
    if (!impl) return 0;
    if (!be) return 1;
    int cl_cpu = tt_device_traits_of(be).opencl_cpu;
    return (impl->tuned_on & (cl_cpu ? TT_TUNED_CL_CPU : TT_TUNED_ELSEWHERE)) != 0;
}

/* The algorithms that run `dir` of the shape on `be` (NULL: any backend);
 * with `tuned`, only those AUTO times there (tuned_on). */
static int runners_of(const tt_backend *be, const tt_conv_call *c, tt_conv_dir dir, int tuned,
                      tt_conv_algo *out)
{
    int count = 0;
    for (int a = TT_CONV_ALGO_AUTO + 1; a < TT_CONV_ALGO_COUNT; a++)
        if (c->family->runs((tt_conv_algo)a, c->shape, dir) &&
            on_backend(be, c, (tt_conv_algo)a) && (!tuned || tt_conv_algo_impl_tuned_on(be, c->family->row((tt_conv_algo)a))))
            out[count++] = (tt_conv_algo)a;
    return count;
}

/* Whether `algo`'s workspace for the call is within its limit. */
static int within_limit(const tt_conv_call *c, tt_conv_algo algo)
{
    return !c->workspace_limit || c->family->workspace(algo, c->shape) <= c->workspace_limit;
}

/* Of the algorithms that run `dir` of the call on `be`, timed there or not,
 * the one with the least workspace within the call's limit that is not
 * among out[0..count); AUTO when none. */
static tt_conv_algo least_other(const tt_backend *be, const tt_conv_call *c, tt_conv_dir dir,
                                const tt_conv_algo *out, int count)
{
    tt_conv_algo all[TT_CONV_ALGO_COUNT], best = TT_CONV_ALGO_AUTO;
    int n = runners_of(be, c, dir, 0, all);
    for (int i = 0; i < n; i++) {
        int taken = 0;
        for (int k = 0; k < count; k++) taken |= out[k] == all[i];
        if (taken || !within_limit(c, all[i])) continue;
        if (best == TT_CONV_ALGO_AUTO ||
            c->family->workspace(all[i], c->shape) < c->family->workspace(best, c->shape))
            best = all[i];
    }
    return best;
}

/* The candidates AUTO weighs for `dir` of the shape on `be`: first those
 * it times there that can win (the rows' can_win; a backend-less call,
 * any) within the call's workspace limit, *timed of them; then one checked
 * only, the verifier's first reference, so that a layer with one other
 * candidate still has two algorithms that must agree: im2col_gemm where
 * it cannot win, or where the limit leaves im2col_gemm out and fewer than
 * two are timed, the algorithm with the least workspace of those the
 * device runs, timed there or not (tt_conv_autotune_pick times a
 * reference only where no other is left).  Where the limit leaves
 * nothing, the timed row with the least workspace. */
static int candidates_of(const tt_backend *be, const tt_conv_call *c, tt_conv_dir dir,
                         tt_conv_algo *out, int *timed)
{
    tt_conv_algo all[TT_CONV_ALGO_COUNT];
    int n = runners_of(be, c, dir, 1, all), count = 0, reference = 0, over = 0;
    tt_conv_algo least = TT_CONV_ALGO_AUTO;
    for (int i = 0; i < n; i++) {
        if (least == TT_CONV_ALGO_AUTO ||
            c->family->workspace(all[i], c->shape) < c->family->workspace(least, c->shape))
            least = all[i];
        if (!within_limit(c, all[i])) over |= all[i] == TT_CONV_ALGO_IM2COL_GEMM;
        else if (!be || c->family->can_win(be, all[i], c->shape, dir)) out[count++] = all[i];
        else reference |= all[i] == TT_CONV_ALGO_IM2COL_GEMM;
    }
    if (timed) *timed = count;
    tt_conv_algo lean = over && count < 2 ? least_other(be, c, dir, out, count) : TT_CONV_ALGO_AUTO;
    if (reference) {
        out[count++] = TT_CONV_ALGO_IM2COL_GEMM;
    } else if (lean != TT_CONV_ALGO_AUTO) {
        out[count++] = lean;
    } else if (count == 0 && least != TT_CONV_ALGO_AUTO) {
        out[count++] = least;
        if (timed) *timed = 1;
    }
    return count;
}

int tt_conv_im2col_can_win(const tt_backend *be)
{
    return !tt_device_traits_of(be).opencl_cpu;
}

/* The three sizes, in bytes; the weight has Cout * Cin/groups * kH * kW
 * floats in either op's terms. */
static size_t out_bytes(const tt_conv_shape *s)
{
    return s->batch * s->cout * s->out_plane * sizeof(float);
}

static size_t in_bytes(const tt_conv_shape *s)
{
    return s->batch * s->cin * s->in_plane * sizeof(float);
}

static size_t weight_bytes(const tt_conv_shape *s)
{
    return s->cin * s->cout_g * s->kh * s->kw * sizeof(float);
}

tt_status tt_conv_check_forward(const tt_conv_call *c, tt_mem out, int accumulate)
{
    const tt_conv_shape *s = c->shape;
    char op[64], weight[64];
    snprintf(op, sizeof op, "%s forward%s", c->family->name, accumulate ? " (adding)" : "");
    snprintf(weight, sizeof weight, "weight %s", c->family->weight_layout);
    TT_TRY(tt_mem_check(op, "out (N, Cout, OH, OW)", out, out_bytes(s)));
    TT_TRY(tt_mem_check(op, "inp (N, Cin, H, W)", c->io.inp, in_bytes(s)));
    TT_TRY(tt_mem_check(op, weight, c->io.weight, weight_bytes(s)));
    if (c->io.bias.buffer)
        TT_TRY(tt_mem_check(op, "bias (Cout)", c->io.bias, s->cout * sizeof(float)));
    return NULL;
}

tt_status tt_conv_check_backward(const tt_conv_call *c, tt_mem dinp, tt_mem dweight,
                                 tt_mem dbias)
{
    const tt_conv_shape *s = c->shape;
    char op[64], weight[64], dweight_name[64];
    snprintf(op, sizeof op, "%s backward", c->family->name);
    snprintf(weight, sizeof weight, "weight %s", c->family->weight_layout);
    snprintf(dweight_name, sizeof dweight_name, "dweight %s", c->family->weight_layout);
    TT_TRY(tt_mem_check(op, "dout (N, Cout, OH, OW)", c->io.dout, out_bytes(s)));
    if (dinp.buffer) {
        TT_TRY(tt_mem_check(op, "dinp (N, Cin, H, W)", dinp, in_bytes(s)));
        TT_TRY(tt_mem_check(op, weight, c->io.weight, weight_bytes(s)));
    }
    if (dweight.buffer) {
        TT_TRY(tt_mem_check(op, dweight_name, dweight, weight_bytes(s)));
        TT_TRY(tt_mem_check(op, "inp (N, Cin, H, W)", c->io.inp, in_bytes(s)));
    }
    if (dbias.buffer) TT_TRY(tt_mem_check(op, "dbias (Cout)", dbias, s->cout * sizeof(float)));
    return NULL;
}

size_t tt_conv_dispatch_workspace(const tt_backend *be, const tt_conv_call *c)
{
    tt_conv_algo algos[TT_CONV_ALGO_COUNT];
    size_t bytes = 0;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        int count = 1;
        if (dir == TT_CONV_DIR_BACKWARD_DATA && c->no_input_grad) continue;
        if (c->want == TT_CONV_ALGO_AUTO) {
            char key[256];
            count = candidates_of(be, c, (tt_conv_dir)dir, algos, NULL);
            c->family->key(c->shape, (tt_conv_dir)dir, key, sizeof key);
            if (be) count = tt_conv_autotune_narrow(be, key, algos, count);
        } else {
            algos[0] = concrete(c, c->want, (tt_conv_dir)dir);
        }
        for (int i = 0; i < count; i++) {
            size_t b = c->family->workspace(algos[i], c->shape);
            if (b > bytes) bytes = b;
        }
    }
    return bytes;
}

tt_conv_algo tt_conv_dispatch_known(const tt_backend *be, const tt_conv_call *c, tt_conv_dir dir)
{
    if (c->want != TT_CONV_ALGO_AUTO) return concrete(c, c->want, dir);
    if (!be) return TT_CONV_ALGO_AUTO;
    tt_conv_algo algos[TT_CONV_ALGO_COUNT], pick = TT_CONV_ALGO_AUTO;
    int count = candidates_of(be, c, dir, algos, NULL);
    char key[256];
    c->family->key(c->shape, dir, key, sizeof key);
    if (count == 1) return algos[0];
    return tt_conv_autotune_known(be, key, algos, count, &pick) ? pick : TT_CONV_ALGO_AUTO;
}

/* $TT_CONV_PERTURB (a test knob): when it names `algo`, the middle of
 * out's `floats` floats is moved by the largest magnitude among them, a
 * planted wrong result for the autotuner's check to refuse. */
static tt_status perturb(tt_backend *be, tt_conv_algo algo, tt_mem out, size_t floats)
{
    const char *name = tt_knob_str(TT_KNOB_CONV_PERTURB);
    tt_conv_algo planted;
    if (!name || !*name || floats == 0) return NULL;
    tt_status bad = tt_conv_algo_parse(name, &planted);
    if (bad) return tt_error_prefix(bad, "TT_CONV_PERTURB");
    if (planted != algo) return NULL;
    float *host = tt_malloc(floats * sizeof *host);
    if (!host) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "TT_CONV_PERTURB: out of host memory");
    tt_status status = tt_read(be, host, out, floats * sizeof *host);
    if (!status) {
        float moved = host[floats / 2] + (float)tt_conv_verify_scale(host, floats);
        status = tt_write(be, tt_mem_f32(out, floats / 2), &moved, sizeof moved);
    }
    free(host);
    return status;
}

#define VERIFY_SAMPLES 64

/* What the autotuner's runs of one direction write into, never the
 * caller's outputs: a scratch output and a workspace (the caller's when it
 * is large enough), made by the first run (a failure there leaves them for
 * the next candidate to try again) and freed after the pick.  Its checks
 * (verify below) read the direction's inputs back once, compute the
 * sampled elements in double, and keep the reference's output. */
typedef struct tune_ctx {
    tt_backend *be;
    const tt_conv_call *call;
    tt_conv_dir dir;
    const tt_conv_algo *candidates;
    int count;
    size_t out_bytes, ws_bytes;
    tt_buffer *out;
    tt_conv_workspace ws;
    int prepared;           /* host, index, want and got are made */
    int not_finite;         /* an input holds an infinity or a NaN */
    float *host[4];         /* inp, weight, bias, dout as read back (what dir reads) */
    float *got, *ref, *spare; /* a candidate's output, the reference's, a third */
    tt_conv_algo got_of;    /* whose output got holds (AUTO: none's) */
    double run_ms[TT_CONV_ALGO_COUNT]; /* each algorithm's last run here, launch to finish */
    size_t samples, index[VERIFY_SAMPLES];
    double want[VERIFY_SAMPLES];
    double truth_scale;     /* the largest |want|, or of a sample's terms summed in
                               magnitude, the larger */
    double ref_scale;       /* output_scale() of the reference output */
    tt_conv_algo reference; /* AUTO until chosen, or when none passed */
    int reference_chosen;
} tune_ctx;

static tt_status scratch_get(tune_ctx *t)
{
    if (t->out) return NULL;
    char out_name[64], ws_name[64];
    snprintf(out_name, sizeof out_name, "%s.autotune.output", t->call->family->name);
    snprintf(ws_name, sizeof ws_name, "%s.autotune.workspace", t->call->family->name);
    tt_status status = tt_buffer_alloc(t->be, t->out_bytes, TT_MEM_WORKSPACE,
                                       out_name, &t->out);
    if (!status)
        status = tt_conv_workspace_acquire(t->be, ws_name, t->call->workspace, t->ws_bytes, &t->ws);
    if (status) { /* the next candidate tries again */
        tt_buffer_free(t->out);
        t->out = NULL;
    }
    return status;
}

static tt_status tune_run(void *p, tt_conv_algo algo)
{
    tune_ctx *t = p;
    TT_TRY(scratch_get(t));
    const tt_conv_call *c = t->call;
    return c->family->run(t->be, algo, t->dir, tt_mem_of(t->out), &c->io, c->shape, t->ws.mem, 0);
}

/* Reads `bytes` of `mem` into a new host array (*out). */
static tt_status read_back(tt_backend *be, tt_mem mem, size_t bytes, float **out)
{
    *out = tt_malloc(bytes ? bytes : 1);
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "verifying a convolution: out of host memory");
    return tt_read(be, *out, mem, bytes);
}

/* The inputs `dir` reads, on the host, and the sampled elements in double. */
static tt_status verify_prepare(tune_ctx *t)
{
    if (t->prepared) return NULL;
    const tt_conv_call *c = t->call;
    const tt_conv_shape *s = c->shape;
    int fwd = t->dir == TT_CONV_DIR_FORWARD, wgrad = t->dir == TT_CONV_DIR_BACKWARD_WEIGHT;
    const tt_mem mems[4] = {c->io.inp, c->io.weight, c->io.bias, c->io.dout};
    const size_t bytes[4] = {in_bytes(s), weight_bytes(s), s->cout * sizeof(float), out_bytes(s)};
    const int reads[4] = {fwd || wgrad, !wgrad, fwd && c->io.bias.buffer, !fwd};
    for (int k = 0; k < 4; k++) {
        if (!reads[k]) continue;
        TT_TRY(read_back(t->be, mems[k], bytes[k], &t->host[k]));
        for (size_t i = 0; i < bytes[k] / sizeof(float) && !t->not_finite; i++)
            t->not_finite = !isfinite(t->host[k][i]);
    }
    size_t n = t->out_bytes / sizeof(float);
    t->got = tt_malloc(t->out_bytes ? t->out_bytes : 1);
    t->ref = tt_malloc(t->out_bytes ? t->out_bytes : 1);
    t->spare = tt_malloc(t->out_bytes ? t->out_bytes : 1);
    if (!t->got || !t->ref || !t->spare)
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "verifying a convolution: out of host memory");
    t->samples = n < VERIFY_SAMPLES ? n : VERIFY_SAMPLES;
    tt_conv_host_io io = {t->host[0], t->host[1], t->host[2], t->host[3]};
    double magnitude = 0;
    tt_conv_verify_sample(c->family, s, t->dir, &io, t->samples, t->index, t->want, &magnitude);
    if (!(magnitude <= TT_CONV_VERIFY_HUGE)) t->not_finite = 1; /* near fp32's overflow */
    /* fp32 rounds the terms of each sum, not its result: a sum that
     * cancels (a weight gradient after a training batch norm, whose input
     * gradients sum to 0 over a channel) errs by the terms' size */
    t->truth_scale = magnitude;
    for (size_t k = 0; k < t->samples; k++)
        if (isfinite(t->want[k]) && fabs(t->want[k]) > t->truth_scale)
            t->truth_scale = fabs(t->want[k]);
    if (!(t->truth_scale > 0)) t->truth_scale = 1;
    t->prepared = 1;
    return NULL;
}

/* Runs `algo` into the scratch output (over zeros for the weight gradient,
 * which adds) and reads it into dst. */
static tt_status run_to_host(tune_ctx *t, tt_conv_algo algo, float *dst)
{
    if (dst == t->got) t->got_of = TT_CONV_ALGO_AUTO;
    TT_TRY(scratch_get(t));
    size_t floats = t->out_bytes / sizeof(float);
    tt_mem out = tt_mem_of(t->out);
    if (t->dir == TT_CONV_DIR_BACKWARD_WEIGHT) TT_TRY(tt_fill(t->be, out, 0.0f, floats));
    TT_TRY(tt_finish(t->be)); /* the fill is not the run's time */
    double start = tt_seconds();
    TT_TRY(tune_run(t, algo));
    TT_TRY(tt_finish(t->be));
    t->run_ms[algo] = 1e3 * (tt_seconds() - start);
    TT_TRY(perturb(t->be, algo, out, floats));
    TT_TRY(tt_read(t->be, dst, out, t->out_bytes));
    if (dst == t->got) t->got_of = algo;
    return NULL;
}

static double host_error(const tune_ctx *t, const float *v)
{
    return tt_conv_verify_points(v, t->index, t->want, t->samples, t->truth_scale);
}

/* The scale two algorithms' outputs differ against: the larger of the
 * output's largest value and the samples' largest sum of |terms| (fp32
 * rounds the terms: where a sum cancels, as a weight gradient after a
 * training batch norm does, two right algorithms differ by the terms'
 * rounding, far above the result's). */
static double output_scale(const tune_ctx *t, const float *v)
{
    double top = tt_conv_verify_scale(v, t->out_bytes / sizeof(float));
    return top > t->truth_scale ? top : t->truth_scale;
}

/* Whether a and b, two fp32 results each within `bound` of the exact
 * one, are within twice `bound` of each other. */
static int agree(const tune_ctx *t, const float *a, const float *b, double bound)
{
    return tt_conv_verify_diff(b, a, t->out_bytes / sizeof(float), output_scale(t, a)) <=
           2 * bound;
}

/* The reference: of im2col_gemm, direct and then the other candidates, in
 * that order, those whose output matches the host's double at the samples
 * are tried; the first that a second (or, when those two differ, a third)
 * agrees with everywhere is the reference.  The samples alone miss an
 * element or two gone wrong; two algorithms agreeing everywhere do not.
 * With no such pair, the host's samples are all that checks (reference
 * AUTO). */
static tt_status choose_reference(tune_ctx *t, double bound)
{
    t->reference_chosen = 1;
    tt_conv_algo order[TT_CONV_ALGO_COUNT + 2], who[3];
    int n = 0, have = 0, settled = 0; /* settled: who[0] is agreed with */
    order[n++] = TT_CONV_ALGO_IM2COL_GEMM, order[n++] = TT_CONV_ALGO_DIRECT;
    for (int i = 0; i < t->count; i++) order[n++] = t->candidates[i];
    float *outs[3] = {t->ref, t->got, t->spare};
    for (int k = 0; k < n && !settled; k++) {
        int candidate = 0, seen = 0;
        for (int i = 0; i < t->count; i++) candidate |= t->candidates[i] == order[k];
        for (int i = 0; i < k; i++) seen |= order[i] == order[k];
        if (!candidate || seen) continue;
        tt_status failed = run_to_host(t, order[k], outs[have]);
        if (failed) { /* its own check reports it */
            tt_status_free(failed);
            continue;
        }
        if (!(host_error(t, outs[have]) <= bound)) continue;
        who[have++] = order[k];
        if (have == 2) {
            settled = agree(t, outs[0], outs[1], bound);
        } else if (have == 3) {
            settled = agree(t, outs[0], outs[2], bound);
            if (!settled && agree(t, outs[1], outs[2], bound)) {
                memcpy(t->ref, outs[1], t->out_bytes);
                who[0] = who[1];
                settled = 1;
            }
            if (!settled) have = 0; /* three that differ: none is the reference */
        }
    }
    if (!settled && have != 1) return NULL; /* none, or two that differ */
    t->reference = who[0];
    size_t floats = t->out_bytes / sizeof(float);
    t->ref_scale = output_scale(t, t->ref);
    /* a result that overflowed somewhere, or came near it, decides nothing */
    for (size_t i = 0; i < floats && !t->not_finite; i++) t->not_finite = !isfinite(t->ref[i]);
    if (!(t->ref_scale <= TT_CONV_VERIFY_HUGE)) t->not_finite = 1;
    return NULL;
}

/* tt_conv_verify_fn: `algo`'s output against the reference's everywhere
 * and the host's double at the samples. */
static tt_status verify(void *p, tt_conv_algo algo, tt_conv_verdict *v)
{
    tune_ctx *t = p;
    const tt_conv_call *c = t->call;
    TT_TRY(verify_prepare(t));
    v->bound = tt_conv_verify_bound(tt_conv_verify_reduction(c->family, c->shape, t->dir));
    v->undecided = t->not_finite; /* an infinity spreads as each algorithm's sums go */
    if (v->undecided) return NULL;
    if (!t->reference_chosen) TT_TRY(choose_reference(t, v->bound));
    v->undecided = t->not_finite;
    if (v->undecided) return NULL;
    const float *got = t->ref;
    if (algo != t->reference || t->reference == TT_CONV_ALGO_AUTO) {
        /* the reference's second, run while choosing it, is not run again */
        if (t->got_of != algo) TT_TRY(run_to_host(t, algo, t->got));
        got = t->got;
    }
    v->ms = t->run_ms[algo];
    double on_host = host_error(t, got), off_ref = 0;
    if (t->reference != TT_CONV_ALGO_AUTO && algo != t->reference)
        off_ref = tt_conv_verify_diff(got, t->ref, t->out_bytes / sizeof(float), t->ref_scale);
    /* the reference rounds too: off it, the bound is twice the host's */
    if (off_ref / 2 > on_host) {
        v->error = off_ref, v->bound *= 2, v->reference = t->reference;
    } else {
        v->error = on_host, v->reference = algo; /* itself: the host's double */
    }
    return NULL;
}

/* The workspace the most demanding of `algos` needs for the call. */
static size_t most_workspace(const tt_conv_call *c, const tt_conv_algo *algos, int count)
{
    size_t bytes = 0;
    for (int i = 0; i < count; i++) {
        size_t b = c->family->workspace(algos[i], c->shape);
        if (b > bytes) bytes = b;
    }
    return bytes;
}

/* The context of `dir` of the call over its candidates `algos`. */
static tune_ctx tune_ctx_of(tt_backend *be, const tt_conv_call *c, tt_conv_dir dir,
                            const tt_conv_algo *algos, int count)
{
    return (tune_ctx){.be = be, .call = c, .dir = dir, .candidates = algos, .count = count,
                      .got_of = TT_CONV_ALGO_AUTO,
                      .out_bytes = tt_conv_verify_out_floats(c->shape, dir) * sizeof(float),
                      .ws_bytes = most_workspace(c, algos, count)};
}

static void tune_ctx_free(tune_ctx *t)
{
    tt_buffer_free(t->out);
    tt_conv_workspace_release(&t->ws);
    for (int i = 0; i < 4; i++) free(t->host[i]);
    free(t->got), free(t->ref), free(t->spare);
}

int tt_conv_dispatch_runs_on(const tt_backend *be, const tt_conv_call *c)
{
    tt_conv_algo algos[TT_CONV_ALGO_COUNT];
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        if (dir == TT_CONV_DIR_BACKWARD_DATA && c->no_input_grad) continue;
        int runs = c->want == TT_CONV_ALGO_AUTO
                       ? candidates_of(be, c, (tt_conv_dir)dir, algos, NULL) > 0
                       : on_backend(be, c, concrete(c, c->want, (tt_conv_dir)dir));
        if (!runs) return 0;
    }
    return 1;
}

/* The algorithm that runs `dir`: the requested one (or its fallback), or
 * the autotuner's pick, timed on the call's inputs when nothing is known. */
static tt_status resolve(tt_backend *be, const tt_conv_call *c, tt_conv_dir dir,
                         tt_conv_algo *out)
{
    if (c->want != TT_CONV_ALGO_AUTO) {
        *out = concrete(c, c->want, dir);
        if (!on_backend(be, c, *out))
            return tt_error_new(TT_ERR_UNSUPPORTED,
                                "the %s backend has no %s convolution (its kernels or library "
                                "are missing there): ask for auto, which picks among the "
                                "algorithms it has",
                                tt_backend_kind_name((tt_backend_kind)be->kernels_of),
                                tt_conv_algo_name(*out));
        return NULL;
    }
    const tt_conv_shape *s = c->shape;
    tt_conv_algo algos[TT_CONV_ALGO_COUNT];
    int timed = 0, count = candidates_of(be, c, dir, algos, &timed);
    char key[256];
    c->family->key(s, dir, key, sizeof key);
    tune_ctx t = tune_ctx_of(be, c, dir, algos, count);
    tt_status status =
        tt_conv_autotune_pick(be, key, algos, count, timed, tune_run, verify, &t, out);
    tune_ctx_free(&t);
    return status;
}

tt_status tt_conv_dispatch_verify(tt_backend *be, const tt_conv_call *c, tt_conv_dir dir,
                                  tt_conv_verdict *verdicts, int *checked)
{
    const tt_conv_shape *s = c->shape;
    char op[64];
    snprintf(op, sizeof op, "%s check", c->family->name);
    const tt_conv_io *io = &c->io;
    if (dir != TT_CONV_DIR_BACKWARD_DATA) TT_TRY(tt_mem_check(op, "inp", io->inp, in_bytes(s)));
    if (dir != TT_CONV_DIR_BACKWARD_WEIGHT)
        TT_TRY(tt_mem_check(op, "weight", io->weight, weight_bytes(s)));
    if (dir != TT_CONV_DIR_FORWARD) TT_TRY(tt_mem_check(op, "dout", io->dout, out_bytes(s)));
    if (dir == TT_CONV_DIR_FORWARD && io->bias.buffer)
        TT_TRY(tt_mem_check(op, "bias", io->bias, s->cout * sizeof(float)));
    tt_conv_algo algos[TT_CONV_ALGO_COUNT];
    int count = runners_of(be, c, dir, 0, algos); /* every one the device runs, tuned or not */
    for (int a = 0; a < TT_CONV_ALGO_COUNT; a++) checked[a] = 0;
    tune_ctx t = tune_ctx_of(be, c, dir, algos, count);
    tt_status status = NULL;
    for (int i = 0; i < count && !status; i++) {
        status = verify(&t, algos[i], &verdicts[algos[i]]);
        checked[algos[i]] = !status;
    }
    tune_ctx_free(&t);
    return status;
}

tt_status tt_conv_dispatch(tt_backend *be, const tt_conv_call *c, tt_conv_dir dir, tt_mem out,
                           int accumulate, tt_conv_algo *algo)
{
    *algo = TT_CONV_ALGO_AUTO;
    TT_TRY(resolve(be, c, dir, algo));
    char name[64];
    snprintf(name, sizeof name, "%s.workspace", c->family->name);
    tt_conv_workspace ws;
    TT_TRY(tt_conv_workspace_acquire(be, name, c->workspace,
                                     c->family->workspace(*algo, c->shape), &ws));
    tt_status status = c->family->run(be, *algo, dir, out, &c->io, c->shape, ws.mem, accumulate);
    if (!status)
        status = perturb(be, *algo, out,
                         tt_conv_verify_out_floats(c->shape, dir));
    tt_conv_workspace_release(&ws);
    return status;
}

tt_status tt_conv_dispatch_backward(tt_backend *be, const tt_conv_call *c, tt_mem dinp,
                                    tt_mem dweight, tt_mem dbias, tt_conv_algo *algo)
{
    const tt_conv_shape *s = c->shape;
    *algo = TT_CONV_ALGO_AUTO;
    if (dbias.buffer)
        TT_TRY(tt_conv_bias_backward(be, dbias, c->io.dout, s->batch, s->cout, s->out_plane));
    if (dinp.buffer) TT_TRY(tt_conv_dispatch(be, c, TT_CONV_DIR_BACKWARD_DATA, dinp, 1, algo));
    if (dweight.buffer)
        TT_TRY(tt_conv_dispatch(be, c, TT_CONV_DIR_BACKWARD_WEIGHT, dweight, 0, algo));
    return NULL;
}

size_t tt_pow2_floor(size_t v)
{
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}
