/*
 * What the two F(4x4, 3x3) algorithms share (src/ops/conv_winograd4.c):
 * the conv_winograd4 program's base options, the weight transform and the
 * weight gradient's last step.
 * WINOGRAD4X4_FUSED (src/ops/conv_winograd4_fused.c) adds the channel
 * counts to the options and runs its own kernel on the same U.
 */
#ifndef TT_OPS_CONV_WINOGRAD4_H
#define TT_OPS_CONV_WINOGRAD4_H

#include <stddef.h>

#include "backend/backend.h"

/* The -D defines every kernel of the program is built with. */
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
