/*
 * What the two F(4x4, 3x3) algorithms share (src/ops/conv_winograd4.c):
 * the conv_winograd4 program's base options, the weight transform and the
 * weight gradient's last step.
 * WINOGRAD4X4_FUSED (src/ops/conv_winograd4_fused.c) runs its own kernels
 * of the same program on the same U.
 */
#ifndef TT_OPS_CONV_WINOGRAD4_H
#define TT_OPS_CONV_WINOGRAD4_H

#include <stddef.h>

#include "backend/backend.h"

/* The most channels the fused kernels take, which size their private
 * arrays (every build of the program has them; the channel counts are
 * arguments): input channels of the forward (V holds 36 x 16 floats of
 * each, 147 KiB at 64), and input times output channels of the weight
 * gradient (a work-item's dU, 147 KiB at 32 x 32). */
#define TT_W4F_MAX_CIN 64
#define TT_W4F_MAX_WEIGHT 1024 /* 32 x 32 */

/* The -D defines of the program's transforms and fused kernels; the
 * products' builds differ only in their blocks (conv_winograd4.c form_of). */
extern const char *const tt_wino4_options;

/* U[e][ci][co] = (G g Gᵀ)[e] of weight (cout, cin, 3, 3), cout % 16 == 0;
 * flip: weight is (cin, cout, 3, 3) read flipped, the kernel whose forward
 * is the input gradient of that weight's convolution.  36 cin cout floats. */
tt_status tt_wino4_weight_transform(tt_backend *be, tt_mem u, tt_mem weight, size_t cout,
                                    size_t cin, int flip);

/* dweight (cout, cin, 3, 3) += Gᵀ dU G, dU the sum of `parts` arrays of
 * 36 cout cin floats ([e][co][ci]) side by side in du; cin % 16 == 0. */
tt_status tt_wino4_weight_finish(tt_backend *be, tt_mem dweight, tt_mem du, size_t cin,
                                 size_t cout, size_t parts);

#endif
