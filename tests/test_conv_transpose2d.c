/*
 * conv_transpose2d (GEMM + CLBlast col2im) against the double reference:
 * the UNet's 2x2 stride-2 up-convolution, general kernels, strides, padding
 * and output padding, groups, dilation, 1x1 images, batch 1 and 2, channel
 * counts not multiples of 4, with and without bias; finite-difference
 * gradients of input, weight and bias; backward adds.
 */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "ref_conv_check.h"

typedef struct convt_case {
    const char *name;
    tt_conv_transpose2d_desc desc;
    int with_bias;
} convt_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, opH, opW, dH, dW, groups */
#define D(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g, TT_CONV_ALGO_IM2COL_GEMM, {0}, 0}

static const convt_case cases[] = {
    {"k2 s2 (UNet) 4x3 5->3", D(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1), 1},
    {"k2 s2 1x1 image 3->5", D(1, 3, 1, 1, 5, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1), 1},
    {"k2 s2 no bias 3x5 3->5", D(1, 3, 3, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1), 0},
    {"k3 s1 p1 7x9 3->5", D(1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1), 1},
    {"k3 s2 p1 op1 4x5 3->5", D(2, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 0},
    {"k4 s2 p1 4x5 3->2", D(1, 3, 4, 5, 2, 4, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1), 1},
    {"k1 s1 (no cols) 7x9 3->5", D(2, 3, 7, 9, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), 1},
    {"k5 s1 p2 3x3 5->3", D(1, 5, 3, 3, 3, 5, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1), 1},
    {"k3 s2 p1 groups 2 4->6", D(1, 4, 3, 5, 6, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2), 1},
    {"k3 s2 p1 op1 dilation 2", D(1, 3, 4, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 2, 1), 1},
    {"k3x2 s(1,2) p(1,0)", D(1, 3, 5, 4, 5, 3, 2, 1, 2, 1, 0, 0, 0, 1, 1, 1), 1},
};

static void ref_forward(double *out, const double *inp, const double *weight,
                        const double *bias, const void *desc)
{
    ref_conv_transpose2d_forward(out, inp, weight, bias, desc);
}

static tt_status dev_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const void *desc, tt_mem ws)
{
    return tt_conv_transpose2d_forward(be, out, inp, weight, bias, desc, ws);
}

static tt_status dev_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                              tt_mem dout, tt_mem inp, tt_mem weight, const void *desc,
                              tt_mem ws)
{
    return tt_conv_transpose2d_backward(be, dinp, dweight, dbias, dout, inp, weight, desc, ws);
}

static ref_conv_op op_of(const convt_case *c, int pass_workspace)
{
    const tt_conv_transpose2d_desc *d = &c->desc;
    int oh = ref_conv_transpose2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h,
                                           d->output_pad_h, d->dilation_h);
    int ow = ref_conv_transpose2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w,
                                           d->output_pad_w, d->dilation_w);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_out_h(d), oh);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_out_w(d), ow);
    return (ref_conv_op){
        .name = c->name, .desc = d,
        .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
        .weight_count = (size_t)d->in_channels * (d->out_channels / d->groups) * d->kernel_h *
                        d->kernel_w,
        .bias_count = (size_t)d->out_channels,
        .out_count = (size_t)d->batch * d->out_channels * oh * ow,
        .with_bias = c->with_bias, .pass_workspace = pass_workspace,
        .workspace_bytes = tt_conv_transpose2d_workspace_bytes(d),
        .ref_forward = ref_forward, .forward = dev_forward, .backward = dev_backward};
}

