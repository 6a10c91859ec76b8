/*
 * Included by every compute shader (#include "common.glsl").  The backend's
 * conventions (docs/backend.md, "Vulkan"):
 *
 * - the work-group size is specialization constants 0, 1, 2 (the launch's
 *   `local`, else 64 x 1 x 1); named constants start at constant_id 3 and
 *   are set by name from the launch's -DNAME=value options;
 * - the k-th TT_ARG_MEM argument is declared TT_BUFFER(k, type, name) and
 *   read and written as TT_B(name)[i], never name[i] (below); the backend
 *   places it at an aligned byte offset at or below the tensor; the
 *   push-constant block mirrors the argument list: a uint per buffer (the
 *   tensor's remaining byte offset from that place), then int / float /
 *   uint64_t scalars, in argument order (uint64_t 8-aligned);
 * - the k-th TT_ARG_LOCAL sets the constant named TT_LOCAL<k> to its size
 *   in 32-bit words (round up), for sizing a shared array.
 */
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

/*
 * Buffers.  Every shader is compiled twice (cmake/shaders.cmake):
 *
 * - bound (the default): TT_BUFFER(k, type, name) is storage-buffer binding
 *   k, which the backend binds from an aligned offset at or below the
 *   tensor over the rest of its buffer; one binding reaches at most
 *   maxStorageBufferRange bytes (lavapipe: 128 MiB);
 * - addressed (-DTT_ADDRESSED=1): TT_BUFFER(k, type, name) is a
 *   buffer_reference type and a pointer of it, read once from entry k of
 *   tt_addresses, a table of device addresses (uvec2: no 64-bit integers
 *   needed) at binding TT_ADDRESS_BINDING that the backend fills per
 *   dispatch with each buffer's address plus the same aligned offset; this
 *   reaches the whole buffer.  The backend runs it when a buffer argument
 *   does not fit a binding (or TT_VULKAN_ADDRESSED=1).
 *
 * TT_B(name) is the array in both: write TT_B(name)[i], never name[i].  The
 * addressed compile has no array called `name`, so a shader that indexes a
 * buffer directly fails to build: that is the check (tt_b_rewrite.py
 * rewrites old shaders).  Also declared in both: `const int name_slot = k`.
 * Indices are ints, as in the OpenCL kernels: a tensor may have up to 2^31
 * elements from its binding.
 */
#define TT_ADDRESS_BINDING 32
#if defined(TT_ADDRESSED) && TT_ADDRESSED
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
layout(std430, binding = TT_ADDRESS_BINDING) readonly buffer tt_addresses_block {
    uvec2 at[];
} tt_addresses;
#define TT_BUFFER(binding_, type_, name_)                                            \
    layout(buffer_reference, std430, buffer_reference_align = 4) buffer name_##_ref { \
        type_ v[];                                                                   \
    };                                                                               \
    const int name_##_slot = binding_;                                               \
    name_##_ref name_##_pointer = name_##_ref(tt_addresses.at[name_##_slot])
#define TT_B(name_) name_##_pointer.v
#else
#define TT_BUFFER(binding_, type_, name_)                                          \
    layout(std430, binding = binding_) buffer name_##_block { type_ name_[]; };   \
    const int name_##_slot = binding_
#define TT_B(name_) name_
#endif

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
