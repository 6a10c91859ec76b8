/* Shared by the Vulkan suites (test_vulkan.c, test_vulkan_ops.c): one
 * backend on lavapipe with the Khronos validation layer on, and checks that
 * no validation message came. */
#ifndef TT_TEST_VULKAN_H
#define TT_TEST_VULKAN_H

#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/status.h"
#include "harness.h"

static tt_backend *vk_be;

static inline tt_backend *vulkan(void)
{
    if (vk_be) return vk_be;
    th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_status s = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"}, &vk_be);
    if (s) th_report_status("creating the Vulkan backend on lavapipe", s, __FILE__, __LINE__);
    return vk_be;
}

/* The same forced variants on lavapipe and on the OpenCL device the suite
 * compares with (zero: each device's own choice again). */
static inline void force_both(tt_forced_variants forced)
{
    vulkan()->forced = forced;
    th_backend()->forced = forced;
}

static inline tt_vk_messages *messages(void) { return &((tt_vk_backend *)vulkan()->impl)->messages; }

/* Every test ends here: the queue runs clean and validation said nothing;
 * with TT_VULKAN_ADDRESSED=1 (the suites' second CTest run) every dispatch
 * ran the addressed shaders. */
static inline void no_messages(void)
{
    TH_OK(tt_finish(vulkan()));
    CU_ASSERT(messages()->enabled);
    CU_ASSERT_EQUAL(messages()->count, 0);
    const tt_vk_backend *vk = vulkan()->impl;
    if (vk->always_addressed) CU_ASSERT_EQUAL(vk->bound_dispatches, 0);
}

static inline tt_buffer *alloc(tt_backend *be, size_t bytes, const char *name)
{
    tt_buffer *b = NULL;
    TH_OK(tt_buffer_alloc(be, bytes, TT_MEM_OTHER, name, &b));
    return b;
}

static inline void expect_error(tt_status s, tt_code code, const char *part1, const char *part2)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const char *m = tt_status_message(s);
    int ok = tt_status_code(s) == code && strstr(m, part1) && (!part2 || strstr(m, part2));
    if (!ok) printf("\n    unexpected error: %s [%s]\n", m, tt_code_name(tt_status_code(s)));
    CU_ASSERT(ok);
    tt_status_free(s);
}

#endif
