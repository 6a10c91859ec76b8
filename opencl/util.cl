/* Element-wise utility kernels over flat float arrays. */

/* x[i] = value */
__kernel void fill(TT_MEM(float, x), const float value, const int n)
{
    TT_PTR(float, x);
    int i = get_global_id(0);
    if (i < n) x[i] = value;
}

/* fill for CPUs: work-item k sets x[k run .. (k + 1) run - 1] (those below
 * n) with float8 stores, one streaming run per work-item; run % 8 == 0. */
__kernel void fill_w8(TT_MEM(float, x), const float value, const int n, const int run)
{
    TT_PTR(float, x);
    const int start = get_global_id(0) * run, end = min(n, start + run);
    int i = start;
    for (; i + 8 <= end; i += 8) vstore8((float8)(value), 0, x + i);
    for (; i < end; i++) x[i] = value;
}

/* x[i] *= alpha */
__kernel void scale(TT_MEM(float, x), const float alpha, const int n)
{
    TT_PTR(float, x);
    int i = get_global_id(0);
    if (i < n) x[i] *= alpha;
}

/* y[i] += alpha * x[i] */
__kernel void axpy(TT_MEM(float, y), TT_MEM(float, x), const float alpha, const int n)
{
    TT_PTR(float, y);
    TT_PTR(float, x);
    int i = get_global_id(0);
    if (i < n) y[i] += alpha * x[i];
}

/* y[i] = x[i] */
__kernel void copy(TT_MEM(float, y), TT_MEM(float, x), const int n)
{
    TT_PTR(float, y);
    TT_PTR(float, x);
    int i = get_global_id(0);
    if (i < n) y[i] = x[i];
}
