/* A build without Vulkan (-DTT_VULKAN=OFF; CTest runs this suite only
 * there): the factory's vulkan kind says how to get it, and OpenCL still
 * works. */
#include <string.h>

#include "harness.h"

static void test_vulkan_off(void)
{
    tt_backend *be = NULL;
    tt_status s = tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN}, &be);
    CU_ASSERT_PTR_NULL(be);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(strstr(tt_status_message(s), "built without Vulkan: -DTT_VULKAN=ON") != NULL);
    tt_status_free(s);
    CU_ASSERT_PTR_NOT_NULL(th_backend());
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"the vulkan kind in a build without it", test_vulkan_off},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_off", tests, TH_HOST);
    th_backend_release();
    return rc;
}
