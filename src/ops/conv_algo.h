/*
 * The algorithms a convolution op can run with, and the helpers that
 * conv2d.c and conv_transpose2d.c share: bias broadcast, bias gradient,
 * buffer-size checks and the workspace (a caller's, or a temporary one).
 *
 * Each op keeps a table indexed by tt_conv_algo (name, supports(),
 * workspace size, forward, backward-data, backward-weight) guarded by a
 * _Static_assert on TT_CONV_ALGO_COUNT: adding an algorithm means adding its
 * enum value here and filling one row in every op's table.
 *
 * Which algorithm runs one direction of one shape:
 *   desc->algo if not AUTO, else tt_conv_algo_force()'s, else $TT_CONV_ALGO,
 *   else the autotuner's pick (src/ops/conv_autotune.c, find-db on disk);
 *   an algorithm that does not implement the direction for the shape falls
 *   back to IM2COL_GEMM, which runs everything (see the table in docs below).
 *
 *   algorithm     forward             backward-data          backward-weight
 *   im2col_gemm   all                 all                    all
 *   direct        groups 1            groups 1               groups 1
 *   winograd      3x3 s1 d1 g1        same, pad <= 2 (flip)  -> im2col_gemm
 *   fft           s1 d1 g1 kH*kW>=25  same (adjoint)         same
 */
#ifndef TT_OPS_CONV_ALGO_H
#define TT_OPS_CONV_ALGO_H

#include "backend/backend.h"

typedef enum tt_conv_algo {
    TT_CONV_ALGO_AUTO = 0,     /* the op picks one for the shape */
    TT_CONV_ALGO_IM2COL_GEMM,  /* im2col / col2im + GEMM (CLBlast), one image at a time */
    TT_CONV_ALGO_DIRECT,       /* direct loops, one output element per work-item */
    TT_CONV_ALGO_WINOGRAD,     /* F(2x2,3x3): transforms + 16 batched GEMMs (CLBlast) */
    TT_CONV_ALGO_FFT,          /* clFFT spectra, products per frequency, inverse */
    TT_CONV_ALGO_COUNT
} tt_conv_algo;

/* The names, as an option table's choices (core/options.h) and --help. */
#define TT_CONV_ALGO_CHOICES "auto|im2col_gemm|direct|winograd|fft"
#define TT_CONV_ALGO_HELP \
    "convolutions: auto (the fastest per layer and direction, timed once and kept in the " \
    "find-db), im2col_gemm, direct, winograd or fft (where one cannot run a layer, im2col_gemm does)"

/* "auto", "im2col_gemm", "direct", "winograd", "fft"; "unknown" outside the enum. */
const char *tt_conv_algo_name(tt_conv_algo algo);
/* The algorithm named `name` (case-insensitive, as tt_conv_algo_name writes
 * it); TT_ERR_INVALID_ARGUMENT listing the names when there is none. */
tt_status tt_conv_algo_parse(const char *name, tt_conv_algo *out);

/* The three computations of a convolution, timed and picked separately. */
typedef enum tt_conv_dir {
    TT_CONV_DIR_FORWARD = 0,
    TT_CONV_DIR_BACKWARD_DATA,    /* dinp += ... */
    TT_CONV_DIR_BACKWARD_WEIGHT,  /* dweight += ... */
    TT_CONV_DIR_COUNT
} tt_conv_dir;

/* "forward", "backward_data", "backward_weight". */
const char *tt_conv_dir_name(tt_conv_dir dir);

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
} tt_conv_shape;

/* One algorithm on the conv2d geometry.  supports(s, dir) says whether the
 * algorithm itself runs that direction of that shape (NULL entry points mean
 * never); workspace_bytes is what forward and backward need from a caller's
 * workspace (offset anywhere).
 *   forward:         out = conv(inp, weight) + bias, or out += conv(...) when
 *                    accumulate (bias must then be absent)
 *   backward_data:   dinp += conv2d's input gradient of dout
 *   backward_weight: dweight += conv2d's weight gradient (dbias is common) */
typedef struct tt_conv_algo_impl {
    int (*supports)(const tt_conv_shape *s, tt_conv_dir dir);
    size_t (*workspace_bytes)(const tt_conv_shape *s);
    tt_status (*forward)(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const tt_conv_shape *s, tt_mem ws, int accumulate);
    tt_status (*backward_data)(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                               const tt_conv_shape *s, tt_mem ws);
    tt_status (*backward_weight)(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                 const tt_conv_shape *s, tt_mem ws);
} tt_conv_algo_impl;

/* conv2d's row for `algo` (src/ops/conv2d.c); NULL for AUTO or outside. */
const tt_conv_algo_impl *tt_conv2d_algo_impl(tt_conv_algo algo);
/* Whether `impl` runs `dir` of `s` itself (not through the fallback). */
int tt_conv_algo_runs(const tt_conv_algo_impl *impl, const tt_conv_shape *s, tt_conv_dir dir);

/* The rows' entry points, one file per algorithm. */
extern const tt_conv_algo_impl tt_conv_direct_impl;    /* src/ops/conv_direct.c */
extern const tt_conv_algo_impl tt_conv_winograd_impl;  /* src/ops/conv_winograd.c */
extern const tt_conv_algo_impl tt_conv_fft_impl;       /* src/ops/conv_fft.c */

/* ---- helpers shared by the convolution ops (src/ops/conv_algo.c) -------- */

/* y (batch, channels, plane) = bias[c] broadcast over n and the plane. */
tt_status tt_conv_bias_fill(tt_backend *be, tt_mem y, tt_mem bias, size_t batch,
                            size_t channels, size_t plane);

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

/* What the autotuner's runs of one direction write into, never the
 * caller's outputs: a scratch output of out_floats and a workspace of
 * ws_bytes (the caller's given_ws when it is large enough), made by the
 * first run (a failure there leaves them for the next candidate to try
 * again) and freed by tt_conv_tune_scratch_release. */
typedef struct tt_conv_tune_scratch {
    tt_backend *be;
    const char *op;         /* "conv2d": names the buffers */
    size_t out_floats, ws_bytes;
    tt_mem given_ws;
    tt_buffer *out;
    tt_conv_workspace ws;
} tt_conv_tune_scratch;

tt_status tt_conv_tune_scratch_get(tt_conv_tune_scratch *t);
void tt_conv_tune_scratch_release(tt_conv_tune_scratch *t);

/* Which kernels DIRECT runs on this device (conv_direct.c, convt_tiles.c):
 * local-memory tiles on GPUs, explicit 8-wide vectors on CPUs, scalar
 * otherwise; $TT_CONV_DIRECT_VARIANT=scalar|tiled|w8 overrides (tests). A
 * kernel family without the variant for a shape falls back to scalar. */
typedef enum tt_direct_variant {
    TT_DIRECT_SCALAR,
    TT_DIRECT_TILED,
    TT_DIRECT_W8
} tt_direct_variant;
tt_direct_variant tt_conv_direct_variant(const tt_backend *be);

/* The largest power of two <= v (1 for v = 0): work-group sizes. */
size_t tt_pow2_floor(size_t v);

#endif
