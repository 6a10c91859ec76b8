/*
 * Included by every compute shader (#include "common.glsl").  The backend's
 * conventions (docs/backend.md, "Vulkan"):
 *
 * - the work-group size is specialization constants 0, 1, 2 (the launch's
 *   `local`, else 64 x 1 x 1); named constants start at constant_id 3 and
 *   are set by name from the launch's -DNAME=value options;
 * - the k-th TT_ARG_MEM argument is storage-buffer binding k, bound at an
 *   aligned byte offset at or below the tensor; the push-constant block
 *   mirrors the argument list: a uint per buffer (the tensor's remaining
 *   byte offset from its binding), then int / float / uint64_t scalars, in
 *   argument order (uint64_t 8-aligned);
 * - the k-th TT_ARG_LOCAL sets the constant named TT_LOCAL<k> to its size
 *   in 32-bit words (round up), for sizing a shared array.
 */
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

/* A storage buffer of `type_` elements at binding `binding_`, named `name_`. */
#define TT_BUFFER(binding_, type_, name_) \
    layout(std430, binding = binding_) buffer name_##_block { type_ name_[]; }

/* The first element of a tensor whose remaining byte offset (a push
 * constant) is `offset_bytes`, in elements of `elem_bytes`. */
#define TT_AT(offset_bytes, elem_bytes) int((offset_bytes) / (elem_bytes))

/* The work-item's index of a 1-D launch.  The backend may fold a 1-D
 * launch of more work-groups than a dimension allows into rows of
 * work-groups; this undoes it.  Compare it with the real size: the launch
 * is rounded up to whole work-groups. */
int tt_global_id()
{
    return int(gl_GlobalInvocationID.x +
               gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}
