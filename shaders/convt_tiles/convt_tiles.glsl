/*
 * Shared by the convt_tiles shaders (opencl/convt_tiles.cl): the sizes the
 * host passes as -D options (src/ops/convt_tiles.c, params_of), here
 * specialization constants set by name; the defaults only let the shaders
 * compile, every launch sets them all.
 *   TT_CONVT_KH, TT_CONVT_KW  the kernel (= the stride)
 *   TT_CONVT_COB   output channels per invocation (forward)
 *   TT_CONVT_CIB   input channels per invocation (backward data)
 *   TT_CONVT_WG    backward weight work-group (= the launch's local size)
 * (TT_CONVT_WCIB is the OpenCL 8-wide kernels' alone: convt_tiles_w8.)
 * The geometry (N, Cin, H, W, Cout; OH = H KH, OW = W KW) ends every
 * argument list.
 */
layout(constant_id = 3) const int TT_CONVT_KH = 2;
layout(constant_id = 4) const int TT_CONVT_KW = 2;
layout(constant_id = 5) const int TT_CONVT_COB = 2;
layout(constant_id = 6) const int TT_CONVT_CIB = 4;
layout(constant_id = 7) const int TT_CONVT_WG = 64;
const int TT_CONVT_TAPS = TT_CONVT_KH * TT_CONVT_KW;
