/*
 * CLBlast tuning files: CLBlast's parameter names and constraints, the
 * per-device JSON file in the cache folder (atomic writes, strict reads),
 * and applying it through CLBlastOverrideParameters.  The search that
 * fills the file is in src/tune/search.c.
 */
#include "backend/opencl/cl_tuning.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <clblast_c.h>

#include "backend/opencl/cl_internal.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/knobs.h"
#include "core/status.h"

#define FORMAT_NAME "tiletrain-clblast-tuning"
#define FORMAT_VERSION 1

const tt_clblast_kernel_desc tt_clblast_kernels[TT_CLBLAST_KERNEL_COUNT] = {
    [TT_CLBLAST_XGEMM] = {"Xgemm", 16,
                          {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
                           "NDIMC", "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"}},
    [TT_CLBLAST_XGEMM_DIRECT] = {"XgemmDirect", 10,
                                 {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB",
                                  "VWMD", "VWND", "WGD"}},
    [TT_CLBLAST_GEMM_ROUTINE] = {"GemmRoutine", 1, {"XGEMM_MIN_INDIRECT_SIZE"}},
};

int tt_clblast_param_index(tt_clblast_kernel kernel, const char *param)
{
    const tt_clblast_kernel_desc *d = &tt_clblast_kernels[kernel];
    for (int i = 0; i < d->count; i++)
        if (strcmp(d->params[i], param) == 0) return i;
    return -1;
}

void tt_cl_tuning_set_device(tt_cl_tuning *t, const tt_device_info *device)
{
    snprintf(t->device, sizeof t->device, "%s", device->name);
    snprintf(t->driver_version, sizeof t->driver_version, "%s", device->driver_version);
    snprintf(t->platform_version, sizeof t->platform_version, "%s", device->platform_version);
}

/* ---- constraints (CLBlast's tuners, src/tuning/kernels/xgemm*.hpp) ------- */

static int is_vector_width(size_t v) { return v == 1 || v == 2 || v == 4 || v == 8 || v == 16; }
static int is_flag(size_t v) { return v == 0 || v == 1; }
static int divides(size_t a, size_t b) { return a != 0 && b % a == 0; } /* a | b */

#define RULE(cond, ...)                                                        \
    do {                                                                       \
        if (!(cond)) return tt_error_new(TT_ERR_INVALID_ARGUMENT, __VA_ARGS__);\
    } while (0)

static tt_status check_xgemm(const size_t *v, const tt_device_info *dev)
{
    size_t gemmk = v[0], kreg = v[1], kwg = v[2], kwi = v[3], mdima = v[4], mdimc = v[5];
    size_t mwg = v[6], ndimb = v[7], ndimc = v[8], nwg = v[9], sa = v[10], sb = v[11];
    size_t strm = v[12], strn = v[13], vwm = v[14], vwn = v[15];
    RULE(is_flag(gemmk) && is_flag(sa) && is_flag(sb) && is_flag(strm) && is_flag(strn),
         "Xgemm: GEMMK, SA, SB, STRM, STRN must be 0 or 1");
    RULE(is_vector_width(vwm) && is_vector_width(vwn), "Xgemm: VWM and VWN must be 1, 2, 4, 8 or 16");
    RULE(mwg >= 1 && nwg >= 1 && kwg >= 1 && mwg <= 512 && nwg <= 512 && kwg <= 512,
         "Xgemm: MWG, NWG, KWG must be in 1..512");
    RULE(mdimc >= 1 && ndimc >= 1 && mdima >= 1 && ndimb >= 1 && kreg >= 1 && kreg <= 64,
         "Xgemm: MDIMC, NDIMC, MDIMA, NDIMB, KREG must be positive");
    RULE(divides(kwi, kwg), "Xgemm: KWG must be a multiple of KWI");
    RULE(divides(mdimc * vwm, mwg), "Xgemm: MWG must be a multiple of MDIMC*VWM");
    RULE(divides(ndimc * vwn, nwg), "Xgemm: NWG must be a multiple of NDIMC*VWN");
    RULE(divides(mdima * vwm, mwg), "Xgemm: MWG must be a multiple of MDIMA*VWM");
    RULE(divides(ndimb * vwn, nwg), "Xgemm: NWG must be a multiple of NDIMB*VWN");
    if (gemmk == 0) {
        RULE(divides(mdima, mdimc * ndimc) && divides(ndimb, mdimc * ndimc),
             "Xgemm: MDIMA and NDIMB must divide MDIMC*NDIMC");
        RULE(divides(mdimc * ndimc / mdima, kwg) && divides(mdimc * ndimc / ndimb, kwg),
             "Xgemm: KWG must be a multiple of MDIMC*NDIMC/MDIMA and of MDIMC*NDIMC/NDIMB");
        RULE(kreg == 1, "Xgemm: KREG must be 1 with GEMMK=0");
    } else {
        RULE(mdima == mdimc && ndimb == ndimc, "Xgemm: GEMMK=1 needs MDIMA=MDIMC and NDIMB=NDIMC");
        RULE(sa == 0 && sb == 0 && strm == 0 && strn == 0 && kwg == 1 && kwi == 1,
             "Xgemm: GEMMK=1 needs SA=SB=STRM=STRN=0 and KWG=KWI=1");
        RULE(divides(vwn, kreg), "Xgemm: KREG must be a multiple of VWN");
        /* Not among CLBlast's tuner constraints, but on PoCL 3.1 every
         * GEMMK=1 configuration with more rows than columns per work-item
         * (MWG/MDIMC > NWG/NDIMC) tried so far computed wrong results, and
         * each process that ran one crashed soon after ("double free or
         * corruption"; PoCL's buffers live in the host heap); every one
         * with MWI = NWI was right.  (A search without them still crashed,
         * after 26 configurations instead of 6 to 15.) */
        RULE(mwg / mdimc == nwg / ndimc,
             "Xgemm: GEMMK=1 needs MWG/MDIMC = NWG/NDIMC (MWI = NWI; others computed wrong "
             "results on PoCL)");
    }
    if (dev) {
        RULE(mdimc * ndimc <= dev->max_work_group_size,
             "Xgemm: MDIMC*NDIMC = %zu work-items exceeds the device's work-group limit %zu",
             mdimc * ndimc, dev->max_work_group_size);
        size_t local = sizeof(float) * (sa * kwg * mwg + sb * kwg * nwg);
        RULE(local <= dev->local_mem_bytes, "Xgemm: %zu bytes of local memory exceed the device's %llu",
             local, (unsigned long long)dev->local_mem_bytes);
    }
    return NULL;
}

