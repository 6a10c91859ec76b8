/*
 * The algorithms a convolution op can run with, and what conv2d.c and
 * conv_transpose2d.c share: the algorithm dispatch (tt_conv_dispatch, driven
 * by a tt_conv_family per op), bias broadcast, bias gradient and the
 * workspace (a caller's, or a temporary one).
 *
 * Each op keeps a table indexed by tt_conv_algo (name, supports(),
 * workspace size, forward, backward-data, backward-weight) guarded by a
 * _Static_assert on TT_CONV_ALGO_COUNT: adding an algorithm means adding its
 * enum value here and filling one row in every op's table.
 *
 * Which algorithm runs one direction of one shape:
 *   desc->algo if not AUTO (a run's --algo or $TT_CONV_ALGO reaches it
 *   through the model: tt_conv_algo_setting),
 *   else the autotuner's pick (src/ops/conv_autotune.c, find-db on disk);
 *   an algorithm that does not implement the direction for the shape falls
 *   back to IM2COL_GEMM, which runs everything (see the table in docs below).
 *
 *   algorithm     forward             backward-data          backward-weight
 *   im2col_gemm   all                 all                    all
 *   direct        groups 1            groups 1               groups 1
 *   direct_tiled  groups 1            as direct              as direct
 *   direct_w8     groups 1 (a stride along W: direct's kernels), every direction
 *   winograd      3x3 s1 d1 g1        same, pad <= 2 (flip)  -> im2col_gemm
 *   implicit_gemm all                 all                    all
 *   winograd4x4   3x3 s1 d1 g1,       same, pad <= 2 (flip)  same
 *                 Cin, Cout % 16 == 0
 *   winograd4x4_fused  3x3 s1 d1 g1   same (flip)            3x3 s1 d1 g1 p1,
 *                 pad 1, Cout % 16 == 0, Cin <= 64           Cin, Cout % 16 == 0,
 *                 (backward data: Cin % 16 == 0, Cout <= 64) Cin Cout <= 1024
 *   direct_w16    3x3 s1 p1, W 8     same (flip)            same
 *                 or >= 16; 3x3 s2   (s2: even planes)      (s2: as forward)
 *                 p1, OW % 8 == 0;
 *                 7x7 s2 p3
 *   winograd4x4_sum  -> im2col_gemm  -> im2col_gemm         as winograd4x4, in
 *                                                           one pass
 *   depthwise     groups = Cin = Cout  same                  same
 */
#ifndef TT_OPS_CONV_ALGO_H
#define TT_OPS_CONV_ALGO_H

#include "backend/backend.h"

/* The algorithms, one row each: the enum's name, the name of --algo and
 * the find-db, and conv2d's row (tt_conv_algo_impl, which says what it
 * runs, what it needs of a backend and where AUTO times it).  Adding an
 * algorithm is a row here and its impl; the find-db stores the names, so
 * new rows go last. */
#define TT_CONV_ALGO_ROWS(X)                                                                  \
    X(IM2COL_GEMM, im2col_gemm, tt_conv_im2col_impl)       /* im2col + GEMM, image by image */ \
    X(DIRECT, direct, tt_conv_direct_impl)                 /* direct loops */                  \
    X(WINOGRAD, winograd, tt_conv_winograd_impl)           /* F(2x2,3x3), batched GEMMs */     \
    X(IMPLICIT_GEMM, implicit_gemm, tt_conv_igemm_impl)    /* GEMM tiles from the image */     \
    X(WINOGRAD4, winograd4x4, tt_conv_winograd4_impl)      /* F(4x4,3x3), channels in lanes */ \
    X(WINOGRAD4_FUSED, winograd4x4_fused, tt_conv_winograd4_fused_impl) /* tiles in lanes */   \
    X(DIRECT_W16, direct_w16, tt_conv_direct_w16_impl)     /* 16 columns a work-item */    \
    X(WINOGRAD4_SUM, winograd4x4_sum, tt_conv_winograd4_sum_impl) /* its dW in one pass */ \
    X(DIRECT_TILED, direct_tiled, tt_conv_direct_tiled_impl) /* tiles in local memory */     \
    X(DIRECT_W8, direct_w8, tt_conv_direct_w8_impl)        /* 8 columns a work-item */      \
    X(DEPTHWISE, depthwise, tt_conv_depthwise_impl)        /* groups = Cin = Cout */      \
    X(DEPTHWISE_W8, depthwise_w8, tt_conv_depthwise_w8_impl) /* rows of 8 columns */

