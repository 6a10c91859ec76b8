/* Links the installed library and lists the OpenCL devices through the
 * public header; prints the kernel folder the package config names. */
#include <stdio.h>
#include <stdlib.h>

#include <tiletrain.h>

int main(void)
{
    tt_device_info *devices = NULL;
    int count = 0;
    tt_status status = tt_devices_list(&devices, &count);
    if (status) {
        fprintf(stderr, "consumer: %s\n", tt_status_message(status));
        tt_status_free(status);
        return 1;
    }
    printf("consumer: tiletrain %s, %d device(s), kernels in %s\n", TT_VERSION, count, KERNEL_DIR);
    free(devices);
    return count > 0 ? 0 : 1;
}