static tt_status check_direct(const size_t *v, const tt_device_info *dev)
{
    size_t kwid = v[0], mdimad = v[1], mdimcd = v[2], ndimbd = v[3], ndimcd = v[4];
    size_t pada = v[5], padb = v[6], vwmd = v[7], vwnd = v[8], wgd = v[9];
    RULE(is_flag(pada) && is_flag(padb), "XgemmDirect: PADA and PADB must be 0 or 1");
    RULE(is_vector_width(vwmd) && is_vector_width(vwnd),
         "XgemmDirect: VWMD and VWND must be 1, 2, 4, 8 or 16");
    RULE(wgd >= 1 && wgd <= 256 && mdimad >= 1 && mdimcd >= 1 && ndimbd >= 1 && ndimcd >= 1,
         "XgemmDirect: WGD must be in 1..256 and the thread dimensions positive");
    RULE(divides(kwid, wgd), "XgemmDirect: WGD must be a multiple of KWID");
    RULE(divides(mdimcd * vwmd, wgd) && divides(ndimcd * vwnd, wgd),
         "XgemmDirect: WGD must be a multiple of MDIMCD*VWMD and NDIMCD*VWND");
    RULE(divides(mdimad * vwmd, wgd) && divides(ndimbd * vwnd, wgd),
         "XgemmDirect: WGD must be a multiple of MDIMAD*VWMD and NDIMBD*VWND");
    RULE(divides(mdimad, mdimcd * ndimcd) && divides(ndimbd, mdimcd * ndimcd),
         "XgemmDirect: MDIMAD and NDIMBD must divide MDIMCD*NDIMCD");
    RULE(divides(mdimcd * ndimcd / mdimad, wgd) && divides(mdimcd * ndimcd / ndimbd, wgd),
         "XgemmDirect: WGD must be a multiple of MDIMCD*NDIMCD/MDIMAD and /NDIMBD");
    if (dev) {
        RULE(mdimcd * ndimcd <= dev->max_work_group_size,
             "XgemmDirect: %zu work-items exceed the device's work-group limit %zu",
             mdimcd * ndimcd, dev->max_work_group_size);
        size_t local = sizeof(float) * (wgd * (wgd + pada) + wgd * (wgd + padb));
        RULE(local <= dev->local_mem_bytes,
             "XgemmDirect: %zu bytes of local memory exceed the device's %llu", local,
             (unsigned long long)dev->local_mem_bytes);
    }
    return NULL;
}

