/* Foundation: devices, selection, kernels, program cache, memory accounting. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/kernels_embedded.h"
#include "backend/opencl/cl_errors.h"
#include "core/fs.h"
#include "core/status.h"
#include "harness.h"
#include "ops/util.h"

static void test_enumeration(void)
{
    tt_device_info *list = NULL;
    int n = 0;
    TH_OK(tt_devices_list(&list, &n));
    CU_ASSERT_FATAL(n >= 1);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(list[i].index, i);
        CU_ASSERT(strlen(list[i].name) > 0);
        CU_ASSERT(list[i].global_mem_bytes > 0);
        CU_ASSERT(list[i].max_alloc_bytes > 0);
        CU_ASSERT(list[i].max_alloc_bytes <= list[i].global_mem_bytes);
        CU_ASSERT(list[i].compute_units > 0);
        CU_ASSERT(strncmp(list[i].opencl_c_version, "OpenCL C", 8) == 0);
    }
    free(list);
}

static void test_select_by_index_and_name(void)
{
    tt_device_info *list = NULL;
    int n = 0, index = -1;
    TH_OK(tt_devices_list(&list, &n));
    char spec[16];
    snprintf(spec, sizeof spec, "%d", n - 1);
    TH_OK(tt_device_select(spec, &index));
    CU_ASSERT_EQUAL(index, n - 1);

    /* a middle part of the last device's name, upper-cased: case-insensitive */
    char part[64];
    size_t len = strlen(list[n - 1].name);
    size_t take = len > 6 ? 6 : len;
    for (size_t i = 0; i < take; i++) part[i] = (char)toupper((unsigned char)list[n - 1].name[len - take + i]);
    part[take] = '\0';
    TH_OK(tt_device_select(part, &index));
    CU_ASSERT_STRING_EQUAL(list[index].name + len - take, list[n - 1].name + len - take);

    /* the environment variable stands in for a missing selector */
    th_setenv("TT_DEVICE", spec);
    TH_OK(tt_device_select(NULL, &index));
    CU_ASSERT_EQUAL(index, n - 1);
    th_setenv("TT_DEVICE", NULL);

    /* default: the first GPU, else the first device */
    TH_OK(tt_device_select(NULL, &index));
    int first_gpu = -1;
    for (int i = n - 1; i >= 0; i--)
        if (strcmp(list[i].type, "GPU") == 0) first_gpu = i;
    CU_ASSERT_EQUAL(index, first_gpu >= 0 ? first_gpu : 0);

    /* PoCL is found by the name of its platform */
    for (int i = 0; i < n; i++)
        if (strstr(list[i].platform_version, "PoCL")) {
            TH_OK(tt_device_select("pocl", &index));
            CU_ASSERT(strstr(list[index].platform_version, "PoCL") != NULL);
            break;
        }
    free(list);
}

static void test_bad_selector(void)
{
    int index = 7;
    tt_status s = tt_device_select("no-such-device-zz9", &index);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_NO_DEVICE);
    const char *msg = tt_status_message(s);
    CU_ASSERT(strstr(msg, "no-such-device-zz9") != NULL);
    CU_ASSERT(strstr(msg, "matches no OpenCL device") != NULL);
    tt_device_info *list = NULL;
    int n = 0;
    TH_OK(tt_devices_list(&list, &n));
    CU_ASSERT(strstr(msg, list[0].name) != NULL); /* it lists the devices */
    free(list);
    tt_status_free(s);

    s = tt_device_select("999", &index);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_NO_DEVICE);
    tt_status_free(s);

    tt_backend *be = NULL;
    s = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_OPENCL, .device = "no-such-device-zz9"}, &be);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_NO_DEVICE);
    CU_ASSERT_PTR_NULL(be);
    tt_status_free(s);
}

