/*
 * The DIRECT convolution algorithm (opencl/conv_direct.cl): forward,
 * backward-data and backward-weight as plain loops, groups = 1, any kernel,
 * stride, padding and dilation.  Meant for the small channel counts of the
 * UNet (3..128), where im2col's columns cost more than they save.
 *
 * Three variants of the kernels, chosen per device type (device_traits.h):
 *   tiled   GPUs: the forward stages input tiles and the block's weights in
 *           local memory (global reads are what costs there); backward as
 *           scalar
 *   w8      CPUs (PoCL), stride 1 along W: 8 columns per work-item as float8,
 *           so the SIMD units are used whatever the runtime vectorises; the
 *           UNet's 3x3 (stride 1, padding 1) has kernels of its own
 *           (opencl/conv_direct_k3.cl, OpenCL's alone: Vulkan's CPU device
 *           runs the scalar shaders faster): the forward (also the input
 *           gradient, with flipped weights), staged through local memory
 *           from 512x512 planes up, and the weight gradient over bands of
 *           rows; where the device prefers 16-lane
 *           float vectors (device_traits.h, direct_w16), planes of the 3x3
 *           at least 16 wide run 16 columns per work-item as float16 (the
 *           last vector of a row part used), from a padded copy of each
 *           image or of bands of its rows, planes 8 wide two rows per
 *           float16 (opencl/conv_direct_w16.cl); so does the stride-2 3x3
 *           (ResNet's down-sampling): forward and weight gradient from a
 *           copy with even and odd columns apart, the input gradient the
 *           four pixels of a 2x2 block at once; and the 7x7 stride-2 stem's
 *           forward from such a copy
 *   scalar  otherwise: one column per work-item, uniform control flow
 * $TT_CONV_DIRECT_VARIANT=scalar|tiled|w8 overrides the choice (tests use
 * it; w8 still needs stride 1 along W).  Work-group sizes come from the
 * device (CL_DEVICE_MAX_WORK_GROUP_SIZE and the local memory size), never
 * from an assumed warp width.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend/loop_budget.h"
#include "core/knobs.h"
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/device_traits.h"

/* Compile-time sizes of opencl/conv_direct.cl, which has no defaults of its
 * own: every launch passes these and the per-device ones below as -D
 * defines (direct_params.options). */
#define DIRECT_TAPS 9     /* kernel taps per work-group (backward weight) */
#define DIRECT_WCOB 4     /* output channels per work-group (backward weight) */
#define DIRECT_ROWS 2     /* output rows per work-item (3x3 kernels) */
#define DIRECT_K3_COB 4   /* output channels per work-item (3x3 kernels) */
#define DIRECT_K3_CHUNKS 4 /* column chunks of 8 per work-group (3x3 forward) */
#define DIRECT_WG_MAX 256 /* cap of the backward-weight work-group */
#define DIRECT_COB 16     /* channels per work-item (scalar and tiled) */
#define DIRECT_COB_W8 8   /* channels per work-item (w8) */

/* Per-device launch parameters, derived from the device's limits. */
typedef struct direct_params {
    size_t cob, cib;    /* channels per work-item: forward (out), backward data (in) */
    size_t wg;          /* backward weight: a power of two */
    size_t tw, th;      /* tiled forward work-group */
    size_t row;         /* untiled kernels: work-items along W per group */
    size_t kxb;         /* backward weight (w8): kernel columns per work-item */
    char options[256];  /* the -D defines for the program: all of them */
} direct_params;

/* The variant for this device and shape (see the top of the file). */
static tt_kernel_variant variant_of(const tt_backend *be, const tt_conv_shape *s)
{
    tt_kernel_variant v = tt_device_traits_of(be).direct;
    return v == TT_KERNEL_W8 && s->sw != 1 ? TT_KERNEL_SCALAR : v;
}

static direct_params params_of(const tt_backend *be, const tt_conv_shape *s)
{
    direct_params p;
    /* channels per work-item, both directions: one block a variant, not
     * one a shape, so that a device builds the program once for every
     * layer (a layer with fewer channels computes the block's rest on
     * zeros, unstored); w8 keeps 8 float8 accumulators, which fill the
     * registers */
    p.cob = p.cib = variant_of(be, s) == TT_KERNEL_W8 ? DIRECT_COB_W8 : DIRECT_COB;
    size_t max_wg = be->device.max_work_group_size ? be->device.max_work_group_size : 1;
    size_t local_floats = (size_t)(be->device.local_mem_bytes / sizeof(float));
    p.wg = tt_pow2_floor(max_wg < DIRECT_WG_MAX ? max_wg : DIRECT_WG_MAX);
    while (p.wg > 1 && DIRECT_WCOB * DIRECT_TAPS * p.wg > local_floats / 2) p.wg /= 2;
    p.tw = max_wg < 16 ? max_wg : 16;
    p.th = max_wg / p.tw < 8 ? max_wg / p.tw : 8;
    if (p.th < 1) p.th = 1;
    p.row = tt_pow2_floor(max_wg < 64 ? max_wg : 64);
    p.kxb = s->kw < 3 ? s->kw : 3;
    snprintf(p.options, sizeof p.options,
             "-DTT_DIRECT_COB=%zu -DTT_DIRECT_CIB=%zu -DTT_DIRECT_WG=%zu -DTT_DIRECT_TW=%zu "
             "-DTT_DIRECT_TH=%zu -DTT_DIRECT_KXB=%zu -DTT_DIRECT_TAPS=%d -DTT_DIRECT_WCOB=%d",
             p.cob, p.cib, p.wg, p.tw, p.th, p.kxb, DIRECT_TAPS, DIRECT_WCOB);
    return p;
}

/* Whether the tiled forward runs: its variant, a real tile, and room. */
static int use_tiles(const tt_backend *be, const direct_params *p, const tt_conv_shape *s,
                     size_t tile_floats)
{
    return variant_of(be, s) == TT_KERNEL_TILED && p->tw * p->th > 1 &&
           tile_floats * sizeof(float) <= be->device.local_mem_bytes / 2;
}

static int direct_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return s->groups == 1;
}

#define GEOMETRY_ARGS(s)                                                                      \
    tt_arg_i32((int)(s)->batch), tt_arg_i32((int)(s)->cin), tt_arg_i32((int)(s)->h),           \
        tt_arg_i32((int)(s)->w), tt_arg_i32((int)(s)->cout), tt_arg_i32((int)(s)->oh),         \
        tt_arg_i32((int)(s)->ow), tt_arg_i32((int)(s)->kh), tt_arg_i32((int)(s)->kw),          \
        tt_arg_i32((int)(s)->sh), tt_arg_i32((int)(s)->sw), tt_arg_i32((int)(s)->ph),          \
        tt_arg_i32((int)(s)->pw), tt_arg_i32((int)(s)->dh), tt_arg_i32((int)(s)->dw)