tt_status tt_cl_tuning_check_kernel(tt_clblast_kernel kernel, const size_t *values,
                                    const tt_device_info *device)
{
    switch (kernel) {
    case TT_CLBLAST_XGEMM: return check_xgemm(values, device);
    case TT_CLBLAST_XGEMM_DIRECT: return check_direct(values, device);
    case TT_CLBLAST_GEMM_ROUTINE:
        RULE(values[0] <= (1u << 20), "GemmRoutine: XGEMM_MIN_INDIRECT_SIZE above 2^20");
        return NULL;
    default: break;
    }
    return tt_error_new(TT_ERR_INTERNAL, "unknown CLBlast kernel %d", (int)kernel);
}
#undef RULE

tt_status tt_cl_tuning_check(const tt_cl_tuning *t, const tt_device_info *device)
{
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++)
        TT_TRY(tt_cl_tuning_check_kernel((tt_clblast_kernel)k, t->values[k], device));
    return NULL;
}

/* ---- the file ----------------------------------------------------------- */

int tt_cl_tuning_path(const tt_device_info *device, char *path, size_t size)
{
    char folder[1024];
    tt_status status = tt_cache_path("clblast", folder, sizeof folder);
    if (status) {
        tt_status_free(status);
        path[0] = '\0';
        return 0;
    }
    snprintf(path, size, "%s/clblast-%016llx.json", folder,
             (unsigned long long)tt_device_key(device));
    return 1;
}

tt_status tt_cl_tuning_save(const char *path, const tt_cl_tuning *t)
{
    tt_status status = NULL;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject(), *kernels = NULL;
    if (!root) goto oom;
    cJSON_AddStringToObject(root, "format", FORMAT_NAME);
    cJSON_AddNumberToObject(root, "version", FORMAT_VERSION);
    cJSON_AddStringToObject(root, "device", t->device);
    cJSON_AddStringToObject(root, "driver_version", t->driver_version);
    cJSON_AddStringToObject(root, "platform_version", t->platform_version);
    cJSON_AddStringToObject(root, "precision", "single");
    cJSON_AddNumberToObject(root, "gflops_before", t->gflops_before);
    cJSON_AddNumberToObject(root, "gflops_after", t->gflops_after);
    kernels = cJSON_AddObjectToObject(root, "kernels");
    if (!kernels) goto oom;
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++) {
        const tt_clblast_kernel_desc *d = &tt_clblast_kernels[k];
        cJSON *o = cJSON_AddObjectToObject(kernels, d->name);
        if (!o) goto oom;
        for (int i = 0; i < d->count; i++)
            cJSON_AddNumberToObject(o, d->params[i], (double)t->values[k][i]);
    }
    text = cJSON_Print(root);
    if (!text) goto oom;

    tt_status_free(tt_make_parent_dirs(path)); /* a failure shows as the write's error below */
    size_t length = strlen(text);
    text[length] = '\n'; /* the file ends with a newline, not a NUL */
    status = tt_file_save_atomic(path, text, length + 1);
    if (status) tt_error_prefix(status, "cannot write the tuning file '%s'", path);
    goto cleanup;
oom:
    status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "writing the tuning file '%s': out of host memory",
                          path);
cleanup:
    cJSON_free(text);
    cJSON_Delete(root);
    return status;
}

static tt_status read_text(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tt_error_new(TT_ERR_IO, "cannot open the tuning file '%s': %s", path, strerror(errno));
    tt_status status = tt_read_fault("the tuning file", path);
    char *buf = NULL;
    long len = -1;
    if (status) goto cleanup;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len < 0 || len > (1 << 20) || fseek(f, 0, SEEK_SET) != 0) {
        status = tt_error_new(TT_ERR_FORMAT, "tuning file '%s': unreadable or larger than 1 MiB", path);
        goto cleanup;
    }
    buf = tt_malloc((size_t)len + 1);
    if (!buf) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading '%s': out of host memory", path);
        goto cleanup;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        status = tt_error_new(TT_ERR_IO, "cannot read the tuning file '%s': %s", path,
                              strerror(errno));
        goto cleanup;
    }
    buf[len] = '\0';
    *out = buf;
    buf = NULL;
cleanup:
    free(buf);
    fclose(f);
    return status;
}

static tt_status get_string(const cJSON *root, const char *path, const char *key, char *dst,
                            size_t size)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsString(item) || strlen(item->valuestring) >= size)
        return tt_error_new(TT_ERR_FORMAT, "tuning file '%s': \"%s\" is missing or not a string",
                            path, key);
    snprintf(dst, size, "%s", item->valuestring);
    return NULL;
}

