/*
 * Element-wise add with an optional fused ReLU (src/ops/add.h): the
 * residual join out = relu(a + b).  One work-item per element; n need not
 * be a multiple of the work-group.
 *
 * Each work-item reads everything of element i before it writes element i,
 * so an output may be the very place of an input (the host refuses partial
 * overlaps).  Backward reads the forward OUTPUT for the ReLU's mask (out > 0),
 * never a or b, which an in-place forward overwrote.
 */

/* out = a + b; with relu, out < 0 becomes 0 (NaN passes through, as in
 * relu_forward). */
__kernel void add_forward(TT_MEM(float, out), TT_MEM(const float, a), TT_MEM(const float, b),
                          const int relu, const int n)
{
    TT_PTR(float, out);
    TT_PTR(const float, a);
    TT_PTR(const float, b);
    int i = get_global_id(0);
    if (i >= n) return;
    float v = a[i] + b[i];
    out[i] = relu && v < 0.0f ? 0.0f : v;
}

/* g = relu ? (out > 0 ? dout : 0) : dout; da += g (written when not
 * accumulate_da: da is dout's place), db likewise; a gradient not wanted
 * (has_* 0) is a stand-in, never touched.  out is read only with relu. */
__kernel void add_backward(TT_MEM(float, da), TT_MEM(float, db), TT_MEM(const float, dout),
                           TT_MEM(const float, out), const int has_da, const int accumulate_da,
                           const int has_db, const int accumulate_db, const int relu,
                           const int n)
{
    TT_PTR(float, da);
    TT_PTR(float, db);
    TT_PTR(const float, dout);
    TT_PTR(const float, out);
    int i = get_global_id(0);
    if (i >= n) return;
    float g = dout[i];
    if (relu && !(out[i] > 0.0f)) g = 0.0f;
    if (has_da) da[i] = accumulate_da ? da[i] + g : g;
    if (has_db) db[i] = accumulate_db ? db[i] + g : g;
}
