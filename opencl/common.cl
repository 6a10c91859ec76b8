/*
 * Prefixed to every program.  A buffer argument arrives as a pointer and a
 * byte offset (the host never makes sub-buffers):
 *
 *   __kernel void k(TT_MEM(float, x), const int n) { TT_PTR(float, x); ... }
 */
#define TT_MEM(type, name) __global type *name##_base, const ulong name##_offset
#define TT_PTR(type, name) \
    __global type *name = (__global type *)((__global char *)name##_base + name##_offset)

/* 8-wide row access for the CPU kernels: row[x0 .. x0 + 7], 0 outside [0, w). */
inline float8 tt_load8(__global const float *row, const int x0, const int w)
{
    if (x0 >= 0 && x0 + 8 <= w) return vload8(0, row + x0);
    float lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = (x0 + l >= 0 && x0 + l < w) ? row[x0 + l] : 0.0f;
    return vload8(0, lanes);
}

/* row[x0 .. x0 + 7] (+)= v, only the lanes inside [0, w). */
inline void tt_store8(__global float *row, const int x0, const int w, const float8 v,
                      const int accumulate)
{
    if (x0 + 8 <= w) {
        vstore8(accumulate ? vload8(0, row + x0) + v : v, 0, row + x0);
        return;
    }
    float lanes[8];
    vstore8(v, 0, lanes);
    for (int l = 0; l < 8 && x0 + l < w; l++) row[x0 + l] = (accumulate ? row[x0 + l] : 0.0f) + lanes[l];
}

/* The 3x3 kernels' edge columns without a lane-by-lane load: v = row[0 .. 7]
 * gives row[-1 .. 6] with the padding 0 in front (tt_shift_in8), and v =
 * row[w - 8 .. w - 1] gives row[w - 7 .. w] with the padding 0 behind
 * (tt_shift_out8). */
inline float8 tt_shift_in8(const float8 v)
{
    return shuffle2((float8)(0.0f), v, (uint8)(0, 8, 9, 10, 11, 12, 13, 14));
}
inline float8 tt_shift_out8(const float8 v)
{
    return shuffle2(v, (float8)(0.0f), (uint8)(1, 2, 3, 4, 5, 6, 7, 8));
}