#define TT_CONV_ALGO_ENUM_(id, name, impl) TT_CONV_ALGO_##id,
typedef enum tt_conv_algo {
    TT_CONV_ALGO_AUTO = 0, /* the op picks one for the shape */
    TT_CONV_ALGO_ROWS(TT_CONV_ALGO_ENUM_)
    TT_CONV_ALGO_COUNT
} tt_conv_algo;
#undef TT_CONV_ALGO_ENUM_

/* The names, as an option table's choices (core/options.h) and --help. */
#define TT_CONV_ALGO_CHOICE_(id, name, impl) "|" #name
#define TT_CONV_ALGO_CHOICES "auto" TT_CONV_ALGO_ROWS(TT_CONV_ALGO_CHOICE_)
#define TT_CONV_ALGO_HELP \
    "convolutions, " TT_CONV_ALGO_CHOICES ": auto (the fastest per layer and direction, " \
    "timed once and kept in the find-db) or that algorithm for every layer (docs/ops.md; " \
    "where one cannot run a layer's shape, im2col_gemm does; one the backend lacks, the " \
    "winograd4x4 rows, direct_w16, direct_w8 and depthwise_w8 on Vulkan, is an error); default " \
    "$TT_CONV_ALGO, else auto"

/* The row's name ("auto" for AUTO); "unknown" outside the enum. */
const char *tt_conv_algo_name(tt_conv_algo algo);
/* The algorithm named `name` (case-insensitive, as tt_conv_algo_name writes
 * it); TT_ERR_INVALID_ARGUMENT listing the names when there is none. */
tt_status tt_conv_algo_parse(const char *name, tt_conv_algo *out);

/* Whether AUTO times `algo` on `be`'s kind of device (NULL: any); an
 * algorithm it does not time still runs by name (its row's tuned_on;
 * src/ops/conv2d.c). */
int tt_conv_algo_tuned_on(const tt_backend *be, tt_conv_algo algo);

/* The three computations of a convolution, timed and picked separately. */
typedef enum tt_conv_dir {
    TT_CONV_DIR_FORWARD = 0,
    TT_CONV_DIR_BACKWARD_DATA,    /* dinp += ... */
    TT_CONV_DIR_BACKWARD_WEIGHT,  /* dweight += ... */
    TT_CONV_DIR_COUNT
} tt_conv_dir;

/* "forward", "backward_data", "backward_weight". */
const char *tt_conv_dir_name(tt_conv_dir dir);

/* ---- sizes a row picks for itself ---------------------------------------- */

/* Blockings an algorithm otherwise chooses from the shape and the device,
 * forced: 0 (every field of a zeroed struct) leaves a row its own choice.
 * A desc carries them (tt_conv2d_desc.blocks) so that a test reaches every
 * blocking of a row through the op, as a case of its table, and a
 * benchmark can time one; only with a named algorithm (AUTO times each
 * row with its own sizes, and the find-db keeps picks by shape alone).
 * tt_conv_blocks_check says what is allowed. */
typedef struct tt_conv_blocks {
    /* implicit_gemm's tile: rm x rn outputs a work-item (rm 1..8, rn 4, 8
     * or 16), bk of K a chunk (a power of two >= rn), mt x nt work-items
     * (powers of two; halved to the device's work-group limit); all five
     * or none */
    int igemm_rm, igemm_rn, igemm_bk, igemm_mt, igemm_nt;
    int igemm_slice;           /* implicit_gemm's weight gradient: pixels a slice */
    int w16_band_rows;         /* direct_w16: rows of each padded band of a 3x3 s1 image
                                  (planes 16 or more wide) */
    int w16_weight_band_bytes; /* direct_w16's weight gradient: bytes of dout and input
                                  rows a band holds (fewer: more bands) */
    int w16_partial_floats;    /* ... and floats of the bands' partial sums (fewer:
                                  several images to a band) */
    int w4_chunk_tiles;        /* winograd4x4 rows: 4x4 tiles a chunk (whole rows of
                                  tiles, at least one) */
} tt_conv_blocks;

