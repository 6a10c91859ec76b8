/* BLAS for the OpenCL backend through CLBlast: (buffer, offset) in, no copies. */
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
                                          &cl->queue, NULL);
    else
        code = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, g->m, g->n, g->k, g->alpha, a,
                            g->a.offset / f, g->lda, b, g->b.offset / f, g->ldb, g->beta, c,
                            g->c.offset / f, g->ldc, &cl->queue, NULL);
    if (code != CLBlastSuccess)
        return tt_error_cl(code, "CLBlast GEMM (m=%zu n=%zu k=%zu batch=%zu)", g->m, g->n, g->k,
                           g->batch ? g->batch : 1);
    return NULL;
}