/* The UNet's 3x3, stride 1, padding 1 convolution: its own 8-wide kernels. */
static int is_k3(const tt_conv_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->ph == 1 && s->pw == 1 &&
           s->dh == 1 && s->dw == 1;
}

/* The options of opencl/conv_direct_k3.cl: its sizes alone (none per
 * device or shape). */
#define K3_TEXT_(x) #x
#define K3_TEXT(x) K3_TEXT_(x)
#define K3_OPTIONS                                                                    \
    "-DTT_DIRECT_ROWS=" K3_TEXT(DIRECT_ROWS) " -DTT_DIRECT_K3_COB=" K3_TEXT(DIRECT_K3_COB) \
    " -DTT_DIRECT_K3_CHUNKS=" K3_TEXT(DIRECT_K3_CHUNKS)

/* Whether the 8-wide 3x3 kernels run `s` on `be` (with the w8 variant):
 * OpenCL has them, Vulkan not (lavapipe runs the scalar shaders faster,
 * opencl/conv_direct_k3.cl). */
static int k3_runs(const tt_backend *be, const tt_conv_shape *s)
{
    return is_k3(s) && tt_backend_has_program(be, "conv_direct_k3");
}

/* The bands of conv_direct_backward_weight_k3: rows whose dout and input
 * fit K3W_BAND_BYTES (half of a CPU's L2, so every (co, ci) pair reads
 * them from cache), in as many bands as keep the partial sums (9 floats a
 * pair a band) within K3W_PARTIAL_FLOATS; several images to a band when
 * even one band per image would pass that.  $TT_CONV_K3W_BANDS="B,F"
 * overrides the two (tests). */
#define K3W_BAND_BYTES (256u * 1024u)
/* The 16-wide kernel's bands (AVX-512 CPUs, L2 of 1 or 2 MiB): more work
 * per pair and band against the horizontal sums and stores of its 18
 * accumulators at the end.  Larger bands are fewer: their sums fit the
 * room that K3W_BAND_BYTES's take (direct_workspace_bytes). */
#define K3W_W16_BAND_BYTES (1024u * 1024u)
/* Output rows the 16-wide stride-1 weight gradient takes a step (a band's
 * rows are a multiple of it where they can be; rows left over take a step
 * each): with 6 the 24 loads of a step feed 108 FMAs (with 4, 18 fed 72). */
#define W16_WROWS 6
#define K3W_PARTIAL_FLOATS ((size_t)1 << 20)

/* Loop steps of conv_direct_backward_weight_k3 per 8 columns of a row:
 * the column loop's, and up to three input rows' plus the one that ends
 * that loop (lavapipe counts it; the taps' loops over kx and lanes are
 * unrolled); _k3p takes fewer. */
#define K3W_STEPS_PER_VECTOR 5

typedef struct k3w_bands {
    size_t images_per_band, per_image, rows, count;
} k3w_bands;

static k3w_bands k3w_bands_of(const tt_conv_shape *s, size_t band_bytes, size_t step)
{
    size_t partial_floats = K3W_PARTIAL_FLOATS;
    const char *knob = tt_knob_str(TT_KNOB_CONV_K3W_BANDS); /* "bytes,floats": tests */
    if (knob) sscanf(knob, "%zu,%zu", &band_bytes, &partial_floats);
    size_t row_bytes = (s->cin * s->w + s->cout * s->ow) * sizeof(float);
    size_t pair_floats = s->cout * s->cin * 9;
    size_t max_bands = partial_floats / pair_floats ? partial_floats / pair_floats : 1;
    k3w_bands b = {1, 1, s->oh, 0};
    size_t rows = band_bytes / row_bytes ? band_bytes / row_bytes : 1;
    if (rows < s->oh) b.per_image = (s->oh + rows - 1) / rows;
    if (s->batch * b.per_image > max_bands) b.per_image = max_bands / s->batch ? max_bands / s->batch : 1;
    b.rows = (s->oh + b.per_image - 1) / b.per_image;
    if (b.rows < s->oh) b.rows = (b.rows + step - 1) / step * step;
    b.per_image = (s->oh + b.rows - 1) / b.rows;
    if (s->batch > max_bands) b.images_per_band = (s->batch + max_bands - 1) / max_bands;
    /* A band is one invocation's loop: the cap on the partial sums gives
     * way to TT_LOOP_BUDGET (lavapipe ends longer loops silently). */
    size_t row_steps = 2 + (s->ow + 7) / 8 * K3W_STEPS_PER_VECTOR;
    size_t budget_rows = TT_LOOP_BUDGET / row_steps ? TT_LOOP_BUDGET / row_steps : 1;
    if (b.images_per_band * b.rows > budget_rows) {
        b.images_per_band = budget_rows / b.rows ? budget_rows / b.rows : 1;
        if (b.rows > budget_rows) {
            b.rows = budget_rows;
            b.per_image = (s->oh + b.rows - 1) / b.rows;
            b.rows = (s->oh + b.per_image - 1) / b.per_image;
        }
    }
    b.count = (s->batch + b.images_per_band - 1) / b.images_per_band * b.per_image;
    return b;
}

/* Planes up to K3_PADDED_WIDTH wide (and a multiple of 8) are read by the
 * 3x3 kernels from a copy with the zero padding written out (conv_pad_k3):
 * on narrow planes their edge vectors and border rows are a large share of
 * the work.  Wider planes keep the edge cases: there the copy costs as
 * much as it saves (docs/tune.md has the measurements).  The copies hold one image, or the weight gradient's one band's images
 * (k3w_bands.images_per_band, usually one): the kernels run once per such
 * group, so that the room is an image's rather than the micro-batch's. */
#define K3_PADDED_WIDTH 128