/* Blocks forcing implicit_gemm's tile alone. */
#define TT_CONV_IGEMM_TILE(rm, rn, bk, mt, nt) \
    ((tt_conv_blocks){.igemm_rm = (rm), .igemm_rn = (rn), .igemm_bk = (bk), .igemm_mt = (mt), \
                      .igemm_nt = (nt)})

/* NULL when `b` is all zero, or valid for the named `algo`; otherwise
 * TT_ERR_INVALID_ARGUMENT naming the field and what it takes. */
tt_status tt_conv_blocks_check(const tt_conv_blocks *b, tt_conv_algo algo);

/* ---- the conv2d geometry the algorithms run on -------------------------- */

/* A conv2d with defaults applied and derived sizes (all size_t).  The
 * transposed convolution runs on the same geometry with its roles swapped
 * (its output is this geometry's input). */
typedef struct tt_conv_shape {
    size_t batch, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups;
    size_t oh, ow;
    size_t cin_g, cout_g;   /* channels per group */
    size_t k;               /* cin_g * kh * kw: one group's column rows */
    size_t in_plane;        /* h * w */
    size_t out_plane;       /* oh * ow */
    int image_is_columns;   /* 1x1, stride 1, no padding: cols == the image */
    tt_conv_blocks blocks;  /* the desc's forced sizes (zero: each row's own) */
} tt_conv_shape;

/* One algorithm on the conv2d geometry.  supports(s, dir) says whether the
 * algorithm itself runs that direction of that shape (NULL entry points mean
 * never); workspace_bytes is what forward and backward need from a caller's
 * workspace (offset anywhere; NULL: none, tt_conv_algo_workspace).
 *   forward:         out = conv(inp, weight) + bias, or out += conv(...) when
 *                    accumulate (bias must then be absent)
 *   backward_data:   dinp += conv2d's input gradient of dout when accumulate,
 *                    else dinp = it (what dinp held is never read)
 *   backward_weight: dweight += conv2d's weight gradient (dbias is common) */
typedef struct tt_conv_algo_impl {
    /* What a backend needs to run it: the program it launches (NULL: the
     * op's own, tt_conv_family.program: DIRECT's), and with
     * TT_CONV_NEEDS_GEMM the backend's GEMM, with TT_CONV_NEEDS_IM2COL its
     * im2col and col2im too (conv_algo.c, on_backend). */
    const char *program;
    unsigned needs;
    /* The kinds of device AUTO times it on (TT_TUNED_*; any runs by name). */
    unsigned tuned_on;
    int (*supports)(const tt_conv_shape *s, tt_conv_dir dir);
    /* The cost model's prune (NULL: always 1): 0 where the row runs `dir`
     * of `s` on `be` but cannot win there, so that AUTO neither compiles
     * nor times it (it still runs by name). */
    int (*can_win)(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir);
    size_t (*workspace_bytes)(const tt_conv_shape *s);
    tt_status (*forward)(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const tt_conv_shape *s, tt_mem ws, int accumulate);
    tt_status (*backward_data)(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                               const tt_conv_shape *s, tt_mem ws, int accumulate);
    tt_status (*backward_weight)(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                 const tt_conv_shape *s, tt_mem ws);
} tt_conv_algo_impl;

/* The workspace `impl` takes for `s`, in bytes. */
static inline size_t tt_conv_algo_workspace(const tt_conv_algo_impl *impl, const tt_conv_shape *s)
{
    return impl->workspace_bytes ? impl->workspace_bytes(s) : 0;
}