static void test_backend_factory(void)
{
    tt_backend_kind kind = TT_BACKEND_OPENCL;
    TH_OK(tt_backend_kind_parse("DRY", &kind));
    CU_ASSERT_EQUAL(kind, TT_BACKEND_DRY);
    CU_ASSERT_STRING_EQUAL(tt_backend_kind_name(TT_BACKEND_OPENCL), "opencl");
    tt_status s = tt_backend_kind_parse("cuda", &kind);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "opencl, dry") != NULL); /* it lists the kinds */
    tt_status_free(s);

    /* a dry backend with no model device behaves like the selected one */
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY}, &dry));
    CU_ASSERT_PTR_NOT_NULL_FATAL(dry);
    CU_ASSERT(dry->ops->runs_nothing);
    CU_ASSERT_STRING_EQUAL(dry->device.name, th_backend()->device.name);
    /* one device key: equal for the same device, changed by its driver */
    tt_device_info other = dry->device;
    CU_ASSERT_EQUAL(tt_device_key(&other), tt_device_key(&th_backend()->device));
    snprintf(other.driver_version, sizeof other.driver_version, "next driver");
    CU_ASSERT_NOT_EQUAL(tt_device_key(&other), tt_device_key(&th_backend()->device));
    tt_backend_destroy(dry);
    dry = (tt_backend *)0x1;
    s = tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .profiling = 1}, &dry);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(dry);
    tt_status_free(s);
}

static tt_status refuse_write(FILE *f, void *ctx)
{
    fputs("half a file", f);
    (void)ctx;
    return tt_error_new(TT_ERR_FORMAT, "refused");
}

/* Sets or (value NULL) unsets an environment variable, and reads the knobs again. */
static void set_env(const char *name, const char *value) { th_setenv(name, value); }

