/* Element-wise utility kernels over flat float arrays. */

/* x[i] = value */
__kernel void fill(TT_MEM(float, x), const float value, const int n)
{
    TT_PTR(float, x);
    int i = get_global_id(0);
    if (i < n) x[i] = value;
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