/* The 16-wide 3x3 kernels (opencl/conv_direct_w16.cl, where the device's
 * traits say direct_w16): output rows and channels per work-item of the
 * forward, channels per work-item of the weight gradient, and column
 * chunks of 16 per forward work-group.  They read padded copies (their own
 * layout, conv_pad_k3_w16) of planes at least 16 wide (any width: the
 * last vector of a row may be part of one), and of planes 8 wide
 * (conv_pad_k3_h16, two rows a vector); other planes keep the 8-wide
 * kernels.  The copy is workspace that the step keeps: an image's whole
 * copy where it holds at most K3_W16_COPY_FLOATS (512x512 with 32
 * channels, 35 MiB), else bands of rows whose copy holds at most
 * K3_W16_BAND_FLOATS each (a 1400x2104 top level with 16 channels, 190
 * MiB whole, runs in 24 bands of 8 MiB).  A band's halo is its
 * neighbours' rows, so that the kernels run on it as on an image. */
#define W16_ROWS 4
#define W16_COB 4
#define W16_WCOB 2
#define W16_DCIB 4 /* input channels per work-item, stride-2 input gradient */
#define W16_CHUNKS 2
/* A band's rows: whole steps of the forward and of the weight gradient. */
#define W16_BAND_STEP 12
_Static_assert(W16_BAND_STEP % W16_ROWS == 0 && W16_BAND_STEP % W16_WROWS == 0,
               "bands of rows take whole steps of both kernels");
#define K3_W16_COPY_FLOATS ((size_t)9 << 20)
#define K3_W16_BAND_FLOATS ((size_t)2 << 20)

#define W16_TEXT_(x) #x
#define W16_TEXT(x) W16_TEXT_(x)
#define W16_DEFINES                                                                      \
    "-DTT_W16_ROWS=" W16_TEXT(W16_ROWS) " -DTT_W16_COB=" W16_TEXT(W16_COB)                 \
    " -DTT_W16_WCOB=" W16_TEXT(W16_WCOB) " -DTT_W16_WROWS=" W16_TEXT(W16_WROWS)           \
    " -DTT_W16_DCIB=" W16_TEXT(W16_DCIB)

/* The program's defines; `flipped`: its forwards read the weights of the
 * input gradient (TT_W16_FLIPPED). */
static const char *w16_options(int flipped)
{
    return flipped ? W16_DEFINES " -DTT_W16_FLIPPED=1" : W16_DEFINES " -DTT_W16_FLIPPED=0";
}

/* The 16-wide padded copy's rows for `rows` rows of a plane (K16_ROWS),
 * and its floats a row (K16_PITCH). */
static size_t k3_w16_padded_rows(size_t rows)
{
    return (rows + W16_ROWS - 1) / W16_ROWS * W16_ROWS + 2;
}

static size_t k3_w16_pitch(const tt_conv_shape *s)
{
    return (s->w + 15) / 16 * 16 + 16;
}

/* Floats of the 16-wide padded copy of `rows` rows of an image
 * (conv_pad_k3_w16; planes 8 wide, all of them: conv_pad_k3_h16). */
static size_t k3_w16_band_floats(const tt_conv_shape *s, size_t rows)
{
    if (s->w == 8) return s->cin * (k3_w16_padded_rows(rows) * 8 + 32);
    return s->cin * (k3_w16_padded_rows(rows) * k3_w16_pitch(s) + 16);
}

/* The rows of the bands in which the 16-wide kernels pad an image of `s`
 * (a 3x3): all of them where the whole copy holds at most
 * K3_W16_COPY_FLOATS, else the most, a multiple of W16_BAND_STEP, whose copy
 * holds at most K3_W16_BAND_FLOATS; 0 where the 16-wide kernels do not
 * run the shape (planes 9 to 15 or under 8 wide, too wide a band).
 * $TT_CONV_W16_BAND_ROWS=R: bands of R rows (tests; not planes 8 wide). */
static size_t k3_w16_band_rows(const tt_conv_shape *s)
{
    if (s->w == 8) return k3_w16_band_floats(s, s->h) <= K3_W16_COPY_FLOATS ? s->h : 0;
    if (s->w < 16) return 0;
    const char *knob = tt_knob_str(TT_KNOB_CONV_W16_BAND_ROWS);
    long forced = knob ? atol(knob) : 0;
    if (forced > 0) return (size_t)forced < s->h ? (size_t)forced : s->h;
    if (k3_w16_band_floats(s, s->h) <= K3_W16_COPY_FLOATS) return s->h;
    size_t plane = K3_W16_BAND_FLOATS / s->cin;
    size_t padded_rows = plane > 16 ? (plane - 16) / k3_w16_pitch(s) : 0;
    size_t rows = padded_rows > 2 ? (padded_rows - 2) / W16_BAND_STEP * W16_BAND_STEP : 0;
    return rows < s->h ? rows : s->h;
}

/* Whether `s` (a 3x3) is a shape of the 16-wide kernels, on any device. */
static int k3_w16_shape(const tt_conv_shape *s)
{
    return k3_w16_band_rows(s) > 0;
}

/* Floats of the 16-wide room of an image: its copy, or its band's. */
static size_t k3_w16_room_floats(const tt_conv_shape *s)
{
    return k3_w16_band_floats(s, k3_w16_band_rows(s));
}

/* The 3x3, stride 2, padding 1 convolution (ResNet's down-sampling) with
 * 16 columns a work-item: its forward reads a copy of each image split
 * into even and odd columns (conv_pad_k3s2_w16); outputs a multiple of 8
 * wide whose copy holds at most K3_W16_COPY_FLOATS; its weight gradient
 * likewise over bands of rows (k3_backward_weight); its input gradient
 * reads dout in place (conv_direct_backward_data_k3s2p16). */
static int is_k3s2(const tt_conv_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->sh == 2 && s->sw == 2 && s->ph == 1 && s->pw == 1 &&
           s->dh == 1 && s->dw == 1;
}

static size_t k3s2_padded_floats(const tt_conv_shape *s)
{
    size_t s16 = (s->ow + 15) / 16 * 16;
    size_t rows = 2 * ((s->oh + W16_ROWS - 1) / W16_ROWS * W16_ROWS) + 1;
    return s->cin * (rows * (2 * s16 + 16) + 16);
}

static int k3s2_w16_shape(const tt_conv_shape *s)
{
    return is_k3s2(s) && s->ow % 8 == 0 && k3s2_padded_floats(s) <= K3_W16_COPY_FLOATS;
}

/* The 7x7, stride 2, padding 3 convolution (the ResNet stem): its forward
 * with 16 columns a work-item from a copy of each image split into even
 * and odd columns (conv_pad_k7s2_w16), where the copy holds at most
 * K3_W16_COPY_FLOATS; its gradients keep the generic kernels (the
 * autotuner picks another algorithm for them). */
