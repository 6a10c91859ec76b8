/* tiletrain devices: every OpenCL device, as a table or JSON. */
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
} devices_options;

static const tt_opt option_table[] = {
    {"json", TT_OPT_FLAG, offsetof(devices_options, json), NULL, "one JSON array, an object per device", 1, 0, NULL},
    {"device", TT_OPT_STRING, offsetof(devices_options, device), "SPEC", "mark the device that SPEC selects "
     "(index or part of a name, vendor or platform; default $TT_DEVICE, else the first GPU, else the first "
     "device)", 1, 0, NULL},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain devices [--json] [--device SPEC]\n"
           "\n"
           "Lists every device of every OpenCL platform, CPUs included.\n"
           "\n"
           "example:\n"
           "  tiletrain devices --json --device pocl\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

static cJSON *device_json(const tt_device_info *d, int selected)
{
    cJSON *o = tt_device_info_json(d);
    cJSON_AddBoolToObject(o, "selected", selected);
    return o;
}

static void print_table(const tt_device_info *list, int n, int selected)
{
    char g[32], m[32], l[32];
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
        printf("    OpenCL C        %s\n", d->opencl_c_version);
    }
    printf("(* = the device tiletrain uses with these settings)\n");
}

int tt_cmd_devices(int argc, char **argv)
{
    devices_options o = {0};
    int rc = tt_cli_parse("devices", option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    int json = o.json;
    const char *selector = o.device[0] ? o.device : NULL;

    tt_device_info *list = NULL;
    int n = 0, selected = -1;
    tt_status status = tt_devices_list(&list, &n);
    if (status) return tt_cli_fail(status);
    status = tt_device_select(selector, &selected);
    if (status) {
        free(list);
        return tt_cli_fail(status);
    }
    if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, device_json(&list[i], i == selected));
        char *text = cJSON_Print(arr);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(arr);
    } else {
        print_table(list, n, selected);
    }
    free(list);
    return 0;
}
