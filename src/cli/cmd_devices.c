/* tiletrain devices: every device of every backend (OpenCL, Vulkan), as a
 * table or JSON. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/memstats.h"

typedef struct devices_options {
    int json;
    char device[TT_OPT_STRING_MAX];
    char backend[TT_OPT_STRING_MAX];  /* all | opencl | vulkan */
} devices_options;

static const tt_opt option_table[] = {
    {"json", TT_OPT_FLAG, offsetof(devices_options, json), NULL, "one JSON array, an object per device", 1, 0, NULL},
    {"device", TT_OPT_STRING, offsetof(devices_options, device), "SPEC", "mark the device that SPEC selects "
     "(index or part of a name, vendor or platform; default $TT_DEVICE, else the first GPU, else the first "
     "device)", 1, 0, NULL},
    {"backend", TT_OPT_CHOICE, offsetof(devices_options, backend), "NAME", "list only this "
     "backend's devices: opencl or vulkan (default: all)", 1, 0, "all|opencl|vulkan"},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain devices [--json] [--device SPEC] [--backend NAME]\n"
           "\n"
           "Lists every device of every OpenCL platform, CPUs included, then every\n"
           "Vulkan device (Mesa's lavapipe is a CPU one).  Training runs on OpenCL;\n"
           "the Vulkan backend is being built op by op (docs/backend.md).\n"
           "\n"
           "example:\n"
           "  tiletrain devices --json --device pocl\n"
           "  tiletrain devices --backend vulkan\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

static cJSON *device_json(const tt_device_info *d, const char *backend, int selected)
{
    cJSON *o = tt_device_info_json(d);
    cJSON_AddStringToObject(o, "backend", backend);
    cJSON_AddBoolToObject(o, "selected", selected);
    return o;
}

static void print_table(const char *title, const tt_device_info *list, int n, int selected)
{
    char g[32], m[32], l[32];
    printf("%s devices:\n", title);
    for (int i = 0; i < n; i++) {
        const tt_device_info *d = &list[i];
        printf("%s[%d] %s\n", i == selected ? "*" : " ", d->index, d->name);
        printf("    platform        %s (%s)\n", d->platform, d->platform_version);
        printf("    vendor          %s\n", d->vendor);
        printf("    driver          %s\n", d->driver_version);
        printf("    type            %s, %d compute units\n", d->type, d->compute_units);
        printf("    global memory   %s\n", tt_format_bytes(d->global_mem_bytes, g, sizeof g));
        printf("    max allocation  %s\n", tt_format_bytes(d->max_alloc_bytes, m, sizeof m));
        printf("    local memory    %s\n", tt_format_bytes(d->local_mem_bytes, l, sizeof l));
        printf("    base alignment  %u bytes\n", d->base_align_bytes);
        printf("    fp16 / fp64     %s / %s\n", d->fp16 ? "yes" : "no", d->fp64 ? "yes" : "no");
        if (d->opencl_c_version[0]) printf("    OpenCL C        %s\n", d->opencl_c_version);
    }
    if (selected >= 0) printf("(* = the device tiletrain uses with these settings)\n");
}

int tt_cmd_devices(int argc, char **argv)
{
    devices_options o = {.backend = "all"};
    int rc = tt_cli_parse("devices", option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    int json = o.json;
    const char *selector = o.device[0] ? o.device : NULL;

    int want_opencl = strcmp(o.backend, "vulkan") != 0, want_vulkan = strcmp(o.backend, "opencl") != 0;
    tt_device_info *list = NULL, *vk_list = NULL;
    int n = 0, vk_n = 0, selected = -1;
    tt_status vk_status = NULL;
    if (want_opencl) {
        tt_status status = tt_devices_list(&list, &n);
        if (!status) status = tt_device_select(selector, &selected);
        if (status) {
            free(list);
            return tt_cli_fail(status);
        }
    }
    if (want_vulkan) vk_status = tt_backend_devices(TT_BACKEND_VULKAN, &vk_list, &vk_n);
    if (vk_status && !want_opencl) { /* asked for Vulkan alone: its failure is the answer */
        free(vk_list);
        return tt_cli_fail(vk_status);
    }
    if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(arr, device_json(&list[i], "opencl", i == selected));
        for (int i = 0; i < vk_n; i++)
            cJSON_AddItemToArray(arr, device_json(&vk_list[i], "vulkan", 0));
        char *text = cJSON_Print(arr);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(arr);
    } else {
        if (want_opencl) print_table("OpenCL", list, n, selected);
        if (want_opencl && want_vulkan) printf("\n");
        if (vk_status) printf("Vulkan devices: none (%s)\n", tt_status_message(vk_status));
        else if (want_vulkan) print_table("Vulkan", vk_list, vk_n, -1);
    }
    tt_status_free(vk_status);
    free(list);
    free(vk_list);
    return 0;
}