static int is_k7s2(const tt_conv_shape *s)
{
    return s->kh == 7 && s->kw == 7 && s->sh == 2 && s->sw == 2 && s->ph == 3 && s->pw == 3 &&
           s->dh == 1 && s->dw == 1;
}

/* Rows of an image's copy (S7_ROWS) and its floats. */
static size_t k7s2_padded_rows(const tt_conv_shape *s)
{
    return 2 * ((s->oh + W16_ROWS - 1) / W16_ROWS * W16_ROWS) + 5;
}

static size_t k7s2_padded_floats(const tt_conv_shape *s)
{
    size_t half = (s->ow + 15) / 16 * 16 + 16;
    return s->cin * k7s2_padded_rows(s) * 2 * half;
}

static int k7s2_w16_shape(const tt_conv_shape *s)
{
    return is_k7s2(s) && k7s2_padded_floats(s) <= K3_W16_COPY_FLOATS;
}

/* The stem's forward, an image at a time through `room`. */
static tt_status launch_k7s2(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                             tt_mem bias_mem, int has_bias, int accumulate,
                             const tt_conv_shape *s, tt_mem room)
{
    size_t blocks = (s->cout + W16_COB - 1) / W16_COB;
    size_t global[3] = {blocks, (s->ow + 15) / 16, (s->oh + W16_ROWS - 1) / W16_ROWS};
    size_t local[3] = {blocks < 4 ? blocks : 4, W16_CHUNKS, 1}; /* global rounded up */
    tt_conv_shape one = *s;
    one.batch = 1;
    tt_status status = NULL;
    for (size_t n = 0; !status && n < s->batch; n++) {
        status = tt_launch_kernel(
            be, "conv_direct_w16", "conv_pad_k7s2_w16", w16_options(0), 2,
            (size_t[]){k7s2_padded_rows(s), s->cin}, (size_t[]){1, 1},
            TT_ARGS(tt_arg_mem(room), tt_arg_mem(tt_mem_f32(inp, n * s->cin * s->h * s->w)),
                    tt_arg_i32((int)s->cin), tt_arg_i32((int)s->h), tt_arg_i32((int)s->w),
                    tt_arg_i32((int)s->oh), tt_arg_i32((int)s->ow)));
        if (!status)
            status = tt_launch_kernel(
                be, "conv_direct_w16", "conv_direct_forward_k7s2p16", w16_options(0), 3, global,
                local,
                TT_ARGS(tt_arg_mem(tt_mem_f32(out, n * s->cout * s->oh * s->ow)),
                        tt_arg_mem(room), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                        tt_arg_i32(has_bias), tt_arg_i32(accumulate), GEOMETRY_ARGS(&one),
                        tt_arg_i32((int)s->oh)));
    }
    return status;
}

/* conv_pad_k3s2_w16: `images` images of `s`'s input from src into dst. */
static tt_status launch_pad_k3s2(tt_backend *be, tt_mem dst, tt_mem src, size_t images,
                                 const tt_conv_shape *s)
{
    size_t rows = 2 * ((s->oh + W16_ROWS - 1) / W16_ROWS * W16_ROWS) + 1;
    return tt_launch_kernel(be, "conv_direct_w16", "conv_pad_k3s2_w16", w16_options(0), 2,
                            (size_t[]){rows + 1, images * s->cin}, NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src),
                                    tt_arg_i32((int)(images * s->cin)), tt_arg_i32((int)s->h),
                                    tt_arg_i32((int)s->w), tt_arg_i32((int)s->oh),
                                    tt_arg_i32((int)s->ow)));
}

/* Whether the 16-wide kernels run `s` (a 3x3) on be. */
static int k3_w16(const tt_backend *be, const tt_conv_shape *s)
{
    return k3_w16_shape(s) && tt_device_traits_of(be).direct_w16;
}

/* Whether the weight gradient pads its input; $TT_K3W_PADDED=0|1 (tests). */
static int k3w_padded(const tt_conv_shape *s)
{
    if (s->w % 8 != 0) return 0;
    return tt_knob_flag(TT_KNOB_K3W_PADDED, s->w <= K3_PADDED_WIDTH);
}

/* Whether conv_direct_forward_k3 over `s` (a forward, or an input
 * gradient's forward over dout) pads its input (unless staged; the rows
 * it reads must stay in the padded plane: OH % ROWS == 0);
 * $TT_K3_PADDED=0|1 (tests). */
static int k3_padded(const tt_conv_shape *s)
{
    if (s->w % 8 != 0 || s->oh % DIRECT_ROWS != 0) return 0;
    return tt_knob_flag(TT_KNOB_K3_PADDED, s->w <= K3_PADDED_WIDTH);
}

/* n floats rounded up to a cache line's: where a padded copy starts after
 * something else in a workspace, so that its rows' vectors stay aligned. */
static size_t line_floats(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* Floats of the padded copy of `images` images (conv_pad_k3's layout). */
static size_t k3_padded_floats(const tt_conv_shape *s, size_t images)
{
    return images * s->cin * ((s->h + 2) * (s->w + 8) + 8);
}

/* The input gradient's forward: dout (N, Cout, OH, OW) -> dinp (N, Cin, H, W). */
static tt_conv_shape k3_data_shape(const tt_conv_shape *s)
{
    tt_conv_shape t = *s;
    t.cin = s->cout, t.cout = s->cin, t.h = s->oh, t.w = s->ow, t.oh = s->h, t.ow = s->w;
    return t;
}

/* The room each 3x3 direction takes from the workspace, in floats:
 * forward: the padded image; input gradient: the flipped weights, then
 * the padded dout image; weight gradient: the band sums, then the padded
 * input of a band's images.  The padded copies: the larger of the 8-wide
 * and the 16-wide kernels' (a shape cannot ask which will run). */
static size_t larger(size_t a, size_t b)
{
    return a > b ? a : b;
}

static size_t k3_forward_floats(const tt_conv_shape *s)
{
    return larger(k3_padded(s) ? k3_padded_floats(s, 1) : 0,
                  k3_w16_shape(s) ? k3_w16_room_floats(s) : 0);
}

static size_t k3_data_floats(const tt_conv_shape *s)
{
    tt_conv_shape t = k3_data_shape(s);
    return line_floats(s->cout * s->cin * 9) + k3_forward_floats(&t);
}

/* The 16-wide weight gradient's partial sums over an image in bands of
 * `band` rows (k3_w16_band_rows), each band in bands of `rows` output
 * rows (k3w_bands.rows of the whole image): the sums of all images. */
static size_t k3w_w16_banded_count(const tt_conv_shape *s, size_t band, size_t rows)
{
    size_t per_image = 0;
    for (size_t row0 = 0; row0 < s->oh; row0 += band) {
        size_t here = s->oh - row0 < band ? s->oh - row0 : band;
        per_image += (here + rows - 1) / rows;
    }
    return s->batch * per_image;
}

/* The band sums the 16-wide stride-1 weight gradient writes (k3w_w16_sums),
 * w = k3w_bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS). */
static size_t k3w_w16_count(const tt_conv_shape *s, const k3w_bands *w)
{
    size_t band = k3_w16_band_rows(s);
    return band == s->h ? w->count : k3w_w16_banded_count(s, band, w->rows);
}

/* The weight gradient's room: the band sums, then the padded input of a
 * band's images (8-wide kernels), or of an image or a band of its rows
 * (16-wide). */
static size_t k3_weight_floats(const tt_conv_shape *s)
{
    size_t pair_floats = s->cout * s->cin * 9;
    if (is_k3s2(s)) {
        k3w_bands b = k3w_bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS);
        return line_floats(b.count * pair_floats) + b.images_per_band * k3s2_padded_floats(s);
    }
    k3w_bands b = k3w_bands_of(s, K3W_BAND_BYTES, 1);
    size_t eight = line_floats(b.count * pair_floats) +
                   (k3w_padded(s) ? k3_padded_floats(s, b.images_per_band) : 0);
    if (!k3_w16_shape(s)) return eight;
    k3w_bands w = k3w_bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS);
    size_t band = k3_w16_band_rows(s), images = band == s->h ? w.images_per_band : 1;
    size_t sixteen = line_floats(k3w_w16_count(s, &w) * pair_floats) +
                     images * k3_w16_band_floats(s, band);
    return larger(eight, sixteen);
}

