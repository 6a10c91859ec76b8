/*
 * Element-wise activations: ReLU, leaky ReLU, sigmoid, SiLU.  Forward and
 * backward.
 *
 * The backward of ReLU, leaky ReLU and sigmoid reads the forward OUTPUT (y),
 * never the input, so a forward run in place (out == inp, the input
 * overwritten) still has what its backward needs.  SiLU's reads the INPUT
 * (its derivative is not a function of its output).  Backward ADDS:
 * dinp[i] += dout[i] * f'(.) (beta = 1).
 * One work-item per element; n need not be a multiple of the work-group.
 */

/* out = max(inp, 0); NaN passes through, as in PyTorch. */
__kernel void relu_forward(TT_MEM(float, out), TT_MEM(const float, inp), const int n)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    float x = inp[i];
    out[i] = x < 0.0f ? 0.0f : x;
}

/* dinp += out > 0 ? dout : 0 */
__kernel void relu_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                            TT_MEM(const float, out), const int n)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, out);
    int i = get_global_id(0);
    if (i >= n) return;
    if (out[i] > 0.0f) dinp[i] += dout[i];
}

/* d = out > 0 ? d : 0, in place: the gradient through a ReLU when nothing
 * else adds into d (saves a buffer; the accumulating form is above) */
__kernel void relu_backward_inplace(TT_MEM(float, d), TT_MEM(const float, out), const int n)
{
    TT_PTR(float, d);
    TT_PTR(const float, out);
    int i = get_global_id(0);
    if (i >= n) return;
    if (!(out[i] > 0.0f)) d[i] = 0.0f;
}

/* out = inp > 0 ? inp : negative_slope * inp */
__kernel void leaky_relu_forward(TT_MEM(float, out), TT_MEM(const float, inp),
                                 const float negative_slope, const int n)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    float x = inp[i];
    out[i] = x > 0.0f ? x : x * negative_slope;
}

/* dinp += out > 0 ? dout : negative_slope * dout.  Needs negative_slope >= 0
 * (then out > 0 exactly when inp > 0); the host checks it. */
__kernel void leaky_relu_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                                  TT_MEM(const float, out), const float negative_slope,
                                  const int n)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, out);
    int i = get_global_id(0);
    if (i >= n) return;
    float g = dout[i];
    dinp[i] += out[i] > 0.0f ? g : g * negative_slope;
}

/* out = 1 / (1 + exp(-inp)) */
__kernel void sigmoid_forward(TT_MEM(float, out), TT_MEM(const float, inp), const int n)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    out[i] = 1.0f / (1.0f + exp(-inp[i]));
}

/* dinp += dout * out * (1 - out) */
__kernel void sigmoid_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                               TT_MEM(const float, out), const int n)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, out);
    int i = get_global_id(0);
    if (i >= n) return;
    float y = out[i];
    dinp[i] += dout[i] * y * (1.0f - y);
}

/* sigmoid(x) from e = exp(-|x|), which lies in (0, 1] for every x: no
 * overflow to inf for large |x| (exp(-x) at x = -100 would be), so SiLU of
 * any finite input is finite.  NaN stays NaN. */
TT_INLINE float tt_sigmoid_stable(const float x)
{
    float e = exp(-fabs(x));
    float r = 1.0f / (1.0f + e);
    return x >= 0.0f ? r : e * r;
}

/* out = inp * sigmoid(inp); out may be inp */
__kernel void silu_forward(TT_MEM(float, out), TT_MEM(const float, inp), const int n)
{
    TT_PTR(float, out);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    float x = inp[i];
    out[i] = x * tt_sigmoid_stable(x);
}

/* dinp += dout * s * (1 + inp * (1 - s)), s = sigmoid(inp).  For large |x|
 * s is 0 or 1 and the terms stay finite: s (1 + x (1 - s)) is 0 * (1 + x)
 * or 1 * (1 + x 0). */
__kernel void silu_backward(TT_MEM(float, dinp), TT_MEM(const float, dout),
                            TT_MEM(const float, inp), const int n)
{
    TT_PTR(float, dinp);
    TT_PTR(const float, dout);
    TT_PTR(const float, inp);
    int i = get_global_id(0);
    if (i >= n) return;
    float x = inp[i];
    float s = tt_sigmoid_stable(x);
    dinp[i] += dout[i] * (s * (1.0f + x * (1.0f - s)));
}
