/*
 * The Vulkan backend's GEMM, im2col and col2im (the `gemm`, `im2col` and
 * `col2im` members of the table): launches of our own shaders
 * shaders/blas/gemm*.comp, im2col.comp and col2im.comp (there is no CLBlast
 * for Vulkan).  Arguments are whole floats, as CLBlast requires on OpenCL;
 * tt_gemm_run has checked that the operands fit their buffers.
 */
#include <limits.h>
#include <stdio.h>

#include "backend/loop_budget.h"
#include "backend/vulkan/vk_internal.h"

static int fits_int(size_t v) { return v <= (size_t)INT_MAX; }

/* ---- GEMM ----------------------------------------------------------------
 * Three shaders, chosen per device type and shape (a backend's forced.gemm
 * forces one): blas/gemm, register tiling without shared memory, for CPU
 * devices, where barriers are expensive and a vec4 load costs about what a
 * float one does; blas/gemm_tiled, shared-memory tiles with register
 * blocking, for GPUs; blas/gemm_split_k, one work-group per small block of
 * C splitting k among its invocations, for a C of few elements and a long k
 * (a weight gradient), and on CPUs for C = A B^T, whose operands both run
 * along k, where k is long enough.  Tile sizes are the shaders' specialization constants, set by
 * name; no work-group size assumes a subgroup size. */

typedef enum gemm_variant { GEMM_REGISTERS, GEMM_TILED, GEMM_SPLIT_K, GEMM_VARIANT_COUNT } gemm_variant;
static const char *const gemm_variant_kernels[GEMM_VARIANT_COUNT] = {"gemm", "gemm_tiled",
                                                                     "gemm_split_k"};

/* lavapipe ends an invocation after 65535 loop iterations in all (gallivm's
 * loop limiter), silently: a longer k runs as several launches, each adding
 * into C (beta 1 after the first), of at most this many steps of one
 * invocation's loop over k. */
#define GEMM_MAX_K_STEPS TT_LOOP_BUDGET

/* The blocks: blas/gemm computes TM x 4 TNV per invocation in work-groups
 * of REG_WG x up to REG_WG; blas/gemm_tiled 64 x 64 per work-group of 16 x
 * 16 (smaller blocks for a small m or n) over slices of 16 of k;
 * blas/gemm_split_k up to 8 x 8 per work-group of up to 64 on GPUs, up to
 * 16 x 16 per 8 on CPUs. */
#define REG_TM 16
#define REG_TNV 4
#define REG_WG 8
#define TILE_MAX 64
#define TILE_WG 16
#define TILE_BK 16
#define SPLIT_GPU_BLOCK 8
#define SPLIT_GPU_WG 64
#define SPLIT_CPU_BLOCK 16
#define SPLIT_CPU_WG 8
/* GPUs: split k when C has fewer 64 x 64 blocks than this and k is at least SPLIT_MIN_K */
#define SPLIT_MAX_BLOCKS 8
#define SPLIT_MIN_K 4096
/* CPUs: C = A B^T splits k among the work-group's SPLIT_CPU_WG invocations
 * from this k on; below it each one's share is too short to pay for
 * adding their blocks through shared memory, and the registers' variant
 * runs (a deep layer's weight gradient on small planes) */
#define SPLIT_CPU_MIN_K 256

/* One launch of a GEMM (operands already swapped where the plan says). */
typedef struct gemm_plan {
    gemm_variant variant;
    char options[192];
    size_t global[3], local[3];
    size_t k_per_launch;  /* k of each launch, at most */
} gemm_plan;

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* Whether `mem` shifted by `floats` starts on a whole vec4 as the shader
 * sees it: from its binding, which vk_launch.c places at the largest
 * multiple of minStorageBufferOffsetAlignment at or below the tensor. */
static int vec4_start(const tt_vk_backend *vk, tt_mem mem)
{
    size_t align = vk->properties.limits.minStorageBufferOffsetAlignment;
    size_t from_binding = align > 1 ? mem.offset % align : 0;
    return from_binding % 16 == 0;
}

/* The operand's leading dimension and batch stride (when batched) are
 * multiples of 4 floats and it starts on a vec4. */
static int vec4_rows(const tt_vk_backend *vk, tt_mem mem, size_t ld, size_t stride, size_t batch)
{
    return vec4_start(vk, mem) && ld % 4 == 0 && (batch <= 1 || stride % 4 == 0);
}