static void test_files_and_cache_folders(void)
{
    char path[256], buf[512];
    snprintf(path, sizeof path, "/tmp/tt-fs-%ld.txt", (long)getpid());
    TH_OK(tt_file_save_atomic(path, "old\n", 4));
    tt_status s = tt_file_write_atomic(path, refuse_write, NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT); /* the writer's own error */
    tt_status_free(s);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT(fgets(buf, sizeof buf, f) && strcmp(buf, "old\n") == 0); /* unchanged */
    fclose(f);
    snprintf(buf, sizeof buf, "%s.tmp.%ld.1", path, (long)getpid());
    CU_ASSERT(access(buf, F_OK) != 0); /* no temporary file stays */
    remove(path);
    s = tt_file_save_atomic("/no-such-folder-zz9/x", "x", 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(strstr(tt_status_message(s), "/no-such-folder-zz9/x.tmp.") != NULL);
    tt_status_free(s);

    const char *names[] = {"TT_CACHE_DIR", "TT_DATA_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *saved[4];
    for (int i = 0; i < 4; i++) saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    set_env("TT_CACHE_DIR", "/c"), set_env("TT_DATA_CACHE_DIR", NULL);
    set_env("XDG_CACHE_HOME", "/x"), set_env("HOME", "/h");
    TH_OK(tt_cache_path("programs", buf, sizeof buf));
    CU_ASSERT_STRING_EQUAL(buf, "/c");
    TH_OK(tt_cache_path("find-db", buf, sizeof buf));
    CU_ASSERT_STRING_EQUAL(buf, "/c/find-db");
    TH_OK(tt_cache_path("tiles", buf, sizeof buf));
    CU_ASSERT_STRING_EQUAL(buf, "/x/tiletrain/tiles");
    set_env("TT_CACHE_DIR", "");
    s = tt_cache_path("programs", buf, sizeof buf); /* set but empty: no program cache */
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT_STRING_EQUAL(buf, "");
    tt_status_free(s);
    TH_OK(tt_cache_path("clblast", buf, sizeof buf));
    CU_ASSERT_STRING_EQUAL(buf, "/x/tiletrain");
    set_env("XDG_CACHE_HOME", NULL);
    TH_OK(tt_cache_path("find-db", buf, sizeof buf));
    CU_ASSERT_STRING_EQUAL(buf, "/h/.cache/tiletrain/find-db");
    set_env("HOME", NULL);
    s = tt_cache_path("find-db", buf, sizeof buf);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    tt_status_free(s);
    for (int i = 0; i < 4; i++) set_env(names[i], saved[i]), free(saved[i]);
}

static void test_kernel_runs(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { N = 1031 }; /* not a multiple of any work-group size */
    float x[N], y[N];
    uint64_t seed = 1;
    th_fill_uniform(x, N, -1, 1, &seed);
    tt_buffer *bx = th_upload(x, N, "x");
    tt_buffer *by = th_zeros(N + 8, "y");
    /* offsets: y starts 8 floats into its buffer */
    tt_mem y8 = tt_mem_f32(tt_mem_of(by), 8);
    TH_OK(tt_fill(be, y8, 0.25f, N));
    TH_OK(tt_axpy(be, y8, tt_mem_of(bx), -2.0f, N));
    TH_OK(tt_scale(be, y8, 4.0f, N));
    TH_OK(tt_read(be, y, y8, sizeof y));
    float head[8];
    TH_OK(tt_read(be, head, tt_mem_of(by), sizeof head));
    int exact = 1;
    for (int i = 0; i < N; i++) exact &= y[i] == 4.0f * (0.25f + -2.0f * x[i]);
    CU_ASSERT(exact);
    for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL(head[i], 0.0f); /* untouched */
    tt_buffer_free(bx);
    tt_buffer_free(by);
}

static void test_gemm(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { M = 5, N = 7, K = 3 };
    float a[K * M], b[K * N], c[M * N];
    double want[M * N];
    uint64_t seed = 2;
    th_fill_uniform(a, K * M, -1, 1, &seed);
    th_fill_uniform(b, K * N, -1, 1, &seed);
    for (int i = 0; i < M * N; i++) c[i] = 0.5f;
    /* C = 2 * A^T B + C, A stored K x M */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[k * M + i] * b[k * N + j];
            want[i * N + j] = 2 * s + 0.5;
        }
    tt_buffer *ba = th_upload(a, K * M, "a"), *bb = th_upload(b, K * N, "b");
    tt_buffer *bc = th_upload(c, M * N, "c");
    tt_gemm g = {.trans_a = 1, .m = M, .n = N, .k = K, .alpha = 2, .beta = 1,
                 .a = tt_mem_of(ba), .lda = M, .b = tt_mem_of(bb), .ldb = N,
                 .c = tt_mem_of(bc), .ldc = N};
    TH_OK(tt_gemm_run(be, &g));
    th_download(c, bc, M * N);
    CU_ASSERT(th_max_rel_error(c, want, M * N, 1e-3) < 1e-5);
    tt_buffer_free(ba), tt_buffer_free(bb), tt_buffer_free(bc);
}

/* Whether `dir` ($TT_CACHE_DIR: program binaries at its top) holds one. */
static int holds_programs(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -q '[.]bin$'", dir);
    return system(cmd) == 0;
}

/* A new OpenCL backend (counting the programs it builds or loads) and a
 * buffer *b of 64 floats it filled with `value`, read back. */
static tt_backend *filled_backend(float value, tt_buffer **b)
{
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_OPENCL}, &be));
    TH_OK(tt_buffer_alloc(be, 64 * sizeof(float), TT_MEM_OTHER, "cache.x", b));
    TH_OK(tt_fill(be, tt_mem_of(*b), value, 64));
    float h[64];
    TH_OK(tt_read(be, h, tt_mem_of(*b), sizeof h));
    CU_ASSERT_EQUAL(h[63], value);
    return be;
}

/* A fresh cache folder: first backend builds, second loads from disk, a
 * third that cannot read the binary builds it again; with PoCL's own
 * kernel cache on, ours keeps the binary only as the backend ends (asking
 * PoCL for it compiles every kernel of the program: not before a first
 * step), and the next backend loads it rather than running clang again. */
