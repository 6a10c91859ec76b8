/*
 * The DIRECT_W16 convolution algorithm: direct convolution with 16
 * columns a work-item as float16 (opencl/conv_direct_w16.cl; PoCL compiles
 * float16 to one AVX-512 register), OpenCL's alone.  A row of the
 * autotuner's table of its own, timed against the other rows on every
 * layer and direction, rather than chosen by the device's vector width.
 * (The 8-wide 3x3 kernels it was timed against, DIRECT's, were the best
 * row on 1 of 102 layers and directions on PoCL, and left: docs/tune.md.)  The shapes:
 *   3x3, stride 1, padding 1   every direction, planes of any width from 16
 *                              (the last vector of a row part used) and 8
 *                              wide (two rows a vector), from a padded copy
 *                              of each image or of bands of its rows; the
 *                              input gradient is the forward over dout with
 *                              the weights read flipped where they are
 *   3x3, stride 2, padding 1   (ResNet's down-sampling) forward and weight
 *                              gradient from a copy with even and odd
 *                              columns apart, outputs a multiple of 8 wide;
 *                              the input gradient of even planes, the four
 *                              pixels of a 2x2 block at once
 *   7x7, stride 2, padding 3   (the ResNet stem) the forward, from such a copy
 * The weight gradients sum over bands of rows into partial sums that
 * conv_direct_weight_bands_sum adds.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "ops/conv_algo.h"

/* The UNet's 3x3, stride 1, padding 1 convolution. */
static int is_k3(const tt_conv_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->ph == 1 && s->pw == 1 &&
           s->dh == 1 && s->dw == 1;
}

/* The input gradient's forward: dout (N, Cout, OH, OW) -> dinp (N, Cin, H, W). */
static tt_conv_shape k3_data_shape(const tt_conv_shape *s)
{
    tt_conv_shape t = *s;
    t.cin = s->cout, t.cout = s->cin, t.h = s->oh, t.w = s->ow, t.oh = s->h, t.ow = s->w;
    return t;
}

/* n floats rounded up to a cache line's: where a padded copy starts after
 * something else in a workspace, so that its rows' vectors stay aligned. */
static size_t line_floats(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* The weight gradient's bands of rows: `images_per_band` images to a
 * band, `per_image` bands an image of `rows` output rows, `count` bands in
 * all.  Rows whose dout and input fit `band_bytes` (so that every (co, ci)
 * pair reads them from cache), rows a multiple of `step` where the band is
 * not the whole image, in as many bands as keep the partial sums (9
 * floats a pair a band) within W16_PARTIAL_FLOATS; several images to a
 * band when even one band per image would pass that.
 * A desc's blocks.w16_weight_band_bytes and w16_partial_floats override
 * the two. */
typedef struct w16_bands {
    size_t images_per_band, per_image, rows, count;
} w16_bands;

#define W16_PARTIAL_FLOATS ((size_t)1 << 20)

static w16_bands bands_of(const tt_conv_shape *s, size_t band_bytes, size_t step)
{
    size_t partial_floats = W16_PARTIAL_FLOATS;
    if (s->blocks.w16_weight_band_bytes) band_bytes = (size_t)s->blocks.w16_weight_band_bytes;
    if (s->blocks.w16_partial_floats) partial_floats = (size_t)s->blocks.w16_partial_floats;
    size_t row_bytes = (s->cin * s->w + s->cout * s->ow) * sizeof(float);
    size_t pair_floats = s->cout * s->cin * 9;
    size_t max_bands = partial_floats / pair_floats ? partial_floats / pair_floats : 1;
    w16_bands b = {1, 1, s->oh, 0};
    size_t rows = band_bytes / row_bytes ? band_bytes / row_bytes : 1;
    if (rows < s->oh) b.per_image = (s->oh + rows - 1) / rows;
    if (s->batch * b.per_image > max_bands) b.per_image = max_bands / s->batch ? max_bands / s->batch : 1;
    b.rows = (s->oh + b.per_image - 1) / b.per_image;
    if (b.rows < s->oh) b.rows = (b.rows + step - 1) / step * step;
    b.per_image = (s->oh + b.rows - 1) / b.rows;
    if (s->batch > max_bands) b.images_per_band = (s->batch + max_bands - 1) / max_bands;
    b.count = (s->batch + b.images_per_band - 1) / b.images_per_band * b.per_image;
    return b;
}

/* The 16-wide kernel's bands (AVX-512 CPUs, L2 of 1 or 2 MiB): more work
 * per pair and band against the horizontal sums and stores of its 18
 * accumulators at the end.  Larger bands are fewer: their sums fit the
 * room they take. */
#define K3W_W16_BAND_BYTES (1024u * 1024u)
/* Output rows the 16-wide stride-1 weight gradient takes a step (a band's
 * rows are a multiple of it where they can be; rows left over take a step
 * each): with 6 the 24 loads of a step feed 108 FMAs (with 4, 18 fed 72). */
#define W16_WROWS 6

/* The 16-wide 3x3 kernels (opencl/conv_direct_w16.cl): output rows and
 * channels per work-item of the forward, channels per work-item of the
 * weight gradient, and column chunks of 16 per forward work-group.  They
 * read padded copies (their own layout, conv_pad_k3_w16) of planes at
 * least 16 wide (any width: the last vector of a row may be part of one),
 * and of planes 8 wide (conv_pad_k3_h16, two rows a vector); other planes
 * are other rows'.  The copy is workspace that the step keeps: an image's
 * whole copy where it holds at most K3_W16_COPY_FLOATS (512x512 with 32
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
 * A desc's blocks.w16_band_rows R: bands of R rows (not planes 8 wide). */
static size_t k3_w16_band_rows(const tt_conv_shape *s)
{
    if (s->w == 8) return k3_w16_band_floats(s, s->h) <= K3_W16_COPY_FLOATS ? s->h : 0;
    if (s->w < 16) return 0;
    size_t forced = (size_t)s->blocks.w16_band_rows;
    if (forced) return forced < s->h ? forced : s->h;
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
                        tt_arg_i32(has_bias), tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(&one),
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

/* The 16-wide weight gradient's partial sums over an image in bands of
 * `band` rows (k3_w16_band_rows), each band in bands of `rows` output
 * rows (w16_bands.rows of the whole image): the sums of all images. */
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
 * w = bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS). */
static size_t k3w_w16_count(const tt_conv_shape *s, const w16_bands *w)
{
    size_t band = k3_w16_band_rows(s);
    return band == s->h ? w->count : k3w_w16_banded_count(s, band, w->rows);
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
                TT_CONV_GEOMETRY_ARGS(&band), tt_arg_i32((int)s->oh)));
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

