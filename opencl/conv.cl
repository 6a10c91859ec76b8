/*
 * Convolution helpers the GEMM does not cover: broadcasting the bias into an
 * output before the GEMM adds to it, and the bias gradient.  Layout NCHW;
 * "plane" is H*W of one channel.  im2col/col2im come from CLBlast.
 */

/* TT_CONV_BIAS_WG: the work-group of conv_bias_backward, a power of two;
 * the host passes it to every build (src/ops/conv_algo.c). */
#ifndef TT_CONV_BIAS_WG
#error "conv.cl: TT_CONV_BIAS_WG comes from the host (src/ops/conv_algo.c)"
#endif

/* y[nc, p] = bias[nc % channels]; global (plane, batch * channels). */
__kernel void conv_bias_fill(TT_MEM(float, y), TT_MEM(const float, bias), const int channels,
                             const int plane, const int rows)
{
    TT_PTR(float, y);
    TT_PTR(const float, bias);
    const int p = get_global_id(0);
    const int row = get_global_id(1);
    if (p < plane && row < rows) y[(size_t)row * plane + p] = bias[row % channels];
}

/* dbias[c] += sum over n, p of dout[n, c, p]; one work-group per channel c,
 * its work-items stride over the plane (consecutive addresses per step).
 * Rows are `pitch` floats apart: the host may sum a slice of each plane
 * (src/ops/conv_algo.c keeps an invocation's loop under TT_LOOP_BUDGET). */
__kernel __attribute__((reqd_work_group_size(TT_CONV_BIAS_WG, 1, 1)))
void conv_bias_backward(TT_MEM(float, dbias), TT_MEM(const float, dout), const int batch,
                        const int channels, const int plane, const int pitch)
{
    TT_PTR(float, dbias);
    TT_PTR(const float, dout);
    __local float partial[TT_CONV_BIAS_WG];
    const int c = get_group_id(0);
    const int lid = get_local_id(0);
    float sum = 0.0f;
    if (c < channels)
        for (int n = 0; n < batch; n++) {
            __global const float *row = dout + ((size_t)n * channels + c) * pitch;
            for (int p = lid; p < plane; p += TT_CONV_BIAS_WG) sum += row[p];
        }
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = TT_CONV_BIAS_WG / 2; step > 0; step /= 2) {
        if (lid < step) partial[lid] += partial[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && c < channels) dbias[c] += partial[0];
}

/* conv_bias_backward for CPUs: one work-item per channel c streams its
 * planes as float8 (a work-group's strided walk and local-memory tree cost
 * PoCL more than the sum itself).  global (channels). */
__kernel void conv_bias_backward_w8(TT_MEM(float, dbias), TT_MEM(const float, dout),
                                    const int batch, const int channels, const int plane,
                                    const int pitch)
{
    TT_PTR(float, dbias);
    TT_PTR(const float, dout);
    const int c = get_global_id(0);
    if (c >= channels) return;
    float8 acc = (float8)(0.0f);
    float tail = 0.0f;
    for (int n = 0; n < batch; n++) {
        __global const float *row = dout + ((size_t)n * channels + c) * pitch;
        int p = 0;
        for (; p + 8 <= plane; p += 8) acc += vload8(0, row + p);
        for (; p < plane; p++) tail += row[p];
    }
    const float4 h = acc.lo + acc.hi;
    dbias[c] += (h.x + h.y) + (h.z + h.w) + tail;
}