static void test_program_cache(void)
{
    char dir[] = "/tmp/tt-cache-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const char *old = getenv("TT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    th_setenv("TT_CACHE_DIR", dir);

    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_OPENCL}, &be));
    int pocl = strstr(be->device.platform, "Portable Computing Language") != NULL;
    tt_buffer *b = NULL;
    if (pocl) {
        TH_OK(tt_buffer_alloc(be, 64 * sizeof(float), TT_MEM_OTHER, "cache.x", &b));
        TH_OK(tt_fill(be, tt_mem_of(b), 1.0f, 64));
        CU_ASSERT_EQUAL(be->programs.built_from_source, 1);
        CU_ASSERT_EQUAL(be->programs.to_keep, 1);
        CU_ASSERT_FALSE(holds_programs(dir));
        tt_buffer_free(b);
    }
    tt_backend_destroy(be);
    if (pocl) {
        CU_ASSERT_TRUE(holds_programs(dir));
        be = filled_backend(1.5f, &b);
        CU_ASSERT_EQUAL(be->programs.built_from_source, 0);
        CU_ASSERT_EQUAL(be->programs.loaded_from_disk, 1);
        CU_ASSERT_EQUAL(be->programs.to_keep, 0);
        tt_buffer_free(b);
        tt_backend_destroy(be);
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -f '%s'/*.bin", dir);
        CU_ASSERT_EQUAL(system(cmd), 0);
    }
    /* PoCL's cache off (read as each backend is made): ours is used */
    const char *pocl_old = getenv("POCL_KERNEL_CACHE");
    char *pocl_saved = pocl_old ? strdup(pocl_old) : NULL;
    th_setenv("POCL_KERNEL_CACHE", "0");

    be = filled_backend(1.0f, &b);
    CU_ASSERT_EQUAL(be->programs.built_from_source, 1);
    CU_ASSERT_EQUAL(be->programs.loaded_from_disk, 0);
    TH_OK(tt_fill(be, tt_mem_of(b), 2.0f, 64)); /* same kernel: memory hit */
    TH_OK(tt_scale(be, tt_mem_of(b), 2.0f, 64)); /* same program: memory hit */
    CU_ASSERT_EQUAL(be->programs.built_from_source, 1);
    CU_ASSERT_EQUAL(be->programs.memory_hits, 2);
    /* other options are another program */
    size_t n = 64;
    TH_OK(tt_launch_kernel(be, "util", "fill", "-DTT_TEST_OPTION=1", 1, &n, NULL,
                           TT_ARGS(tt_arg_mem(tt_mem_of(b)), tt_arg_f32(3.0f), tt_arg_i32(64))));
    CU_ASSERT_EQUAL(be->programs.built_from_source, 2);
    tt_buffer_free(b);
    tt_backend_destroy(be);

    be = filled_backend(5.0f, &b);
    CU_ASSERT_EQUAL(be->programs.built_from_source, 0);
    CU_ASSERT_EQUAL(be->programs.loaded_from_disk, 1);
    CU_ASSERT_TRUE(holds_programs(dir));
    tt_buffer_free(b);
    tt_backend_destroy(be);

    /* the binary there cannot be read (EIO: TT_FAULT=read:1, this
     * process's first file read): as a miss, built from source to the same
     * result, and written whole again for the next backend */
    th_setenv("TT_FAULT", "read:1");
    be = filled_backend(6.0f, &b);
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_EQUAL(be->programs.built_from_source, 1);
    CU_ASSERT_EQUAL(be->programs.loaded_from_disk, 0);
    tt_buffer_free(b);
    tt_backend_destroy(be);
    be = filled_backend(7.0f, &b);
    CU_ASSERT_EQUAL(be->programs.loaded_from_disk, 1);
    tt_buffer_free(b);
    tt_backend_destroy(be);

    th_setenv("POCL_KERNEL_CACHE", pocl_saved);
    free(pocl_saved);
    if (saved) th_setenv("TT_CACHE_DIR", saved);
    else th_setenv("TT_CACHE_DIR", NULL);
    free(saved);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void write_text(const char *path, const char *text, size_t size)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(text, 1, size, f), size);
    fclose(f);
}

