/* tiletrain devices: every device of every backend (OpenCL, Vulkan), as a
 * table or JSON. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "backend/device_match.h"
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
           "Lists every device of every OpenCL platform, CPUs included, and every\n"
           "Vulkan device (Mesa's lavapipe is a CPU one): a table with the API of\n"
           "each, then each device's details.  The device marked * is the one a run\n"
           "with the same --device and --backend uses (auto: a GPU first, OpenCL\n"
           "before Vulkan).  An API that cannot be reached (no loader, no driver) is\n"
           "reported and the other is still listed.\n"
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

/* The devices of one API: the list, or why there is none. */
typedef struct api_list {
    const char *title, *name;
    tt_device_info *list;
    int n, selected;
    tt_status status;
} api_list;

static void print_summary(const api_list *apis, int count)
{
    printf("   %-7s %-3s %-4s %s\n", "API", "#", "type", "device");
    for (int a = 0; a < count; a++) {
        for (int i = 0; i < apis[a].n; i++) {
            const tt_device_info *d = &apis[a].list[i];
            printf(" %s %-7s %-3d %-4s %s\n", i == apis[a].selected ? "*" : " ", apis[a].title,
                   d->index, d->type, d->name);
        }
        if (apis[a].status)
            printf("   %-7s none: %s\n", apis[a].title, tt_status_message(apis[a].status));
    }
}

static void print_details(const api_list *api)
{
    char g[32], m[32], l[32];
    for (int i = 0; i < api->n; i++) {
        const tt_device_info *d = &api->list[i];
        printf("\n%s[%s %d] %s\n", i == api->selected ? "*" : " ", api->title, d->index, d->name);
        printf("    platform        %s (%s)\n", d->platform, d->platform_version);
        printf("    vendor          %s\n", d->vendor);
        printf("    driver          %s\n", d->driver_version);
        printf("    type            %s%s, %d compute units\n", d->type,
               d->integrated ? " (integrated: shares the host's memory)" : "", d->compute_units);
        printf("    global memory   %s\n", tt_format_bytes(d->global_mem_bytes, g, sizeof g));
        printf("    max allocation  %s\n", tt_format_bytes(d->max_alloc_bytes, m, sizeof m));
        printf("    local memory    %s\n", tt_format_bytes(d->local_mem_bytes, l, sizeof l));
        printf("    base alignment  %u bytes\n", d->base_align_bytes);
        printf("    fp16 / fp64     %s / %s\n", d->fp16 ? "yes" : "no", d->fp64 ? "yes" : "no");
        if (d->opencl_c_version[0]) printf("    OpenCL C        %s\n", d->opencl_c_version);
    }
}

int tt_cmd_devices(int argc, char **argv)
{
    devices_options o = {.backend = "all"};
    int rc = tt_cli_parse("devices", option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    api_list apis[2] = {{"OpenCL", "opencl", NULL, 0, -1, NULL},
                        {"Vulkan", "vulkan", NULL, 0, -1, NULL}};
    const tt_backend_kind kinds[2] = {TT_BACKEND_OPENCL, TT_BACKEND_VULKAN};
    int shown[2] = {strcmp(o.backend, "vulkan") != 0, strcmp(o.backend, "opencl") != 0};
    int listed = 0;
    for (int a = 0; a < 2; a++) {
        if (!shown[a]) continue;
        apis[a].status = tt_backend_devices(kinds[a], &apis[a].list, &apis[a].n);
        listed += apis[a].status == NULL;
    }
    /* the mark: the device a run with these settings would open */
    tt_backend_request run = {0};
    tt_status choice = tt_backend_choose(strcmp(o.backend, "all") ? o.backend : "auto",
                                         o.device[0] ? o.device : NULL, &run);
    int chosen = run.kind == TT_BACKEND_VULKAN;
    if (!choice && shown[chosen] && !apis[chosen].status)
        apis[chosen].selected = tt_device_match(apis[chosen].list, apis[chosen].n, run.device, 0);
    tt_status failure = NULL;
    if (!listed) { /* no API answered: that is the answer */
        failure = apis[shown[0] ? 0 : 1].status;
        apis[shown[0] ? 0 : 1].status = NULL;
    } else if (o.device[0] && choice) {
        failure = choice; /* a selector that names nothing is an error */
        choice = NULL;
    }
    if (!failure && o.json) {
        cJSON *arr = cJSON_CreateArray();
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < apis[a].n; i++)
                cJSON_AddItemToArray(arr, device_json(&apis[a].list[i], apis[a].name,
                                                      i == apis[a].selected));
        char *text = cJSON_Print(arr);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(arr);
    } else if (!failure) {
        api_list shown_apis[2];
        int k = 0;
        for (int a = 0; a < 2; a++)
            if (shown[a]) shown_apis[k++] = apis[a];
        print_summary(shown_apis, k);
        for (int a = 0; a < k; a++) print_details(&shown_apis[a]);
        int marked = apis[0].selected >= 0 || apis[1].selected >= 0;
        if (marked) printf("\n(* = the device tiletrain uses with these settings)\n");
    }
    tt_status_free(choice);
    for (int a = 0; a < 2; a++) {
        tt_status_free(apis[a].status);
        free(apis[a].list);
    }
    return failure ? tt_cli_fail(failure) : 0;
}
