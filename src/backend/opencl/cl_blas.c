/* BLAS for the OpenCL backend through CLBlast: (buffer, offset) in, no copies.
 * Also CLBlast's im2col/col2im (its col2im accumulates into the image). */
#include <clblast_c.h>

#include "backend/opencl/cl_internal.h"
#include "core/status.h"

tt_status tt_cl_gemm(tt_backend *backend, const tt_gemm *g)
{
    tt_cl_backend *cl = backend->impl;
    const size_t f = sizeof(float);
    if (g->a.offset % f || g->b.offset % f || g->c.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "GEMM: buffer offsets must be whole floats");
    CLBlastTranspose ta = g->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    cl_mem a = g->a.buffer->handle, b = g->b.buffer->handle, c = g->c.buffer->handle;
    CLBlastStatusCode code;
    if (g->batch > 1)
        code = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, g->m, g->n, g->k, g->alpha,
                                          a, g->a.offset / f, g->lda, g->stride_a, b,
                                          g->b.offset / f, g->ldb, g->stride_b, g->beta, c,
                                          g->c.offset / f, g->ldc, g->stride_c, g->batch,
                                          &cl->queue, tt_cl_profile_slot(backend, "gemm", "gemm"));
    else
        code = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, g->m, g->n, g->k, g->alpha, a,
                            g->a.offset / f, g->lda, b, g->b.offset / f, g->ldb, g->beta, c,
                            g->c.offset / f, g->ldc, &cl->queue, tt_cl_profile_slot(backend, "gemm", "gemm"));
    if (code != CLBlastSuccess)
        return tt_error_cl(code, "CLBlast GEMM (m=%zu n=%zu k=%zu batch=%zu)", g->m, g->n, g->k,
                           g->batch ? g->batch : 1);
    return NULL;
}

/* im2col / col2im through CLBlast, cross-correlation mode (no kernel flip). */
static tt_status cl_im2col_or_col2im(tt_backend *backend, const tt_im2col *g, int to_columns)
{
    tt_cl_backend *cl = backend->impl;
    const size_t f = sizeof(float);
    if (g->im.offset % f || g->col.offset % f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: buffer offsets must be whole floats",
                            to_columns ? "im2col" : "col2im");
    cl_mem im = g->im.buffer->handle, col = g->col.buffer->handle;
    CLBlastStatusCode code;
    if (to_columns)
        code = CLBlastSim2col(CLBlastKernelModeCrossCorrelation, g->channels, g->height, g->width,
                              g->kernel_h, g->kernel_w, g->pad_h, g->pad_w, g->stride_h,
                              g->stride_w, g->dilation_h, g->dilation_w, im, g->im.offset / f,
                              col, g->col.offset / f, &cl->queue,
                              tt_cl_profile_slot(backend, "im2col", "im2col"));
    else
        code = CLBlastScol2im(CLBlastKernelModeCrossCorrelation, g->channels, g->height, g->width,
                              g->kernel_h, g->kernel_w, g->pad_h, g->pad_w, g->stride_h,
                              g->stride_w, g->dilation_h, g->dilation_w, col, g->col.offset / f,
                              im, g->im.offset / f, &cl->queue,
                              tt_cl_profile_slot(backend, "im2col", "im2col"));
    if (code != CLBlastSuccess)
        return tt_error_cl(code, "CLBlast %s (channels=%zu image %zux%zu kernel %zux%zu)",
                           to_columns ? "im2col" : "col2im", g->channels, g->height, g->width,
                           g->kernel_h, g->kernel_w);
    return NULL;
}

tt_status tt_cl_im2col(tt_backend *backend, const tt_im2col *g)
{
    return cl_im2col_or_col2im(backend, g, 1);
}

tt_status tt_cl_col2im(tt_backend *backend, const tt_im2col *g)
{
    return cl_im2col_or_col2im(backend, g, 0);
}