/* TT_KERNEL_DIR loads sources from disk; a broken one returns its build log. */
static void test_kernel_dir_and_build_errors(void)
{
    char dir[] = "/tmp/tt-kernels-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[256];
    for (size_t i = 0; i < tt_embedded_kernel_count; i++)
        if (strcmp(tt_embedded_kernels[i].name, "common") == 0) {
            snprintf(path, sizeof path, "%s/common.cl", dir);
            write_text(path, (const char *)tt_embedded_kernels[i].data, tt_embedded_kernels[i].size);
        }
    const char *triple = "__kernel void triple(TT_MEM(float, x), const int n)\n"
                         "{ TT_PTR(float, x); int i = get_global_id(0); if (i < n) x[i] *= 3; }\n";
    snprintf(path, sizeof path, "%s/dev.cl", dir);
    write_text(path, triple, strlen(triple));
    const char *broken = "__kernel void oops(__global float *x) { x[0] = undefined_name; }\n";
    snprintf(path, sizeof path, "%s/broken.cl", dir);
    write_text(path, broken, strlen(broken));

    th_setenv("TT_KERNEL_DIR", dir);
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_OPENCL}, &be));
    tt_buffer *b = NULL;
    float h[3] = {1, 2, 3};
    TH_OK(tt_buffer_alloc(be, sizeof h, TT_MEM_OTHER, "dev.x", &b));
    TH_OK(tt_write(be, tt_mem_of(b), h, sizeof h));
    TH_OK(TT_LAUNCH_1D(be, "dev", "triple", 3, tt_arg_mem(tt_mem_of(b)), tt_arg_i32(3)));
    TH_OK(tt_read(be, h, tt_mem_of(b), sizeof h));
    CU_ASSERT(h[0] == 3 && h[1] == 6 && h[2] == 9);

    /* built ahead, it fails quietly; its launch builds it again and says why */
    tt_backend_prepare_begin(be);
    TH_OK(TT_LAUNCH_1D(be, "broken", "oops", 1, tt_arg_mem(tt_mem_of(b))));
    TH_OK(tt_backend_prepare_end(be));
    tt_status s = TT_LAUNCH_1D(be, "broken", "oops", 1, tt_arg_mem(tt_mem_of(b)));
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_BUILD);
    CU_ASSERT(strstr(tt_status_message(s), "broken.cl") != NULL);
    CU_ASSERT(strstr(tt_status_message(s), "CL_BUILD_PROGRAM_FAILURE") != NULL);
    CU_ASSERT(strstr(tt_status_detail(s), "undefined_name") != NULL);
    tt_status_free(s);

    s = TT_LAUNCH_1D(be, "missing", "k", 1, tt_arg_mem(tt_mem_of(b)));
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(strstr(tt_status_message(s), "missing.cl") != NULL);
    tt_status_free(s);
    tt_buffer_free(b);
    tt_backend_destroy(be);
    th_setenv("TT_KERNEL_DIR", NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_memory_accounting(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_memstats base = be->mem;
    tt_buffer *p = NULL, *g = NULL, *a1 = NULL, *a2 = NULL, *w = NULL;
    TH_OK(tt_buffer_alloc(be, 1000, TT_MEM_PARAMETERS, "params", &p));
    TH_OK(tt_buffer_alloc(be, 1000, TT_MEM_GRADIENTS, "grads", &g));
    TH_OK(tt_buffer_alloc(be, 4096, TT_MEM_ACTIVATIONS, "act1", &a1));
    TH_OK(tt_buffer_alloc(be, 8192, TT_MEM_ACTIVATIONS, "act2", &a2));
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_ACTIVATIONS] - base.current[TT_MEM_ACTIVATIONS], 12288);
    tt_buffer_free(a1);
    TH_OK(tt_buffer_alloc(be, 100, TT_MEM_WORKSPACE, "ws", &w));
    tt_buffer_free(a2);

    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_PARAMETERS] - base.current[TT_MEM_PARAMETERS], 1000);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_GRADIENTS] - base.current[TT_MEM_GRADIENTS], 1000);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_ACTIVATIONS], base.current[TT_MEM_ACTIVATIONS]);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE] - base.current[TT_MEM_WORKSPACE], 100);
    CU_ASSERT_EQUAL(be->mem.current_total - base.current_total, 2100);
    CU_ASSERT(be->mem.peak[TT_MEM_ACTIVATIONS] >= base.current[TT_MEM_ACTIVATIONS] + 12288);
    /* the total peak is the highest sum: params + grads + both activations */
    CU_ASSERT(be->mem.peak_total >= base.current_total + 14288);
    tt_memstats_reset_peaks(&be->mem);
    CU_ASSERT_EQUAL(be->mem.peak_total, be->mem.current_total);

    /* the largest live buffers, biggest first */
    const tt_mem_record *top[2];
    size_t n = tt_memstats_largest(&be->mem, top, 2);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(top[0]->bytes >= top[1]->bytes);

    /* the report as JSON has the figures */
    char *json = tt_memory_report_json(be, 4);
    cJSON *root = cJSON_Parse(json);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    cJSON *cats = cJSON_GetObjectItem(root, "categories");
    cJSON *params = cJSON_GetObjectItem(cats, "parameters");
    CU_ASSERT_EQUAL((uint64_t)cJSON_GetObjectItem(params, "current_bytes")->valuedouble,
                    be->mem.current[TT_MEM_PARAMETERS]);
    CU_ASSERT_EQUAL((uint64_t)cJSON_GetObjectItem(root, "current_bytes")->valuedouble,
                    be->mem.current_total);
    CU_ASSERT(cJSON_GetArraySize(cJSON_GetObjectItem(root, "largest_buffers")) >= 3);
    cJSON_Delete(root);
    free(json);

    tt_buffer_free(p), tt_buffer_free(g), tt_buffer_free(w);
    CU_ASSERT_EQUAL(be->mem.current_total, base.current_total);
    CU_ASSERT_EQUAL(be->mem.live_count, base.live_count);
}

