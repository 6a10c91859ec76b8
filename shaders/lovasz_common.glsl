/* What the Lovász shaders share (opencl/lovasz.cl's lovasz_target). */
#ifndef TT_LOVASZ_COMMON_GLSL
#define TT_LOVASZ_COMMON_GLSL

/* The target of plane class k at a pixel whose label / target byte is t:
 * 0 or 1, -1 ignored, -2 invalid (softmax: a label >= classes; hinge: a
 * target > 1). */
int lovasz_target(int t, int ignore, int classes, bool softmax, int k)
{
    if (t == ignore) return -1;
    if (t >= (softmax ? classes : 2)) return -2;
    return softmax ? (t == k ? 1 : 0) : t;
}

#endif