static gemm_variant gemm_choose(const tt_backend *be, const tt_gemm *g, size_t batch)
{
    const tt_vk_backend *vk = be->impl;
    if (be->forced.gemm == TT_GEMM_REGISTERS) return GEMM_REGISTERS;
    if (be->forced.gemm == TT_GEMM_TILED) return GEMM_TILED;
    if (be->forced.gemm == TT_GEMM_SPLIT_K) return GEMM_SPLIT_K;
    if (vk->properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        return !g->trans_a && g->trans_b && g->k >= SPLIT_CPU_MIN_K ? GEMM_SPLIT_K
                                                                     : GEMM_REGISTERS;
    size_t blocks = div_up(g->m, TILE_MAX) * div_up(g->n, TILE_MAX) * batch;
    if (blocks < SPLIT_MAX_BLOCKS && g->k >= SPLIT_MIN_K) return GEMM_SPLIT_K;
    /* the tiles' work-group is 16 x 16: the registers' where the device
     * allows fewer (Vulkan's least maxComputeWorkGroupInvocations is 128) */
    return tt_device_group_max(be) >= TILE_WG * TILE_WG ? GEMM_TILED : GEMM_REGISTERS;
}

/* The smallest power of two from `low` that reaches `size`, at most `high`. */
static size_t block_for(size_t size, size_t low, size_t high)
{
    size_t b = low;
    while (b < size && b < high) b *= 2;
    return b;
}

/* blas/gemm: C = A^T B^T runs as C^T = B A (the caller swaps the operands
 * when *swap says so), so that its invocations read along A's rows. */
static void plan_registers(const tt_backend *be, const tt_gemm *g, size_t batch, int swap,
                           gemm_plan *p)
{
    const tt_vk_backend *vk = be->impl;
    size_t most = tt_device_group_max(be); /* REG_WG x REG_WG within it */
    size_t tm = block_for(g->m, 4, REG_TM), rows = div_up(g->m, tm);
    int vec_a = g->trans_a && g->m % 4 == 0 && vec4_rows(vk, g->a, g->lda, g->stride_a, batch);
    int vec_b = !g->trans_b && g->n % 4 == 0 && vec4_rows(vk, g->b, g->ldb, g->stride_b, batch);
    int vec_c = !swap && g->n % 4 == 0 && vec4_rows(vk, g->c, g->ldc, g->stride_c, batch);
    snprintf(p->options, sizeof p->options,
             "-DTRANS_A=%d -DTRANS_B=%d -DTRANS_C=%d -DTM=%zu -DTNV=%d -DVEC_A=%d -DVEC_B=%d "
             "-DVEC_C=%d",
             g->trans_a != 0, g->trans_b != 0, swap, tm, REG_TNV, vec_a, vec_b, vec_c);
    p->local[0] = most < REG_WG ? most : REG_WG;
    p->local[1] = rows < REG_WG ? rows : REG_WG;
    while (p->local[1] > 1 && p->local[0] * p->local[1] > most) p->local[1] /= 2;
    p->local[2] = 1;
    p->global[0] = div_up(g->n, 4 * REG_TNV);
    p->global[1] = rows;
    p->global[2] = batch;
    p->k_per_launch = GEMM_MAX_K_STEPS;
}

static void plan_tiled(const tt_gemm *g, size_t batch, gemm_plan *p)
{
    size_t bm = block_for(g->m, TILE_WG, TILE_MAX), bn = block_for(g->n, TILE_WG, TILE_MAX);
    snprintf(p->options, sizeof p->options,
             "-DTRANS_A=%d -DTRANS_B=%d -DBM=%zu -DBN=%zu -DBK=%d -DTM=%zu -DTN=%zu",
             g->trans_a != 0, g->trans_b != 0, bm, bn, TILE_BK, bm / TILE_WG, bn / TILE_WG);
    p->local[0] = TILE_WG;
    p->local[1] = TILE_WG;
    p->local[2] = 1;
    p->global[0] = div_up(g->n, bn) * TILE_WG;
    p->global[1] = div_up(g->m, bm) * TILE_WG;
    p->global[2] = batch;
    /* an invocation's loop runs once per slice of k, plus its copies */
    p->k_per_launch = GEMM_MAX_K_STEPS;
}

static void plan_split_k(const tt_backend *be, const tt_gemm *g, size_t batch, gemm_plan *p)
{
    const tt_vk_backend *vk = be->impl;
    /* CPUs: a block of up to 16 x 16 per work-group of 8 (shared memory and
     * its barrier cost there as much as the loads); GPUs: 8 x 8 per 64 */
    int cpu = vk->properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    size_t most = cpu ? SPLIT_CPU_BLOCK : SPLIT_GPU_BLOCK;
    size_t tm = block_for(g->m, 4, most), tn = block_for(g->n, 4, most);
    size_t wg = cpu ? SPLIT_CPU_WG : SPLIT_GPU_WG;
    /* the partial sums fit the device's shared memory (16 KiB at least) */
    while (wg > 8 && (wg + 1) * tm * tn * sizeof(float) >
                         vk->properties.limits.maxComputeSharedMemorySize)
        wg /= 2;
    while (wg > 1 && wg > tt_device_group_max(be)) wg /= 2;
    int vec = !g->trans_a && g->trans_b && vec4_rows(vk, g->a, g->lda, g->stride_a, batch) &&
              vec4_rows(vk, g->b, g->ldb, g->stride_b, batch);
    snprintf(p->options, sizeof p->options,
             "-DTRANS_A=%d -DTRANS_B=%d -DTM=%zu -DTN=%zu -DVEC=%d -DPARTIALS=%zu",
             g->trans_a != 0, g->trans_b != 0, tm, tn, vec, (wg + 1) * tm * tn);
    p->local[0] = wg;
    p->local[1] = p->local[2] = 1;
    p->global[0] = div_up(g->n, tn) * wg;
    p->global[1] = div_up(g->m, tm);
    p->global[2] = batch;
    p->k_per_launch = GEMM_MAX_K_STEPS * wg;
}

tt_status tt_vk_gemm(tt_backend *backend, const tt_gemm *gemm)
{
    const size_t f = sizeof(float);
    if (gemm->a.offset % f || gemm->b.offset % f || gemm->c.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "GEMM: buffer offsets must be whole floats");
    size_t batch = gemm->batch > 1 ? gemm->batch : 1;
    if (!fits_int(gemm->m) || !fits_int(gemm->n) || !fits_int(gemm->k) || !fits_int(gemm->lda) ||
        !fits_int(gemm->ldb) || !fits_int(gemm->ldc) || !fits_int(gemm->stride_a) ||
        !fits_int(gemm->stride_b) || !fits_int(gemm->stride_c))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "GEMM (m=%zu n=%zu k=%zu batch=%zu): sizes, leading dimensions and "
                            "strides must fit an int on the vulkan backend",
                            gemm->m, gemm->n, gemm->k, batch);
    tt_gemm g = *gemm;
    if (batch == 1) g.stride_a = g.stride_b = g.stride_c = 0;
    gemm_plan plan = {.variant = gemm_choose(backend, &g, batch)};
    int swap = plan.variant == GEMM_REGISTERS && g.trans_a && g.trans_b;
    if (swap) { /* C^T = B A: B (n x k) is the new A, A (k x m) the new B */
        g.trans_a = g.trans_b = 0;
        g.m = gemm->n, g.n = gemm->m;
        g.a = gemm->b, g.lda = gemm->ldb, g.stride_a = batch > 1 ? gemm->stride_b : 0;
        g.b = gemm->a, g.ldb = gemm->lda, g.stride_b = batch > 1 ? gemm->stride_a : 0;
    }
    switch (plan.variant) {
    case GEMM_REGISTERS: plan_registers(backend, &g, batch, swap, &plan); break;
    case GEMM_TILED: plan_tiled(&g, batch, &plan); break;
    default: plan_split_k(backend, &g, batch, &plan); break;
    }
    /* k in pieces, each adding into C; the pieces' offsets along k */
    for (size_t p = 0; p < g.k; p += plan.k_per_launch) {
        size_t k = g.k - p < plan.k_per_launch ? g.k - p : plan.k_per_launch;
        tt_mem a = tt_mem_f32(g.a, g.trans_a ? p * g.lda : p);
        tt_mem b = tt_mem_f32(g.b, g.trans_b ? p : p * g.ldb);
        float beta = p == 0 ? g.beta : 1.0f;
        TT_TRY(tt_launch_kernel(
            backend, "blas", gemm_variant_kernels[plan.variant], plan.options, 3, plan.global,
            plan.local,
            TT_ARGS(tt_arg_mem(a), tt_arg_mem(b), tt_arg_mem(g.c), tt_arg_i32((int)g.m),
                    tt_arg_i32((int)g.n), tt_arg_i32((int)k), tt_arg_i32((int)g.lda),
                    tt_arg_i32((int)g.ldb), tt_arg_i32((int)g.ldc), tt_arg_i32((int)g.stride_a),
                    tt_arg_i32((int)g.stride_b), tt_arg_i32((int)g.stride_c),
                    tt_arg_f32(g.alpha), tt_arg_f32(beta))));
    }
    return NULL;
}