/* The 3x3 kernels' room (any device: the size of a shape cannot ask which
 * kernels will run): the most any direction takes. */
static size_t direct_workspace_bytes(const tt_conv_shape *s)
{
    if (k7s2_w16_shape(s)) return k7s2_padded_floats(s) * sizeof(float);
    if (k3s2_w16_shape(s))
        return larger(k3_weight_floats(s), k3s2_padded_floats(s)) * sizeof(float);
    if (!is_k3(s)) return 0;
    size_t weight = k3_weight_floats(s), forward = k3_forward_floats(s);
    size_t data = k3_data_floats(s), most = weight > forward ? weight : forward;
    return (most > data ? most : data) * sizeof(float);
}

/* conv_pad_k3: `images` images of `s`'s input from src into dst. */
static tt_status launch_pad(tt_backend *be, tt_mem dst, tt_mem src, size_t images,
                            const tt_conv_shape *s)
{
    size_t global[2] = {s->h + 3, images * s->cin};
    return tt_launch_kernel(be, "conv_direct_k3", "conv_pad_k3", K3_OPTIONS, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src),
                                    tt_arg_i32((int)(images * s->cin)), tt_arg_i32((int)s->h),
                                    tt_arg_i32((int)s->w)));
}

/* conv_pad_k3_w16 (or _h16): `images` images of `s`'s input from src
 * into dst, or rows row0 .. row0 + rows - 1 of one image (not _h16). */
static tt_status launch_pad_w16(tt_backend *be, tt_mem dst, tt_mem src, size_t images,
                                const tt_conv_shape *s, size_t row0, size_t rows)
{
    size_t padded_rows = k3_w16_padded_rows(rows);
    if (s->w == 8)
        return tt_launch_kernel(be, "conv_direct_w16", "conv_pad_k3_h16", w16_options(0), 2,
                                (size_t[]){padded_rows + 4, images * s->cin}, NULL,
                                TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src),
                                        tt_arg_i32((int)(images * s->cin)),
                                        tt_arg_i32((int)s->h)));
    size_t global[2] = {padded_rows + 1, images * s->cin};
    return tt_launch_kernel(be, "conv_direct_w16", "conv_pad_k3_w16", w16_options(0), 2, global,
                            NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src),
                                    tt_arg_i32((int)(images * s->cin)), tt_arg_i32((int)rows),
                                    tt_arg_i32((int)s->w), tt_arg_i32((int)row0),
                                    tt_arg_i32((int)s->h)));
}

/* The forward kernel over `s` (one image's room, or its band of the output
 * rows from row0 that the room holds) into out's image. */
static tt_status launch_k3_w16_rows(tt_backend *be, const char *kernel, tt_mem out, tt_mem room,
                                    tt_mem weight, tt_mem bias_mem, int has_bias, int accumulate,
                                    const tt_conv_shape *s, size_t row0, size_t rows, int flipped)
{
    size_t blocks = (s->cout + W16_COB - 1) / W16_COB;
    size_t global[3] = {blocks, (s->ow + 15) / 16, (rows + W16_ROWS - 1) / W16_ROWS};
    size_t local[3] = {blocks < 4 ? blocks : 4, W16_CHUNKS, 1}; /* global rounded up */
    if (s->w == 8 && !is_k3s2(s)) local[1] = 1;
    tt_conv_shape band = *s;
    band.batch = 1;
    if (!is_k3s2(s)) band.h = band.oh = rows; /* stride 1: input rows are output rows */
    return tt_launch_kernel(
        be, "conv_direct_w16", kernel, w16_options(flipped), 3, global, local,
        TT_ARGS(tt_arg_mem(tt_mem_f32(out, row0 * s->ow)), tt_arg_mem(room), tt_arg_mem(weight),
                tt_arg_mem(bias_mem), tt_arg_i32(has_bias), tt_arg_i32(accumulate),
                GEOMETRY_ARGS(&band), tt_arg_i32((int)s->oh)));
}

/* conv_direct_forward_k3p16 (or _k3h16, or _k3s2p16 for the stride-2 3x3)
 * over `s`, an image (or a band of its rows, k3_w16_band_rows) at a time
 * padded into room (k3_forward_floats(s), or k3s2_padded_floats(s),
 * floats), as launch_k3; with `flipped`, weight is the input gradient's
 * own (Cin, Cout, 3, 3) read flipped (TT_W16_FLIPPED). */
