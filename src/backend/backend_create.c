/* The backend factory: tt_backend_create() and the names of the kinds
 * (see backend.h).  The one file that knows every concrete backend; they
 * in turn use only backend.c's generic half, so no loop runs between them. */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_internal.h"
#include "backend/device_match.h"
#include "core/knobs.h"
#include "core/status.h"

static const char *const kind_names[] = {"opencl", "dry", "vulkan"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == TT_BACKEND_KIND_COUNT,
               "every tt_backend_kind needs a name");

const char *tt_backend_kind_name(tt_backend_kind kind)
{
    return (unsigned)kind < TT_BACKEND_KIND_COUNT ? kind_names[kind] : "unknown";
}

tt_status tt_backend_kind_parse(const char *name, tt_backend_kind *out)
{
    char known[128] = "";
    for (int k = 0; k < TT_BACKEND_KIND_COUNT; k++) {
        if (name && strcasecmp(name, kind_names[k]) == 0) {
            *out = (tt_backend_kind)k;
            return NULL;
        }
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "", kind_names[k]);
    }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown backend '%s': the backends are %s",
                        name ? name : "(none)", known);
}

/* The dry backend's model device when the request names none: the one the
 * selector picks, described without opening it. */
static tt_status create_dry(const tt_backend_request *request, tt_backend **out)
{
    if (request->like)
        return tt_dry_backend_create(request->like, request->record, request->record_ctx, out);
    tt_device_info *devices = NULL;
    int count = 0, index = -1;
    tt_status status = NULL;
    TT_CHECK(tt_devices_list(&devices, &count));
    TT_CHECK(tt_device_select(request->device, &index));
    TT_CHECK(tt_dry_backend_create(&devices[index], request->record, request->record_ctx, out));
cleanup:
    free(devices);
    return status;
}

static tt_status create(const tt_backend_request *request, tt_backend **out)
{
    switch (request->kind) {
    case TT_BACKEND_OPENCL:
        return tt_opencl_backend_create(request->device, request->profiling, out);
    case TT_BACKEND_DRY:
        if (request->profiling)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "the dry backend runs nothing, so it cannot profile; "
                                "ask for the opencl or the vulkan backend");
        return create_dry(request, out);
    case TT_BACKEND_VULKAN:
        return tt_vulkan_backend_create(request->device, request->profiling, out);
    case TT_BACKEND_KIND_COUNT: break;
    }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown backend kind %d", (int)request->kind);
}

tt_status tt_backend_create(const tt_backend_request *request, tt_backend **out)
{
    *out = NULL;
    if (request->kind == TT_BACKEND_DRY &&
        (request->stands_for < 0 || request->stands_for >= TT_BACKEND_KIND_COUNT ||
         request->stands_for == TT_BACKEND_DRY))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "a dry backend stands in for opencl or "
                            "vulkan, not for kind %d", request->stands_for);
    TT_TRY(create(request, out));
    (*out)->kernels_of = request->kind == TT_BACKEND_DRY ? request->stands_for : (int)request->kind;
    (*out)->conv_log = request->conv_log;
    return NULL;
}

tt_status tt_backend_devices(tt_backend_kind kind, tt_device_info **devices, int *count)
{
    *devices = NULL;
    *count = 0;
    switch (kind) {
    case TT_BACKEND_OPENCL: return tt_devices_list(devices, count);
    case TT_BACKEND_VULKAN: return tt_vulkan_devices_list(devices, count);
    case TT_BACKEND_DRY:
    case TT_BACKEND_KIND_COUNT: break;
    }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "the %s backend has no devices of its own",
                        tt_backend_kind_name(kind));
}

/* The devices of one kind, or none when its API cannot be reached (no
 * loader, no driver, a build without it): auto moves on to the other. */
static void devices_or_none(tt_backend_kind kind, tt_device_info **list, int *n)
{
    tt_status s = tt_backend_devices(kind, list, n);
    if (s) {
        tt_status_free(s);
        *list = NULL;
        *n = 0;
    }
}


tt_status tt_backend_choose(const char *backend, const char *device, tt_backend_request *out)
{
    out->device = device;
    if (backend && *backend && strcasecmp(backend, "auto") != 0) {
        TT_TRY(tt_backend_kind_parse(backend, &out->kind));
        if (out->kind == TT_BACKEND_DRY)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "a run needs a device: the backends "
                                "are auto, opencl and vulkan");
        return NULL;
    }
    const char *from = "--device";
    if (!device || !*device) device = tt_knob_str(TT_KNOB_DEVICE), from = "TT_DEVICE";
    tt_device_info *cl = NULL, *vk = NULL;
    int ncl = 0, nvk = 0;
    devices_or_none(TT_BACKEND_OPENCL, &cl, &ncl);
    devices_or_none(TT_BACKEND_VULKAN, &vk, &nvk);
    tt_status status = NULL;
    int kind = -1;
    if (device && *device) { /* the OpenCL devices first, as before Vulkan came */
        if (tt_device_match(cl, ncl, device, 0) >= 0) kind = TT_BACKEND_OPENCL;
        else if (tt_device_match(vk, nvk, device, 0) >= 0) kind = TT_BACKEND_VULKAN;
        out->device = device;
    } else if (tt_device_default_better(vk, nvk, cl, ncl)) { /* a tie: OpenCL, as before Vulkan came */
        kind = TT_BACKEND_VULKAN;
    } else if (ncl > 0) {
        kind = TT_BACKEND_OPENCL;
    }
    if (kind >= 0) out->kind = (tt_backend_kind)kind;
    else if (device && *device)
        status = tt_error_new(TT_ERR_NO_DEVICE,
                              "%s '%s' matches no OpenCL device (%d) and no Vulkan device (%d); "
                              "`tiletrain devices` lists them: give an index or part of a name, "
                              "with --backend opencl or vulkan to say whose",
                              from, device, ncl, nvk);
    else
        status = tt_error_new(TT_ERR_NO_DEVICE,
                              "no OpenCL or Vulkan device was found; install a driver (PoCL for "
                              "the CPU: pocl-opencl-icd, or lavapipe: mesa-vulkan-drivers) and "
                              "check with `tiletrain devices`");
    free(cl);
    free(vk);
    return status;
}

tt_status tt_backend_spread(tt_backend_request *out, int local_rank, char *spec, size_t size)
{
    tt_device_info *list = NULL;
    int n = 0;
    TT_TRY(tt_backend_devices(out->kind, &list, &n));
    int gpus = 0;
    for (int i = 0; i < n; i++) gpus += strcmp(list[i].type, "GPU") == 0;
    int want = local_rank % (gpus ? gpus : (n ? n : 1)), index = -1;
    for (int i = 0, seen = 0; i < n && index < 0; i++)
        if (!gpus || strcmp(list[i].type, "GPU") == 0) {
            if (seen == want) index = i;
            seen++;
        }
    free(list);
    if (index < 0)
        return tt_error_new(TT_ERR_NO_DEVICE, "no %s device for rank %d on this machine; "
                            "`tiletrain devices` lists them", tt_backend_kind_name(out->kind),
                            local_rank);
    snprintf(spec, size, "%d", index);
    out->device = spec;
    return NULL;
}