/* im2col: one invocation per column entry; col2im: one per image pixel,
 * which gathers (and adds) every column entry that came from it. */
static tt_status im2col_or_col2im(tt_backend *backend, const tt_im2col *g, int to_columns)
{
    const char *what = to_columns ? "im2col" : "col2im";
    const size_t f = sizeof(float);
    if (g->im.offset % f || g->col.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: buffer offsets must be whole floats",
                            what);
    size_t out_h = (g->height + 2 * g->pad_h - g->dilation_h * (g->kernel_h - 1) - 1) /
                       g->stride_h + 1;
    size_t out_w = (g->width + 2 * g->pad_w - g->dilation_w * (g->kernel_w - 1) - 1) /
                       g->stride_w + 1;
    size_t items = to_columns ? g->channels * g->kernel_h * g->kernel_w * out_h * out_w
                              : g->channels * g->height * g->width;
    if (!fits_int(items) || !fits_int(g->channels * g->height * g->width) ||
        !fits_int(g->pad_h + g->height) || !fits_int(g->pad_w + g->width))
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: %zu entries are too many for the vulkan "
                            "backend (an int)", what, items);
    if (!fits_int(g->channels * g->kernel_h * g->kernel_w))
        return tt_error_new(TT_ERR_UNSUPPORTED, "%s: %zu column rows are too many for the vulkan "
                            "backend (an int)", what, g->channels * g->kernel_h * g->kernel_w);
    /* 3-D over (column, row, plane): no index is split by a division that
     * is not a constant's (the kernel size and strides are specialization
     * constants); work-groups as wide as the rows, up to 32 */
    char options[128];
    snprintf(options, sizeof options, "-DTT_KH=%zu -DTT_KW=%zu -DTT_SH=%zu -DTT_SW=%zu",
             g->kernel_h, g->kernel_w, g->stride_h, g->stride_w);
    size_t cols = to_columns ? out_w : g->width, rows = to_columns ? out_h : g->height;
    size_t planes = to_columns ? g->channels * g->kernel_h * g->kernel_w : g->channels;
    size_t group = tt_device_group_max(backend) < 64 ? tt_device_group_max(backend) : 64, wide = 1;
    while (wide < cols && wide < 32 && wide * 2 <= group) wide *= 2;
    size_t global[3] = {cols, rows, planes}, local[3] = {wide, group / wide, 1};
    return tt_launch_kernel(
        backend, "blas", what, options, 3, global, local,
        TT_ARGS(tt_arg_mem(g->im), tt_arg_mem(g->col), tt_arg_i32((int)g->channels),
                tt_arg_i32((int)g->height), tt_arg_i32((int)g->width),
                tt_arg_i32((int)g->kernel_h), tt_arg_i32((int)g->kernel_w),
                tt_arg_i32((int)g->pad_h), tt_arg_i32((int)g->pad_w),
                tt_arg_i32((int)g->stride_h), tt_arg_i32((int)g->stride_w),
                tt_arg_i32((int)g->dilation_h), tt_arg_i32((int)g->dilation_w),
                tt_arg_i32((int)out_h), tt_arg_i32((int)out_w)));
}

tt_status tt_vk_im2col(tt_backend *backend, const tt_im2col *g)
{
    return im2col_or_col2im(backend, g, 1);
}

tt_status tt_vk_col2im(tt_backend *backend, const tt_im2col *g)
{
    return im2col_or_col2im(backend, g, 0);
}