static tt_status launch_k3_w16(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                               tt_mem bias_mem, int has_bias, int accumulate,
                               const tt_conv_shape *s, tt_mem room, int flipped)
{
    int s2 = is_k3s2(s);
    const char *kernel = s2           ? "conv_direct_forward_k3s2p16"
                         : s->w == 8 ? "conv_direct_forward_k3h16"
                                     : "conv_direct_forward_k3p16";
    size_t band = s2 ? s->oh : k3_w16_band_rows(s);
    tt_status status = NULL;
    for (size_t n = 0; !status && n < s->batch; n++) {
        tt_mem image = tt_mem_f32(inp, n * s->cin * s->h * s->w);
        tt_mem image_out = tt_mem_f32(out, n * s->cout * s->oh * s->ow);
        for (size_t row0 = 0; !status && row0 < s->oh; row0 += band) {
            size_t rows = s->oh - row0 < band ? s->oh - row0 : band;
            status = s2 ? launch_pad_k3s2(be, room, image, 1, s)
                        : launch_pad_w16(be, room, image, 1, s, row0, rows);
            if (!status)
                status = launch_k3_w16_rows(be, kernel, image_out, room, weight, bias_mem,
                                            has_bias, accumulate, s, row0, rows, flipped);
        }
    }
    return status;
}

static size_t row_width(const direct_params *p, size_t width)
{
    size_t row = p->row;
    while (row > 1 && row / 2 >= width) row /= 2;
    return row;
}

/* From this many pixels a plane (512x512: 1 MiB) conv_direct_forward_k3
 * reads its input through the staged tile: only large planes repay its
 * copy and two barriers per 16 channels (docs/tune.md). */
#define K3_STAGED_PIXELS ((size_t)512 * 512)

/* conv_direct_forward_k3 (or _staged, or _k3p) over shape s: out (+)=
 * conv(inp, weight) + bias (bias_mem read only with has_bias).  `room`
 * holds k3_forward_floats(s) floats. */
static tt_status launch_k3(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                           tt_mem bias_mem, int has_bias, int accumulate, const tt_conv_shape *s,
                           tt_mem room)
{
    if (k3_w16(be, s))
        return launch_k3_w16(be, out, inp, weight, bias_mem, has_bias, accumulate, s, room, 0);
    /* Work-groups of up to 4 channel blocks x 4 column chunks: PoCL runs a
     * work-group's items in one call, and groups of one paid its per-group
     * entry for every 8x2 outputs. */
    size_t blocks = (s->cout + DIRECT_K3_COB - 1) / DIRECT_K3_COB;
    size_t global[3] = {blocks, (s->ow + 7) / 8, s->batch * ((s->oh + DIRECT_ROWS - 1) / DIRECT_ROWS)};
    size_t local[3] = {blocks < 4 ? blocks : 4, DIRECT_K3_CHUNKS, 1}; /* global rounded up */
    int stage = tt_knob_flag(TT_KNOB_K3_STAGED, (size_t)s->h * s->w >= K3_STAGED_PIXELS);
    if (!stage && k3_padded(s)) {
        tt_conv_shape one = *s; /* an image at a time, padded into room */
        one.batch = 1;
        global[2] = s->oh / DIRECT_ROWS;
        tt_status status = NULL;
        for (size_t n = 0; !status && n < s->batch; n++) {
            status = launch_pad(be, room, tt_mem_f32(inp, n * s->cin * s->h * s->w), 1, s);
            if (!status)
                status = tt_launch_kernel(
                    be, "conv_direct_k3", "conv_direct_forward_k3p", K3_OPTIONS, 3, global, local,
                    TT_ARGS(tt_arg_mem(tt_mem_f32(out, n * s->cout * s->oh * s->ow)),
                            tt_arg_mem(room), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                            tt_arg_i32(has_bias), tt_arg_i32(accumulate), GEOMETRY_ARGS(&one)));
        }
        return status;
    }
    return tt_launch_kernel(be, "conv_direct_k3",
                            stage ? "conv_direct_forward_k3_staged" : "conv_direct_forward_k3",
                            K3_OPTIONS, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias_mem), tt_arg_i32(has_bias),
                                    tt_arg_i32(accumulate), GEOMETRY_ARGS(s)));
}

static tt_status direct_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                tt_mem bias, const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    if (k3s2_w16_shape(s) && tt_device_traits_of(be).direct_w16) {
        tt_conv_workspace room = {0};
        TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_input", ws,
                                         k3s2_padded_floats(s) * sizeof(float), &room));
        tt_status status = launch_k3_w16(be, out, inp, weight, bias_mem, bias.buffer != NULL,
                                         accumulate, s, room.mem, 0);
        tt_conv_workspace_release(&room);
        return status;
    }
    if (k7s2_w16_shape(s) && tt_device_traits_of(be).direct_w16) {
        tt_conv_workspace room = {0};
        TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_input", ws,
                                         k7s2_padded_floats(s) * sizeof(float), &room));
        tt_status status = launch_k7s2(be, out, inp, weight, bias_mem, bias.buffer != NULL,
                                       accumulate, s, room.mem);
        tt_conv_workspace_release(&room);
        return status;
    }
    direct_params p = params_of(be, s);
    size_t blocks = (s->cout + p.cob - 1) / p.cob;
    size_t tile_w = (p.tw - 1) * s->sw + (s->kw - 1) * s->dw + 1;
    size_t tile_h = (p.th - 1) * s->sh + (s->kh - 1) * s->dh + 1;
    size_t wtile = p.cob * s->kh * s->kw;
    if (use_tiles(be, &p, s, tile_w * tile_h + wtile)) {
        size_t global[3] = {s->ow, s->oh, s->batch * blocks}, local[3] = {p.tw, p.th, 1};
        return tt_launch_kernel(
            be, "conv_direct", "conv_direct_forward_tiled", p.options, 3, global, local,
            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                    tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate), GEOMETRY_ARGS(s),
                    tt_arg_local(tile_w * tile_h * sizeof(float)),
                    tt_arg_local(wtile * sizeof(float))));
    }
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->ow + 7) / 8 : s->ow;
    if (w8 && k3_runs(be, s)) {
        tt_conv_workspace room = {0};
        TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_input", ws,
                                         k3_forward_floats(s) * sizeof(float), &room));
        tt_status status = launch_k3(be, out, inp, weight, bias_mem, bias.buffer != NULL,
                                     accumulate, s, room.mem);
        tt_conv_workspace_release(&room);
        return status;
    }
    size_t global[3] = {columns, s->oh, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct", w8 ? "conv_direct_forward_w8" : "conv_direct_forward",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                                    tt_arg_i32(accumulate), GEOMETRY_ARGS(s)));
}

/* A 3x3 stride-1 padding-1 input gradient is that convolution's forward
 * over dout with the weights flipped (conv_weight_flip3), adding or not;
 * the 16-wide kernels read them flipped where they are. */