/* The stride-2 3x3's input gradient, even input planes (H = 2 OH, W =
 * 2 OW): conv_direct_backward_data_k3s2p16, the four phases of a pixel at
 * once, no workspace. */
static int k3s2_data_shape(const tt_conv_shape *s)
{
    return is_k3s2(s) && s->h == 2 * s->oh && s->w == 2 * s->ow;
}

static tt_status launch_k3s2_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, int accumulate)
{
    size_t blocks = (s->cin + W16_DCIB - 1) / W16_DCIB;
    size_t global[3] = {(s->ow + 15) / 16, s->oh, s->batch * blocks};
    return tt_launch_kernel(be, "conv_direct_w16", "conv_direct_backward_data_k3s2p16",
                            w16_options(0), 3, global, (size_t[]){1, 1, 1},
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s)));
}

/* conv_direct_backward_weight_k3p16 (_k3h16, _k3s2p16) over the padded
 * input in `padded` of `g` (g.batch images from n0 of dout; stride 1: or
 * the band of g.oh rows from row0 of image n0), the bands of k (in rows
 * of k.rows) into partial from band `first`. */
static tt_status launch_k3w_w16(tt_backend *be, tt_mem partial, tt_mem dout, tt_mem padded,
                                const tt_conv_shape *s, const tt_conv_shape *g, size_t n0,
                                size_t row0, const w16_bands *k, size_t first)
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
                                    tt_arg_i32((int)k->rows), TT_CONV_GEOMETRY_ARGS(g),
                                    tt_arg_i32((int)s->oh)));
}

/* The 16-wide weight gradient's band sums into partial: a band's images
 * at a time padded (or, where k3_w16_band_rows cuts images into bands of
 * rows, a band of one image at a time), then their bands; as many sums as
 * k3w_w16_count (stride 2: w16_bands.count). */
static tt_status k3w_w16_sums(tt_backend *be, tt_mem partial, tt_mem padded, tt_mem dout,
                              tt_mem inp, const tt_conv_shape *s)
{
    int s2 = is_k3s2(s);
    w16_bands b = bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS);
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
            w16_bands k = b;
            k.images_per_band = 1, k.per_image = (g.oh + b.rows - 1) / b.rows;
            status = launch_pad_w16(be, padded, tt_mem_f32(inp, n * s->cin * s->h * s->w), 1, s,
                                    row0, g.oh);
            if (!status)
                status = launch_k3w_w16(be, partial, dout, padded, s, &g, n, row0, &k, written);
            written += k.per_image;
        }
    return status;
}

/* dweight[i] += the sum of `bands` partial sums of `count` floats each. */
static tt_status w16_bands_sum(tt_backend *be, tt_mem dweight, tt_mem partial, size_t bands,
                               size_t count)
{
    return tt_launch_kernel(be, "conv_direct_w16", "conv_direct_weight_bands_sum", w16_options(0),
                            1, (size_t[]){(count + 7) / 8}, NULL,
                            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(partial),
                                    tt_arg_i32((int)bands), tt_arg_i32((int)count)));
}

/* ---- the row ------------------------------------------------------------- */