static tt_status parse(const char *path, const cJSON *root, tt_cl_tuning *t)
{
    if (!cJSON_IsObject(root))
        return tt_error_new(TT_ERR_FORMAT, "tuning file '%s' is not a JSON object; delete it and "
                            "run `tiletrain tune`", path);
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, FORMAT_NAME) != 0)
        return tt_error_new(TT_ERR_FORMAT, "'%s' is not a tiletrain CLBlast tuning file", path);
    if (!cJSON_IsNumber(version) || version->valuedouble != FORMAT_VERSION)
        return tt_error_new(TT_ERR_FORMAT,
                            "tuning file '%s': version is not %d; rerun `tiletrain tune`", path,
                            FORMAT_VERSION);
    TT_TRY(get_string(root, path, "device", t->device, sizeof t->device));
    TT_TRY(get_string(root, path, "driver_version", t->driver_version, sizeof t->driver_version));
    TT_TRY(get_string(root, path, "platform_version", t->platform_version, sizeof t->platform_version));
    const cJSON *before = cJSON_GetObjectItemCaseSensitive(root, "gflops_before");
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(root, "gflops_after");
    t->gflops_before = cJSON_IsNumber(before) ? before->valuedouble : 0;
    t->gflops_after = cJSON_IsNumber(after) ? after->valuedouble : 0;
    const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (!cJSON_IsObject(kernels))
        return tt_error_new(TT_ERR_FORMAT, "tuning file '%s': \"kernels\" is missing", path);
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++) {
        const tt_clblast_kernel_desc *d = &tt_clblast_kernels[k];
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(kernels, d->name);
        if (!cJSON_IsObject(o) || cJSON_GetArraySize(o) != d->count)
            return tt_error_new(TT_ERR_FORMAT, "tuning file '%s': kernel \"%s\" is missing or does "
                                "not have its %d parameters", path, d->name, d->count);
        for (int i = 0; i < d->count; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, d->params[i]);
            if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 ||
                v->valuedouble != (double)(size_t)v->valuedouble)
                return tt_error_new(TT_ERR_FORMAT, "tuning file '%s': %s.%s is missing or not a "
                                    "non-negative integer", path, d->name, d->params[i]);
            t->values[k][i] = (size_t)v->valuedouble;
        }
    }
    return NULL;
}

tt_status tt_cl_tuning_load(const char *path, const tt_device_info *device, tt_cl_tuning *out)
{
    char *text = NULL;
    tt_cl_tuning t;
    memset(&t, 0, sizeof t);
    TT_TRY(read_text(path, &text));
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return tt_error_new(TT_ERR_FORMAT, "tuning file '%s' is not valid JSON; delete it and run "
                            "`tiletrain tune`", path);
    tt_status status = parse(path, root, &t);
    cJSON_Delete(root);
    if (status) return status;
    if (device && (strcmp(t.device, device->name) != 0 ||
                   strcmp(t.driver_version, device->driver_version) != 0 ||
                   strcmp(t.platform_version, device->platform_version) != 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "tuning file '%s' was written for '%s' (driver %s, %s), not for '%s' "
                            "(driver %s, %s); run `tiletrain tune` on this device",
                            path, t.device, t.driver_version, t.platform_version, device->name,
                            device->driver_version, device->platform_version);
    status = tt_cl_tuning_check(&t, device);
    if (status) return tt_error_prefix(status, "tuning file '%s'", path);
    *out = t;
    return NULL;
}

/* ---- applying ----------------------------------------------------------- */

tt_status tt_cl_tuning_apply(tt_backend *backend, const tt_cl_tuning *t)
{
    tt_cl_backend *cl = backend->impl;
    TT_TRY(tt_cl_tuning_check(t, &backend->device));
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++) {
        const tt_clblast_kernel_desc *d = &tt_clblast_kernels[k];
        CLBlastStatusCode code = CLBlastOverrideParameters(cl->device, d->name, CLBlastPrecisionSingle,
                                                           (size_t)d->count, (const char **)d->params,
                                                           t->values[k]);
        if (code != CLBlastSuccess)
            return tt_error_cl(code, "CLBlastOverrideParameters(%s) on '%s'", d->name,
                               backend->device.name);
    }
    return NULL;
}

int tt_cl_tuning_apply_cached(tt_backend *backend, FILE *warnings)
{
    if (tt_knob_set(TT_KNOB_NO_TUNING) && tt_knob_flag(TT_KNOB_NO_TUNING, 1)) return 0;
    char path[1200];
    if (!tt_cl_tuning_path(&backend->device, path, sizeof path) || access(path, F_OK) != 0) return 0;
    tt_cl_tuning t;
    tt_status status = tt_cl_tuning_load(path, &backend->device, &t);
    if (!status) status = tt_cl_tuning_apply(backend, &t);
    if (status) {
        if (warnings)
            fprintf(warnings, "tiletrain: warning: CLBlast tuning ignored: %s\n",
                    tt_status_message(status));
        tt_status_free(status);
        return 0;
    }
    return 1;
}