/* The geometry every direct kernel takes after its buffers, as arguments
 * (opencl/common.cl's TT_GEOMETRY): N, Cin, H, W, Cout, OH, OW, KH, KW,
 * SH, SW, PH, PW, DH, DW. */
#define TT_CONV_GEOMETRY_ARGS(s)                                                              \
    tt_arg_i32((int)(s)->batch), tt_arg_i32((int)(s)->cin), tt_arg_i32((int)(s)->h),           \
        tt_arg_i32((int)(s)->w), tt_arg_i32((int)(s)->cout), tt_arg_i32((int)(s)->oh),         \
        tt_arg_i32((int)(s)->ow), tt_arg_i32((int)(s)->kh), tt_arg_i32((int)(s)->kw),          \
        tt_arg_i32((int)(s)->sh), tt_arg_i32((int)(s)->sw), tt_arg_i32((int)(s)->ph),          \
        tt_arg_i32((int)(s)->pw), tt_arg_i32((int)(s)->dh), tt_arg_i32((int)(s)->dw)

/* conv2d's row for `algo` (src/ops/conv2d.c); NULL for AUTO or outside. */
const tt_conv_algo_impl *tt_conv2d_algo_impl(tt_conv_algo algo);
/* Whether im2col_gemm can win on `be` (the can_win of conv2d's and
 * conv_transpose2d's): not on an OpenCL CPU, where CLBlast's GEMM over the
 * columns was the fastest on none of 157 layer-directions (1.66 times the
 * best or more: docs/tune.md); it stays the verifier's reference there. */
int tt_conv_im2col_can_win(const tt_backend *be);
/* The DIRECT row that a layer whose AUTO workspace would not fit runs
 * (no timing; every DIRECT row takes every groups-1 shape without a
 * workspace): direct_tiled on a GPU, direct_w8 on an OpenCL CPU, direct
 * elsewhere. */
tt_conv_algo tt_conv_direct_row(const tt_backend *be);
/* The share of direct's scalar weight gradient's work, in work-groups of
 * `wg`, that is products kept (its cost model; under 1/8 AUTO does not
 * time it). */
double tt_conv_direct_weight_share(const tt_conv_shape *s, size_t wg);
/* Whether AUTO times the row `impl` on `be`'s kind of device (NULL: any). */
int tt_conv_algo_impl_tuned_on(const tt_backend *be, const tt_conv_algo_impl *impl);
/* Whether `impl` runs `dir` of `s` itself (not through the fallback). */
int tt_conv_algo_runs(const tt_conv_algo_impl *impl, const tt_conv_shape *s, tt_conv_dir dir);

enum { TT_CONV_NEEDS_GEMM = 1, TT_CONV_NEEDS_IM2COL = 2 };
/* An OpenCL CPU is PoCL, whose kernels are code of their own (a work-item
 * per group, long runs of float16); elsewhere: GPUs, and Vulkan. */
enum { TT_TUNED_CL_CPU = 1, TT_TUNED_ELSEWHERE = 2, TT_TUNED_ALL = 3 };

/* The rows (TT_CONV_ALGO_ROWS), one file per algorithm: conv2d.c (im2col),
 * conv_direct.c, conv_winograd.c, conv_igemm.c, conv_winograd4.c,
 * conv_winograd4_fused.c, conv_direct_w16.c, conv_winograd4.c (the sum),
 * conv_direct.c (the tiled and 8-wide rows), conv_depthwise.c. */
#define TT_CONV_ALGO_EXTERN_(id, name, impl) extern const tt_conv_algo_impl impl;
TT_CONV_ALGO_ROWS(TT_CONV_ALGO_EXTERN_)
#undef TT_CONV_ALGO_EXTERN_

/* ---- helpers shared by the convolution ops (src/ops/conv_algo.c) -------- */

/* y (batch, channels, plane) = bias[c] broadcast over n and the plane. */
tt_status tt_conv_bias_fill(tt_backend *be, tt_mem y, tt_mem bias, size_t batch,
                            size_t channels, size_t plane);