static tt_status k3_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    tt_conv_workspace flipped;
    size_t count = s->cout * s->cin * 9;
    tt_conv_shape t = k3_data_shape(s);
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.flipped_weight", ws,
                                     k3_data_floats(s) * sizeof(float), &flipped));
    if (k3_w16(be, &t)) {
        tt_status status = launch_k3_w16(be, dinp, dout, weight, weight, 0, accumulate, &t,
                                         tt_mem_f32(flipped.mem, line_floats(count)), 1);
        tt_conv_workspace_release(&flipped);
        return status;
    }
    tt_status status = tt_launch_kernel(be, "conv_direct_k3", "conv_weight_flip3", K3_OPTIONS, 1,
                                        (size_t[]){count}, NULL,
                                        TT_ARGS(tt_arg_mem(flipped.mem), tt_arg_mem(weight),
                                                tt_arg_i32((int)s->cout), tt_arg_i32((int)s->cin)));
    if (!status)
        status = launch_k3(be, dinp, dout, flipped.mem, flipped.mem, 0, accumulate, &t,
                           tt_mem_f32(flipped.mem, line_floats(count)));
    tt_conv_workspace_release(&flipped);
    return status;
}

/* The stride-2 3x3's input gradient on a 16-lane device, even input
 * planes (H = 2 OH, W = 2 OW): conv_direct_backward_data_k3s2p16, the four
 * phases of a pixel at once, no workspace. */
static int k3s2_data_w16(const tt_backend *be, const tt_conv_shape *s)
{
    return is_k3s2(s) && s->h == 2 * s->oh && s->w == 2 * s->ow &&
           tt_device_traits_of(be).direct_w16;
}

static tt_status launch_k3s2_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, int accumulate)
{
    size_t blocks = (s->cin + W16_DCIB - 1) / W16_DCIB;
    size_t global[3] = {(s->ow + 15) / 16, s->oh, s->batch * blocks};
    return tt_launch_kernel(be, "conv_direct_w16", "conv_direct_backward_data_k3s2p16",
                            w16_options(0), 3, global, (size_t[]){1, 1, 1},
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    tt_arg_i32(accumulate), GEOMETRY_ARGS(s)));
}

static tt_status direct_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                      const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    if (k3s2_data_w16(be, s)) return launch_k3s2_data(be, dinp, dout, weight, s, accumulate);
    direct_params p = params_of(be, s);
    if (variant_of(be, s) == TT_KERNEL_W8 && k3_runs(be, s))
        return k3_backward_data(be, dinp, dout, weight, s, ws, accumulate);
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    size_t blocks = (s->cin + p.cib - 1) / p.cib;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->w + 7) / 8 : s->w;
    size_t global[3] = {columns, s->h, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct",
                            w8 ? "conv_direct_backward_data_w8" : "conv_direct_backward_data",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    GEOMETRY_ARGS(s)));
}

/* conv_direct_backward_weight_k3p16 (_k3h16, _k3s2p16) over the padded
 * input in `padded` of `g` (g.batch images from n0 of dout; stride 1: or
 * the band of g.oh rows from row0 of image n0), the bands of k (in rows
 * of k.rows) into partial from band `first`. */
static tt_status launch_k3w_w16(tt_backend *be, tt_mem partial, tt_mem dout, tt_mem padded,
                                const tt_conv_shape *s, const tt_conv_shape *g, size_t n0,
                                size_t row0, const k3w_bands *k, size_t first)
{
    size_t pairs = s->cout * s->cin;
    size_t global[2] = {(s->cout + W16_WCOB - 1) / W16_WCOB * s->cin, k->per_image};
    size_t local[2] = {1, 1};
    tt_mem sums = tt_mem_f32(partial, first * pairs * 9);
    tt_mem rows = tt_mem_f32(dout, n0 * s->cout * s->oh * s->ow + row0 * s->ow);
    const char *kernel = is_k3s2(s)  ? "conv_direct_backward_weight_k3s2p16"
                         : s->w == 8 ? "conv_direct_backward_weight_k3h16"
                                     : "conv_direct_backward_weight_k3p16";
    return tt_launch_kernel(be, "conv_direct_w16", kernel, w16_options(0), 2, global, local,
                            TT_ARGS(tt_arg_mem(sums), tt_arg_mem(rows), tt_arg_mem(padded),
                                    tt_arg_i32((int)g->batch), tt_arg_i32((int)k->per_image),
                                    tt_arg_i32((int)k->rows), GEOMETRY_ARGS(g),
                                    tt_arg_i32((int)s->oh)));
}

/* The 16-wide weight gradient's band sums into partial: a band's images
 * at a time padded (or, where k3_w16_band_rows cuts images into bands of
 * rows, a band of one image at a time), then their bands; as many sums as
 * k3w_w16_count (stride 2: k3w_bands.count). */
static tt_status k3w_w16_sums(tt_backend *be, tt_mem partial, tt_mem padded, tt_mem dout,
                              tt_mem inp, const tt_conv_shape *s)
{
    int s2 = is_k3s2(s);
    k3w_bands b = k3w_bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS);
    size_t band = s2 ? s->h : k3_w16_band_rows(s), written = 0;
    tt_status status = NULL;
    if (band == s->h) {
        for (size_t n0 = 0; !status && n0 < s->batch; n0 += b.images_per_band) {
            tt_conv_shape g = *s;
            g.batch = s->batch - n0 < b.images_per_band ? s->batch - n0 : b.images_per_band;
            tt_mem images = tt_mem_f32(inp, n0 * s->cin * s->h * s->w);
            status = s2 ? launch_pad_k3s2(be, padded, images, g.batch, s)
                        : launch_pad_w16(be, padded, images, g.batch, s, 0, s->h);
            if (!status)
                status = launch_k3w_w16(be, partial, dout, padded, s, &g, n0, 0, &b, written);
            written += b.per_image;
        }
        return status;
    }
    for (size_t n = 0; !status && n < s->batch; n++)
        for (size_t row0 = 0; !status && row0 < s->oh; row0 += band) {
            tt_conv_shape g = *s;
            g.batch = 1;
            g.h = g.oh = s->oh - row0 < band ? s->oh - row0 : band;
            k3w_bands k = b;
            k.images_per_band = 1, k.per_image = (g.oh + b.rows - 1) / b.rows;
            status = launch_pad_w16(be, padded, tt_mem_f32(inp, n * s->cin * s->h * s->w), 1, s,
                                    row0, g.oh);
            if (!status)
                status = launch_k3w_w16(be, partial, dout, padded, s, &g, n, row0, &k, written);
            written += k.per_image;
        }
    return status;
}

