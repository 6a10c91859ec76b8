/* Tables of conv2d cases against the double reference (ref_conv_cases.h). */
#include "ref_conv_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "harness.h"
#include "ref_conv.h"

static void ref_forward(double *out, const double *inp, const double *weight,
                        const double *bias, const void *desc)
{
    ref_conv2d_forward(out, inp, weight, bias, desc);
}

static void ref_backward(double *dinp, double *dweight, const double *inp, const double *weight,
                         const double *dout, const void *desc)
{
    ref_conv2d_backward(dinp, dweight, inp, weight, dout, desc);
}

static tt_status dev_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const void *desc, tt_mem ws)
{
    return tt_conv2d_forward(be, out, inp, weight, bias, desc, ws);
}

static tt_status dev_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                              tt_mem dout, tt_mem inp, tt_mem weight, const void *desc,
                              tt_mem ws)
{
    return tt_conv2d_backward(be, dinp, dweight, dbias, dout, inp, weight, desc, ws);
}

ref_conv_op ref_conv2d_case_op(const conv2d_case *c, int pass_workspace)
{
    const tt_conv2d_desc *d = &c->desc;
    int oh = ref_conv2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h, d->dilation_h);
    int ow = ref_conv2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w, d->dilation_w);
    size_t ws = tt_conv2d_workspace_bytes(d);
    return (ref_conv_op){
        .name = c->name, .desc = d,
        .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
        .weight_count = (size_t)d->out_channels * d->in_channels * d->kernel_h * d->kernel_w,
        .bias_count = (size_t)d->out_channels,
        .out_count = (size_t)d->batch * d->out_channels * oh * ow,
        .with_bias = c->with_bias, .pass_workspace = pass_workspace && ws > 0,
        .workspace_bytes = ws,
        .ref_forward = ref_forward, .ref_backward = d->groups > 1 ? NULL : ref_backward,
        .forward = dev_forward, .backward = dev_backward};
}

double ref_conv_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void ref_conv2d_check_cases(const char *label, const conv2d_case *cases, size_t count, int runs)
{
    double start = ref_conv_now_ms();
    ref_conv_errors worst = {0};
    size_t left_out = 0;
    for (size_t i = 0; i < count; i++) {
        const tt_conv2d_desc *d = &cases[i].desc;
        TH_OK(tt_conv2d_check(d));
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            tt_conv_algo want = runs & (1 << dir) ? d->algo : TT_CONV_ALGO_IM2COL_GEMM;
            CU_ASSERT_EQUAL(tt_conv2d_algo_for(d, (tt_conv_dir)dir), want);
        }
        if (!tt_conv2d_runs_on(th_backend(), d)) {
            left_out++;
            continue;
        }
        ref_conv_op op = ref_conv2d_case_op(&cases[i], (int)(i % 2));
        /* the data follows the case, not its place in the table: a case
         * checked again under other knobs meets the same data (and its
         * finite differences are computed once, ref_conv_check.c) */
        const char *name = cases[i].name;
        uint64_t seed = 2000 + tt_hash_bytes(TT_HASH_INIT, name, strlen(name)) % 1000003;
        ref_conv_errors e = ref_conv_check_case(&op, seed);
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
        worst.dbias = fmax(worst.dbias, e.dbias);
    }
    if (left_out) {
        char what[128], why[96];
        snprintf(what, sizeof what, "%s, %zu of %zu cases", label, left_out, count);
        snprintf(why, sizeof why, "the backend has no %s convolution",
                 tt_conv_algo_name(cases[0].desc.algo));
        th_left_out(what, why);
    }
    if (left_out == count) return;
    printf("\n    %s largest: forward %.2e (tol %.0e)  dinp %.2e  dweight %.2e  dbias %.2e "
           "(tol %.0e); %.1f s\n",
           label, worst.forward, REF_CONV_FWD_TOL, worst.dinp, worst.dweight, worst.dbias,
           REF_CONV_GRAD_TOL, (ref_conv_now_ms() - start) / 1e3);
}

float *ref_conv2d_run_three(const tt_conv2d_desc *d, size_t n_in, size_t n_w, size_t n_out)
{
    tt_backend *be = th_backend();
    uint64_t seed = 77;
    float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
    float *dy = th_random_floats(n_out, -1, 1, &seed), *got = malloc((n_out + n_in + n_w) * 4);
    CU_ASSERT_FATAL(got != NULL);
    tt_buffer *bx = th_upload(x, n_in, "split.x"), *bw = th_upload(w, n_w, "split.w");
    tt_buffer *bdy = th_upload(dy, n_out, "split.dy"), *by = th_zeros(n_out, "split.y");
    tt_buffer *bdx = th_zeros(n_in, "split.dx"), *bdw = th_zeros(n_w, "split.dw");
    TH_OK(tt_conv2d_forward(be, tt_mem_of(by), tt_mem_of(bx), tt_mem_of(bw), (tt_mem){0}, d,
                            (tt_mem){0}));
    TH_OK(tt_conv2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdw), (tt_mem){0}, tt_mem_of(bdy),
                             tt_mem_of(bx), tt_mem_of(bw), d, (tt_mem){0}));
    th_download(got, by, n_out);
    th_download(got + n_out, bdx, n_in);
    th_download(got + n_out + n_in, bdw, n_w);
    tt_buffer_free(bx), tt_buffer_free(bw), tt_buffer_free(bdy), tt_buffer_free(by);
    tt_buffer_free(bdx), tt_buffer_free(bdw);
    free(x), free(w), free(dy);
    return got;
}