/* Whether `s` is a shape every F(m, 3x3) Winograd runs: a 3x3 kernel,
 * stride 1, dilation 1, groups 1 (each algorithm adds its own bounds). */
int tt_conv_winograd_shape(const tt_conv_shape *s);

/* dinp of `s` (batch, Cin, H, W) = 0 unless accumulate: for the
 * algorithms whose input gradient can only add. */
tt_status tt_conv_clear_input(tt_backend *be, tt_mem dinp, const tt_conv_shape *s, int accumulate);

/* dbias[c] += sum over n and the plane of dout (batch, channels, plane). */
tt_status tt_conv_bias_backward(tt_backend *be, tt_mem dbias, tt_mem dout, size_t batch,
                                size_t channels, size_t plane);

/* The workspace an op runs in: the caller's `given` if it has a buffer that
 * holds `bytes`, else a temporary TT_MEM_WORKSPACE buffer named `name` that
 * tt_conv_workspace_release() frees (a caller's workspace sized for the
 * autotuner's known picks is too small while a new shape is being timed).
 * bytes == 0 needs nothing. */
typedef struct tt_conv_workspace {
    tt_mem mem;
    tt_buffer *owned;  /* NULL when the caller's */
} tt_conv_workspace;

tt_status tt_conv_workspace_acquire(tt_backend *be, const char *name,
                                    tt_mem given, size_t bytes, tt_conv_workspace *out);
void tt_conv_workspace_release(tt_conv_workspace *ws);

/* ---- algorithm dispatch shared by the convolution ops ------------------- */

/* The inputs one direction reads; its output is passed on its own. */
typedef struct tt_conv_io {
    tt_mem inp, weight, bias, dout;
} tt_conv_io;

/* A convolution op as the dispatcher sees it.  Its geometry is a
 * tt_conv_shape in the op's own terms (conv_transpose2d's: inp is its
 * input, k = Cout/groups * kH * kW, the rows of its output's columns). */
typedef struct tt_conv_family {
    const char *name;  /* "conv2d": names the workspace and the autotuner's scratch */
    const char *weight_layout; /* "(Cout, Cin/groups, kH, kW)": for messages */
    /* The conv2d geometry the shape runs on (conv2d's own; a transposed
     * convolution's has its input and output swapped), and whether it is
     * transposed: its forward is that geometry's input gradient, its input
     * gradient that geometry's forward (conv_verify.c checks on it). */
    tt_conv_shape (*geometry)(const tt_conv_shape *s);
    int transposed;
    /* The program `algo` launches on `s` (its row's, or the op's own:
     * conv2d's DIRECT "conv_direct", a tiling transposed kernel's
     * "convt_tiles"). */
    const char *(*program)(tt_conv_algo algo, const tt_conv_shape *s);
    /* The row of `algo` (what it needs of a backend, where AUTO times it):
     * conv2d's, which conv_transpose2d runs through; NULL for AUTO. */
    const tt_conv_algo_impl *(*row)(tt_conv_algo algo);
    /* Whether `algo` runs `dir` of `s` itself (else IM2COL_GEMM stands in). */
    int (*runs)(tt_conv_algo algo, const tt_conv_shape *s, tt_conv_dir dir);
    /* Whether AUTO times `algo` on `dir` of `s` on `be`: its row's can_win. */
    int (*can_win)(const tt_backend *be, tt_conv_algo algo, const tt_conv_shape *s,
                   tt_conv_dir dir);
    /* The autotuner's key of one direction of a shape (op, direction, shape). */
    void (*key)(const tt_conv_shape *s, tt_conv_dir dir, char *buf, size_t size);
    /* The workspace `algo` needs for any direction of `s`. */
    size_t (*workspace)(tt_conv_algo algo, const tt_conv_shape *s);
    /* Runs `dir` with `algo` (which runs it): out = conv (+ bias) or, with
     * accumulate, out += conv (forward); out += the input's gradient
     * (backward-data) or the weight's (backward-weight). */
    tt_status (*run)(tt_backend *be, tt_conv_algo algo, tt_conv_dir dir, tt_mem out,
                     const tt_conv_io *io, const tt_conv_shape *s, tt_mem ws, int accumulate);
} tt_conv_family;