/* Band sums of (co, ci) pairs (work-groups of one), then their total; the
 * 3x3 stride 1, and the stride-2 one of the 16-wide kernels. */
static tt_status k3_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                    const tt_conv_shape *s, tt_mem ws)
{
    int s2 = is_k3s2(s), w16 = s2 || k3_w16(be, s); /* s2: direct_backward_weight checked */
    k3w_bands b = k3w_bands_of(s, w16 ? K3W_W16_BAND_BYTES : K3W_BAND_BYTES,
                                 w16 ? W16_WROWS : 1);
    size_t pairs = s->cout * s->cin, sums = w16 && !s2 ? k3w_w16_count(s, &b) : b.count;
    size_t partial_floats = line_floats(sums * pairs * 9);
    int padded_input = w16 || k3w_padded(s); /* after the band sums (k3_weight_floats) */
    tt_conv_workspace partial;
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.weight_bands", ws,
                                     k3_weight_floats(s) * sizeof(float), &partial));
    tt_status status = NULL;
    if (w16) {
        tt_mem padded = tt_mem_at(partial.mem, partial_floats * sizeof(float));
        status = k3w_w16_sums(be, partial.mem, padded, dout, inp, s);
    } else if (!padded_input) {
        size_t global[2] = {pairs, b.count}, local[2] = {1, 1};
        status = tt_launch_kernel(
            be, "conv_direct_k3", "conv_direct_backward_weight_k3", K3_OPTIONS, 2, global, local,
            TT_ARGS(tt_arg_mem(partial.mem), tt_arg_mem(dout), tt_arg_mem(inp),
                    tt_arg_i32((int)b.images_per_band), tt_arg_i32((int)b.per_image),
                    tt_arg_i32((int)b.rows), GEOMETRY_ARGS(s)));
    } else {
        /* one band's images at a time: pad them, then their bands */
        tt_mem padded = tt_mem_at(partial.mem, partial_floats * sizeof(float));
        size_t global[2] = {pairs, b.per_image}, local[2] = {1, 1};
        for (size_t n0 = 0, group = 0; !status && n0 < s->batch; n0 += b.images_per_band, group++) {
            tt_conv_shape g = *s;
            g.batch = s->batch - n0 < b.images_per_band ? s->batch - n0 : b.images_per_band;
            status = launch_pad(be, padded, tt_mem_f32(inp, n0 * s->cin * s->h * s->w),
                                g.batch, s);
            if (!status)
                status = tt_launch_kernel(
                    be, "conv_direct_k3", "conv_direct_backward_weight_k3p", K3_OPTIONS, 2, global,
                    local,
                    TT_ARGS(tt_arg_mem(tt_mem_f32(partial.mem, group * b.per_image * pairs * 9)),
                            tt_arg_mem(tt_mem_f32(dout, n0 * s->cout * s->oh * s->ow)),
                            tt_arg_mem(padded), tt_arg_i32((int)g.batch),
                            tt_arg_i32((int)b.per_image), tt_arg_i32((int)b.rows),
                            GEOMETRY_ARGS(&g)));
        }
    }
    if (!status)
        status = tt_launch_kernel(be, "conv_direct_k3", "conv_direct_weight_bands_sum", K3_OPTIONS, 1,
                                  (size_t[]){(pairs * 9 + 7) / 8}, NULL,
                                  TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(partial.mem),
                                          tt_arg_i32((int)sums), tt_arg_i32((int)(pairs * 9))));
    tt_conv_workspace_release(&partial);
    return status;
}

/* Output rows a launch of the weight gradient sums: an invocation loops
 * over every image and those rows, a row costing `steps` per vector of 8
 * columns (w8) or per WG columns, each image and row one or two more;
 * past TT_LOOP_BUDGET the rows run as several launches adding into
 * dweight.  Measured on lavapipe: w8 one step a vector (a 1x1 over 600 x
 * 1000 cut at 86%), counted as 2; the work-group kernel between 4 and 8
 * a row of one vector, counted as 2 + 4. */
static size_t weight_rows_per_launch(const tt_conv_shape *s, size_t columns, size_t steps)
{
    size_t per_image = TT_LOOP_BUDGET / s->batch > 1 ? TT_LOOP_BUDGET / s->batch - 1 : 1;
    size_t rows = per_image / (2 + steps * ((s->ow + columns - 1) / columns));
    return rows < 1 ? 1 : rows > s->oh ? s->oh : rows;
}

static tt_status direct_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                        const tt_conv_shape *s, tt_mem ws)
{
    direct_params p = params_of(be, s);
    size_t chunks = (s->kh * s->kw + DIRECT_TAPS - 1) / DIRECT_TAPS;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    if (w8 && k3_runs(be, s)) return k3_backward_weight(be, dweight, dout, inp, s, ws);
    if (k3s2_w16_shape(s) && tt_device_traits_of(be).direct_w16)
        return k3_backward_weight(be, dweight, dout, inp, s, ws);
    size_t global[3] = {0, 0, 1}, local[3] = {1, 1, 1};
    if (w8) {
        /* (channel block, ci) x (ky, chunk of kx), in work-groups of one:
         * PoCL's vectorising across work-items gets in the way of float8
         * code */
        global[0] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB * s->cin;
        global[1] = s->kh * ((s->kw + p.kxb - 1) / p.kxb);
    } else {
        /* ci x tap chunk x channel block: no dimension past 65535 groups */
        global[0] = s->cin * p.wg;
        global[1] = chunks;
        global[2] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB;
        local[0] = p.wg;
    }
    size_t rows = weight_rows_per_launch(s, w8 ? 8 : p.wg, w8 ? 2 : 4);
    for (size_t row0 = 0; row0 < s->oh; row0 += rows)
        TT_TRY(tt_launch_kernel(
            be, "conv_direct", w8 ? "conv_direct_backward_weight_w8" : "conv_direct_backward_weight",
            p.options, w8 ? 2 : 3, global, local,
            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp), GEOMETRY_ARGS(s),
                    tt_arg_i32((int)row0), tt_arg_i32((int)rows))));
    return NULL;
}

const tt_conv_algo_impl tt_conv_direct_impl = {
    .supports = direct_supports,
    .workspace_bytes = direct_workspace_bytes,
    .forward = direct_forward,
    .backward_data = direct_backward_data,
    .backward_weight = direct_backward_weight,
};