static void test_oversize_refused(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t before = be->mem.current_total, allocations = be->mem.allocations;
    tt_buffer *b = (tt_buffer *)0x1;
    tt_status s = tt_buffer_alloc(be, (size_t)be->device.max_alloc_bytes + 1, TT_MEM_ACTIVATIONS,
                                  "huge", &b);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_TOO_LARGE);
    CU_ASSERT(strstr(tt_status_message(s), "huge") != NULL);
    CU_ASSERT(strstr(tt_status_message(s), "CL_DEVICE_MAX_MEM_ALLOC_SIZE") != NULL);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_EQUAL(be->mem.current_total, before);
    CU_ASSERT_EQUAL(be->mem.allocations, allocations);
    tt_status_free(s);

    s = tt_buffer_alloc(be, 0, TT_MEM_OTHER, "empty", &b);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
}

static void test_error_names(void)
{
    CU_ASSERT_STRING_EQUAL(tt_cl_error_name(-5), "CL_OUT_OF_RESOURCES");
    CU_ASSERT_STRING_EQUAL(tt_cl_error_name(-4), "CL_MEM_OBJECT_ALLOCATION_FAILURE");
    CU_ASSERT_STRING_EQUAL(tt_cl_error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
    tt_status s = tt_error_cl(-5, "clEnqueueNDRangeKernel(%s)", "conv");
    CU_ASSERT_STRING_EQUAL(tt_status_message(s),
                           "clEnqueueNDRangeKernel(conv) failed: CL_OUT_OF_RESOURCES (-5)");
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_OUT_OF_MEMORY);
    CU_ASSERT_EQUAL(tt_status_backend_code(s), -5);
    CU_ASSERT_STRING_EQUAL(tt_status_backend(s), "opencl");
    tt_status_free(s);
    s = tt_error_cl(-54, "clEnqueueNDRangeKernel(%s)", "conv");
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_BACKEND);
    CU_ASSERT_STRING_EQUAL(tt_code_name(tt_status_code(s)), "TT_ERR_BACKEND");
    tt_status_free(s);
    s = tt_error_new(TT_ERR_IO, "not a backend's");
    CU_ASSERT_STRING_EQUAL(tt_status_backend(s), "");
    CU_ASSERT_EQUAL(tt_status_backend_code(s), 0);
    tt_status_free(s);
    /* out-of-range reads are refused before the device sees them */
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *b = th_zeros(4, "small");
    float h[8];
    s = tt_read(be, h, tt_mem_of(b), sizeof h);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "small") != NULL);
    tt_status_free(s);
    tt_buffer_free(b);
    tt_status_free(NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"device enumeration", test_enumeration},
        {"select by index, name, TT_DEVICE", test_select_by_index_and_name},
        {"bad selector lists the devices", test_bad_selector},
        {"backend factory: kinds, dry like the selected device", test_backend_factory},
        {"atomic file writes, cache folders", test_files_and_cache_folders},
        {"kernel from opencl/ runs, with offsets", test_kernel_runs},
        {"CLBlast GEMM", test_gemm},
        {"program cache: memory and disk", test_program_cache},
        {"TT_KERNEL_DIR and build logs", test_kernel_dir_and_build_errors},
        {"memory accounting is exact", test_memory_accounting},
        {"oversize allocation refused", test_oversize_refused},
        {"errors by name", test_error_names},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("foundation", tests, TH_OPENCL);
}