/* One call of an op.  want: the desc's algorithm; AUTO asks the autotuner
 * per direction.  Among the
 * candidates the workspace serves every direction but backward-data when
 * no_input_grad. */
typedef struct tt_conv_call {
    const tt_conv_family *family;
    const tt_conv_shape *shape;
    tt_conv_algo want;
    int no_input_grad;
    tt_conv_io io;
    tt_mem workspace;  /* the caller's (may be empty or too small) */
    size_t workspace_limit; /* the desc's: AUTO's bound on a candidate's workspace */
} tt_conv_call;

/* The buffers a forward call reads and writes (out, the call's inp,
 * weight and bias when given) fit their sizes; else TT_ERR_INVALID_ARGUMENT
 * naming the op and the argument. */
tt_status tt_conv_check_forward(const tt_conv_call *call, tt_mem out, int accumulate);
/* Likewise for a backward call: dout, and what each gradient asked for needs. */
tt_status tt_conv_check_backward(const tt_conv_call *call, tt_mem dinp, tt_mem dweight,
                                 tt_mem dbias);
/* The algorithm a run asks for: `flag` (--algo; NULL, "" and "auto" defer
 * to the environment), else $TT_CONV_ALGO, else AUTO (the autotuner picks
 * per shape).  An unknown name is TT_ERR_INVALID_ARGUMENT naming where it
 * came from.  The run passes it to its model, which puts it in every desc. */
tt_status tt_conv_algo_setting(const char *flag, tt_conv_algo *out);
/* Runs `dir` into `out`: the requested algorithm (IM2COL_GEMM where it does
 * not run `dir`), or the autotuner's pick, timed on the call's inputs into
 * scratch buffers when nothing is known yet; in the caller's workspace when
 * it is large enough, else a temporary one.  *algo: the one that ran (AUTO
 * when the choice failed). */
tt_status tt_conv_dispatch(tt_backend *be, const tt_conv_call *call, tt_conv_dir dir, tt_mem out,
                           int accumulate, tt_conv_algo *algo);
/* Every algorithm that runs `dir` of the call on `be`, checked as the
 * autotuner checks a candidate (conv_verify.h) on the call's inputs:
 * checked[a] = 1 and verdicts[a] filled for each (arrays of
 * TT_CONV_ALGO_COUNT); whatever the find-db holds is left as it is. */
struct tt_conv_verdict;
tt_status tt_conv_dispatch_verify(tt_backend *be, const tt_conv_call *call, tt_conv_dir dir,
                                  struct tt_conv_verdict *verdicts, int *checked);
/* The backward pass: dbias += (when given), then backward-data into dinp
 * and backward-weight into dweight, each when given.  *algo as above, of
 * the last direction tried. */
tt_status tt_conv_dispatch_backward(tt_backend *be, const tt_conv_call *call, tt_mem dinp,
                                    tt_mem dweight, tt_mem dbias, tt_conv_algo *algo);
/* The workspace that serves every direction: for AUTO the picks `be` (may
 * be NULL) already knows, else every candidate's. */
size_t tt_conv_dispatch_workspace(const tt_backend *be, const tt_conv_call *call);
/* The algorithm `dir` runs with, without timing: the requested one (or its
 * fallback); for AUTO the only candidate, else `be`'s known pick (be may be
 * NULL), else AUTO. */
tt_conv_algo tt_conv_dispatch_known(const tt_backend *be, const tt_conv_call *call,
                                    tt_conv_dir dir);
/* Whether `be` has the kernels and members for every direction the call
 * runs (with AUTO: at least one candidate per direction); a call forcing an
 * algorithm that `be` lacks (winograd4x4 on Vulkan) fails on it with
 * TT_ERR_UNSUPPORTED naming the algorithm. */
int tt_conv_dispatch_runs_on(const tt_backend *be, const tt_conv_call *call);

/* The largest power of two <= v (1 for v = 0): work-group sizes. */
size_t tt_pow2_floor(size_t v);

#endif