static void test_cases(void)
{
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TH_OK(tt_conv_transpose2d_check(&cases[i].desc));
        ref_conv_op op = op_of(&cases[i], (int)(i % 2));
        ref_conv_errors e = ref_conv_check_case(&op, 2000 + i);
        if (e.forward > worst.forward) worst.forward = e.forward;
        if (e.dinp > worst.dinp) worst.dinp = e.dinp;
        if (e.dweight > worst.dweight) worst.dweight = e.dweight;
        if (e.dbias > worst.dbias) worst.dbias = e.dbias;
    }
    printf("\n    conv_transpose2d largest: forward %.2e (tol %.0e)  dinp %.2e  dweight %.2e  "
           "dbias %.2e (tol %.0e)\n",
           worst.forward, REF_CONV_FWD_TOL, worst.dinp, worst.dweight, worst.dbias,
           REF_CONV_GRAD_TOL);
}

/* The UNet up-convolution doubles H and W; its workspace is one image's
 * columns (Cout * 2 * 2, H * W). */
static void test_sizes(void)
{
    tt_conv_transpose2d_desc d = D(4, 16, 32, 24, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_out_h(&d), 64);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_out_w(&d), 48);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_workspace_bytes(&d),
                    (size_t)8 * 4 * 32 * 24 * sizeof(float));
    tt_conv_transpose2d_desc one = D(4, 16, 32, 24, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1);
    CU_ASSERT_EQUAL(tt_conv_transpose2d_workspace_bytes(&one), 0);
}

static void expect_error(tt_status s, tt_code code, const char *mention)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    if (mention && !strstr(tt_status_message(s), mention)) {
        printf("\n    message lacks '%s': %s", mention, tt_status_message(s));
        CU_FAIL("error message does not name the problem");
    }
    tt_status_free(s);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv_transpose2d_desc d = D(1, 3, 4, 5, 2, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1);
    tt_buffer *x = th_zeros(3 * 4 * 5, "bad.inp");
    tt_buffer *w = th_zeros(3 * 2 * 4, "bad.weight");
    tt_buffer *y = th_zeros(2 * 8 * 10 - 1, "bad.out"); /* one float short */
    expect_error(tt_conv_transpose2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w),
                                             (tt_mem){0}, &d, (tt_mem){0}),
                 TT_ERR_INVALID_ARGUMENT, "out");
    tt_conv_transpose2d_desc op = d;
    op.output_pad_h = 2; /* not below the stride */
    expect_error(tt_conv_transpose2d_check(&op), TT_ERR_UNSUPPORTED, "output padding");
    tt_conv_transpose2d_desc crop = d;
    crop.pad_h = 5; /* crops all 8 rows */
    expect_error(tt_conv_transpose2d_check(&crop), TT_ERR_INVALID_ARGUMENT, "crops");
    tt_conv_transpose2d_desc g = d;
    g.groups = 2;
    expect_error(tt_conv_transpose2d_check(&g), TT_ERR_INVALID_ARGUMENT, "groups");
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y);
}

static void test_torch(void)
{
    static const convt_case c = {"torch k3 s2 p1 op1 2x4x3x5",
                                 D(2, 4, 3, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 1};
    ref_conv_op op = op_of(&c, 0);
    int oh = tt_conv_transpose2d_out_h(&c.desc), ow = tt_conv_transpose2d_out_w(&c.desc);
    ref_conv_check_torch(&op, "F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)",
                         (int[]){2, 4, 3, 5}, (int[]){4, 3, 3, 3}, (int[]){2, 3, oh, ow}, 78);
    static const convt_case unet = {"torch k2 s2 (UNet) 1x5x4x3",
                                    D(1, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1), 1};
    op = op_of(&unet, 0);
    ref_conv_check_torch(&op, "F.conv_transpose2d(x, w, b, stride=2)", (int[]){1, 5, 4, 3},
                         (int[]){5, 3, 2, 2}, (int[]){1, 3, 8, 6}, 79);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward and gradients, all cases", test_cases},
        {"output and workspace sizes", test_sizes},
        {"bad arguments are reported", test_bad_arguments},
        {"cross-check against PyTorch", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_transpose2d", tests, TH_EVERY);
}
