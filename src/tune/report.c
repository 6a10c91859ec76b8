/* `tiletrain tune --json`'s report: written by a search round, read back
 * by the parent that runs the rounds; see report.h. */
#include "tune/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

double tt_tune_gflops(const tt_gemm_shape *g, double secs)
{
    return secs > 0 && isfinite(secs) ? tt_gemm_shape_gflop(g) / secs : 0;
}

double tt_tune_step_gflops(const tt_gemm_shape *shapes, int count, const double *secs)
{
    double gflop = 0, total = 0;
    for (int s = 0; s < count; s++) {
        if (!(secs[s] > 0)) return 0;
        gflop += shapes[s].count * tt_gemm_shape_gflop(&shapes[s]);
        total += shapes[s].count * secs[s];
    }
    return gflop / total;
}

cJSON *tt_tune_report_json(const tt_device_info *device, const tt_gemm_shape *shapes, int count,
                           const tt_cl_tune_result *r, const double *blas, const char *saved)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", device->name);
    cJSON_AddStringToObject(root, "platform_version", device->platform_version);
    cJSON_AddStringToObject(root, "driver_version", device->driver_version);
    cJSON_AddNumberToObject(root, "candidates", r->candidates);
    cJSON_AddNumberToObject(root, "rejected", r->rejected);
    cJSON_AddNumberToObject(root, "elapsed_s", r->elapsed_s);
    cJSON_AddNumberToObject(root, "gflops_before", tt_tune_step_gflops(shapes, count, r->before_s));
    cJSON_AddNumberToObject(root, "gflops_after", tt_tune_step_gflops(shapes, count, r->after_s));
    if (blas)
        cJSON_AddNumberToObject(root, "gflops_openblas", tt_tune_step_gflops(shapes, count, blas));
    if (saved) cJSON_AddStringToObject(root, "saved", saved);
    else cJSON_AddNullToObject(root, "saved");
    cJSON *params = cJSON_AddObjectToObject(root, "parameters");
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++) {
        const tt_clblast_kernel_desc *d = &tt_clblast_kernels[k];
        cJSON *o = cJSON_AddObjectToObject(params, d->name);
        for (int i = 0; i < d->count; i++)
            cJSON_AddNumberToObject(o, d->params[i], (double)r->best.values[k][i]);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "shapes");
    for (int s = 0; s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "label", g->label);
        cJSON_AddStringToObject(o, "trans_a", g->trans_a ? "T" : "N");
        cJSON_AddStringToObject(o, "trans_b", g->trans_b ? "T" : "N");
        cJSON_AddNumberToObject(o, "m", (double)g->m);
        cJSON_AddNumberToObject(o, "n", (double)g->n);
        cJSON_AddNumberToObject(o, "k", (double)g->k);
        cJSON_AddNumberToObject(o, "count", g->count);
        cJSON_AddNumberToObject(o, "gflops_before", tt_tune_gflops(g, r->before_s[s]));
        cJSON_AddNumberToObject(o, "gflops_after", tt_tune_gflops(g, r->after_s[s]));
        if (blas) cJSON_AddNumberToObject(o, "gflops_openblas", tt_tune_gflops(g, blas[s]));
        cJSON_AddStringToObject(o, "kernel", r->direct[s] ? "direct" : "indirect");
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

tt_status tt_tune_report_read(const cJSON *report, const tt_gemm_shape *shapes, int count,
                              tt_cl_tune_result *r)
{
    memset(r, 0, sizeof *r);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(report, "shapes");
    if (cJSON_GetArraySize(arr) != count)
        return tt_error_new(TT_ERR_FORMAT, "tune: a round reported %d shapes, not %d",
                            cJSON_GetArraySize(arr), count);
    r->before_s = tt_calloc((size_t)count, sizeof *r->before_s);
    r->after_s = tt_calloc((size_t)count, sizeof *r->after_s);
    r->direct = tt_calloc((size_t)count, sizeof *r->direct);
    if (!r->before_s || !r->after_s || !r->direct) {
        tt_cl_tune_result_free(r);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    }
    for (int s = 0; s < count; s++) {
        const cJSON *o = cJSON_GetArrayItem(arr, s);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "gflops_before");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "gflops_after");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kernel");
        double g = tt_gemm_shape_gflop(&shapes[s]);
        r->before_s[s] = cJSON_IsNumber(b) && b->valuedouble > 0 ? g / b->valuedouble : 0;
        r->after_s[s] = cJSON_IsNumber(a) && a->valuedouble > 0 ? g / a->valuedouble : 0;
        r->direct[s] = cJSON_IsString(k) && strcmp(k->valuestring, "direct") == 0;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(report, "parameters");
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++) {
        const tt_clblast_kernel_desc *d = &tt_clblast_kernels[k];
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(params, d->name);
        for (int i = 0; i < d->count; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, d->params[i]);
            r->best.values[k][i] = cJSON_IsNumber(v) ? (size_t)v->valuedouble : 0;
        }
    }
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(report, "gflops_before");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(report, "gflops_after");
    r->best.gflops_before = cJSON_IsNumber(b) ? b->valuedouble : 0;
    r->best.gflops_after = cJSON_IsNumber(a) ? a->valuedouble : 0;
    return NULL;
}