static int w16_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    if (s->groups != 1) return 0; /* the kernels read every input channel */
    if (dir == TT_CONV_DIR_FORWARD)
        return (is_k3(s) && k3_w16_shape(s)) || k3s2_w16_shape(s) || k7s2_w16_shape(s);
    if (dir == TT_CONV_DIR_BACKWARD_DATA) {
        tt_conv_shape t = k3_data_shape(s);
        return (is_k3(s) && k3_w16_shape(&t)) || k3s2_data_shape(s);
    }
    return (is_k3(s) && k3_w16_shape(s)) || k3s2_w16_shape(s);
}

/* The forward's room: the padded copy of an image (or of its band). */
static size_t w16_forward_floats(const tt_conv_shape *s)
{
    return is_k7s2(s) ? k7s2_padded_floats(s) : is_k3s2(s) ? k3s2_padded_floats(s)
                                                            : k3_w16_room_floats(s);
}

/* The weight gradient's bands (b) and the partial sums it writes. */
static size_t w16_band_sums(const tt_conv_shape *s, w16_bands *b)
{
    *b = bands_of(s, K3W_W16_BAND_BYTES, W16_WROWS);
    return is_k3s2(s) ? b->count : k3w_w16_count(s, b);
}

/* The weight gradient's room: the band sums, then the padded input of a
 * band's images, or of an image or a band of its rows. */
static size_t w16_weight_floats(const tt_conv_shape *s)
{
    w16_bands b;
    size_t sums = line_floats(w16_band_sums(s, &b) * s->cout * s->cin * 9);
    if (is_k3s2(s)) return sums + b.images_per_band * k3s2_padded_floats(s);
    size_t band = k3_w16_band_rows(s), images = band == s->h ? b.images_per_band : 1;
    return sums + images * k3_w16_band_floats(s, band);
}

static size_t most(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* The most any direction the row runs takes. */
static size_t w16_workspace_bytes(const tt_conv_shape *s)
{
    size_t floats = 0;
    if (w16_supports(s, TT_CONV_DIR_FORWARD)) floats = w16_forward_floats(s);
    if (w16_supports(s, TT_CONV_DIR_BACKWARD_DATA) && is_k3(s)) {
        tt_conv_shape t = k3_data_shape(s);
        floats = most(floats, k3_w16_room_floats(&t));
    }
    if (w16_supports(s, TT_CONV_DIR_BACKWARD_WEIGHT)) floats = most(floats, w16_weight_floats(s));
    return floats * sizeof(float);
}

static tt_status w16_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    int has_bias = bias.buffer != NULL;
    tt_conv_workspace room = {0};
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_input", ws,
                                     w16_forward_floats(s) * sizeof(float), &room));
    tt_status status =
        is_k7s2(s) ? launch_k7s2(be, out, inp, weight, bias_mem, has_bias, accumulate, s, room.mem)
                   : launch_k3_w16(be, out, inp, weight, bias_mem, has_bias, accumulate, s,
                                   room.mem, 0);
    tt_conv_workspace_release(&room);
    return status;
}

/* The stride-1 input gradient: the forward over dout, the weights read
 * flipped where they are (TT_W16_FLIPPED), adding or not. */
static tt_status w16_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                   const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    if (is_k3s2(s)) return launch_k3s2_data(be, dinp, dout, weight, s, accumulate);
    tt_conv_shape t = k3_data_shape(s);
    tt_conv_workspace room = {0};
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_dout", ws,
                                     k3_w16_room_floats(&t) * sizeof(float), &room));
    tt_status status = launch_k3_w16(be, dinp, dout, weight, weight, 0, accumulate, &t,
                                     room.mem, 1);
    tt_conv_workspace_release(&room);
    return status;
}

/* Band sums of (co, ci) pairs, then their total. */
static tt_status w16_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                     const tt_conv_shape *s, tt_mem ws)
{
    w16_bands b;
    size_t pairs = s->cout * s->cin, sums = w16_band_sums(s, &b);
    tt_conv_workspace partial;
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.weight_bands", ws,
                                     w16_weight_floats(s) * sizeof(float), &partial));
    tt_mem padded = tt_mem_at(partial.mem, line_floats(sums * pairs * 9) * sizeof(float));
    tt_status status = k3w_w16_sums(be, partial.mem, padded, dout, inp, s);
    if (!status) status = w16_bands_sum(be, dweight, partial.mem, sums, pairs * 9);
    tt_conv_workspace_release(&partial);
    return status;
}

const tt_conv_algo_impl tt_conv_direct_w16_impl = {
    .program = "conv_direct_w16",
    .tuned_on = TT_TUNED_CL_CPU, /* float16 a work-item: code for PoCL */
    .supports = w16_supports,
    .workspace_bytes = w16_workspace_bytes,
    .forward = w16_forward,
    .backward_data = w16_backward_data,
    .backward_weight = w16_backward_weight,
};
