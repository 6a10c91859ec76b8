/*
 * Batched 2-D real FFTs for the OpenCL backend through clFFT.
 *
 * clFFT needs clfftSetup() once per process before any plan and
 * clfftTeardown() after the last: counted here over the backends that made
 * a plan.  Plans are baked per (direction, batch, h, w) on the backend's
 * queue and kept in a small cache owned by the backend (the oldest goes
 * when it is full), since baking generates and builds OpenCL programs.
 * clFFT takes no buffer offsets, so both buffers must start at offset 0.
 */
#include <pthread.h>
#include <stdlib.h>

#include <clFFT.h>

#include "backend/opencl/cl_internal.h"
#include "core/status.h"

#define FFT_PLAN_CACHE 16

typedef struct fft_plan {
    int inverse;
    size_t batch, h, w;
    clfftPlanHandle plan;
} fft_plan;

struct tt_cl_fft_cache {
    fft_plan plans[FFT_PLAN_CACHE];
    int count;
};

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static int setup_users; /* backends holding a cache */

static tt_status fft_setup(void)
{
    tt_status status = NULL;
    pthread_mutex_lock(&setup_lock);
    if (setup_users == 0) {
        clfftSetupData data = {0};
        data.major = clfftVersionMajor, data.minor = clfftVersionMinor;
        data.patch = clfftVersionPatch, data.debugFlags = 0;
        clfftStatus err = clfftSetup(&data);
        if (err != CLFFT_SUCCESS) status = tt_error_cl(err, "clfftSetup");
    }
    if (!status) setup_users++;
    pthread_mutex_unlock(&setup_lock);
    return status;
}

void tt_cl_fft_release(tt_cl_backend *cl)
{
    if (!cl || !cl->fft) return;
    for (int i = 0; i < cl->fft->count; i++) clfftDestroyPlan(&cl->fft->plans[i].plan);
    free(cl->fft);
    cl->fft = NULL;
    pthread_mutex_lock(&setup_lock);
    if (--setup_users == 0) clfftTeardown();
    pthread_mutex_unlock(&setup_lock);
}

static tt_status bake(tt_cl_backend *cl, const tt_fft2d *f, clfftPlanHandle *out)
{
    size_t lengths[2] = {f->w, f->h};
    size_t half = f->w / 2 + 1;
    size_t real_strides[2] = {1, f->w}, complex_strides[2] = {1, half};
    clfftPlanHandle plan;
    clfftStatus err = clfftCreateDefaultPlan(&plan, cl->context, CLFFT_2D, lengths);
    if (err != CLFFT_SUCCESS)
        return tt_error_cl(err, "clfftCreateDefaultPlan(%zux%zu)", f->h, f->w);
    err = clfftSetPlanPrecision(plan, CLFFT_SINGLE);
    if (err == CLFFT_SUCCESS)
        err = f->inverse ? clfftSetLayout(plan, CLFFT_HERMITIAN_INTERLEAVED, CLFFT_REAL)
                         : clfftSetLayout(plan, CLFFT_REAL, CLFFT_HERMITIAN_INTERLEAVED);
    if (err == CLFFT_SUCCESS) err = clfftSetResultLocation(plan, CLFFT_OUTOFPLACE);
    if (err == CLFFT_SUCCESS)
        err = clfftSetPlanInStride(plan, CLFFT_2D, f->inverse ? complex_strides : real_strides);
    if (err == CLFFT_SUCCESS)
        err = clfftSetPlanOutStride(plan, CLFFT_2D, f->inverse ? real_strides : complex_strides);
    if (err == CLFFT_SUCCESS)
        err = f->inverse ? clfftSetPlanDistance(plan, f->h * half, f->h * f->w)
                         : clfftSetPlanDistance(plan, f->h * f->w, f->h * half);
    if (err == CLFFT_SUCCESS) err = clfftSetPlanBatchSize(plan, f->batch);
    if (err == CLFFT_SUCCESS) err = clfftBakePlan(plan, 1, &cl->queue, NULL, NULL);
    if (err != CLFFT_SUCCESS) {
        clfftDestroyPlan(&plan);
        return tt_error_cl(err, "clFFT plan %s %zux%zu batch %zu",
                           f->inverse ? "inverse" : "forward", f->h, f->w, f->batch);
    }
    *out = plan;
    return NULL;
}

/* The cached plan for f's sizes, baked on first use. */
static tt_status plan_for(tt_cl_backend *cl, const tt_fft2d *f, clfftPlanHandle *out)
{
    if (!cl->fft) {
        TT_TRY(fft_setup());
        cl->fft = calloc(1, sizeof *cl->fft);
        if (!cl->fft) {
            pthread_mutex_lock(&setup_lock);
            if (--setup_users == 0) clfftTeardown();
            pthread_mutex_unlock(&setup_lock);
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "clFFT plan cache: out of host memory");
        }
    }
    struct tt_cl_fft_cache *c = cl->fft;
    for (int i = 0; i < c->count; i++) {
        fft_plan *p = &c->plans[i];
        if (p->inverse == f->inverse && p->batch == f->batch && p->h == f->h && p->w == f->w) {
            *out = p->plan;
            return NULL;
        }
    }
    clfftPlanHandle plan = 0;
    TT_TRY(bake(cl, f, &plan));
    if (c->count == FFT_PLAN_CACHE) { /* the oldest goes; the queue is in order */
        clFinish(cl->queue);
        clfftDestroyPlan(&c->plans[0].plan);
        for (int i = 1; i < c->count; i++) c->plans[i - 1] = c->plans[i];
        c->count--;
    }
    c->plans[c->count++] = (fft_plan){f->inverse, f->batch, f->h, f->w, plan};
    *out = plan;
    return NULL;
}

tt_status tt_cl_fft2d(tt_backend *backend, const tt_fft2d *f)
{
    tt_cl_backend *cl = backend->impl;
    clfftPlanHandle plan = 0;
    TT_TRY(plan_for(cl, f, &plan));
    cl_mem real = f->real.buffer->handle, spectrum = f->spectrum.buffer->handle;
    cl_mem *in = f->inverse ? &spectrum : &real, *out = f->inverse ? &real : &spectrum;
    clfftStatus err = clfftEnqueueTransform(plan, f->inverse ? CLFFT_BACKWARD : CLFFT_FORWARD, 1,
                                            &cl->queue, 0, NULL, NULL, in, out, NULL);
    if (err != CLFFT_SUCCESS)
        return tt_error_cl(err, "clfftEnqueueTransform(%s %zux%zu batch %zu)",
                           f->inverse ? "inverse" : "forward", f->h, f->w, f->batch);
    return NULL;
}
