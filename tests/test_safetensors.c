/* safetensors: round trip, Python cross-check, refused corruptions, atomic writes. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "ref_optim.h"
#include "io/safetensors.h"

static char dir[] = "/tmp/tt-safetensors-XXXXXX";

static int suite_init(void) { return mkdtemp(dir) ? 0 : 1; }

static int suite_clean(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

static const char *in_dir(const char *name)
{
    static char path[4][256];
    static int turn;
    turn = (turn + 1) % 4;
    snprintf(path[turn], sizeof path[turn], "%s/%s", dir, name);
    return path[turn];
}

/* A writer holding weight (3, 5), bias (7), empty (2, 0), step I64 scalar,
 * with metadata; values from seed. */
static tt_st_writer *sample_writer(float *weight, float *bias, int64_t step)
{
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    uint64_t seed = 7;
    th_fill_uniform(weight, 15, -3, 3, &seed);
    th_fill_uniform(bias, 7, -1, 1, &seed);
    weight[0] = -0.0f, weight[1] = 1e-38f, weight[2] = 3.4e38f; /* edge values survive */
    TH_OK(tt_st_writer_add(w, "enc.0.conv.weight", TT_ST_F32, 2, (int64_t[]){3, 5}, weight));
    float *dst = NULL;
    TH_OK(tt_st_writer_alloc(w, "enc.0.conv.bias", TT_ST_F32, 1, (int64_t[]){7}, (void **)&dst));
    memcpy(dst, bias, 7 * sizeof *bias);
    TH_OK(tt_st_writer_add(w, "empty", TT_ST_F32, 2, (int64_t[]){2, 0}, NULL));
    TH_OK(tt_st_writer_add(w, "optimizer.step", TT_ST_I64, 0, NULL, &step));
    TH_OK(tt_st_writer_metadata(w, "format", "pt"));
    TH_OK(tt_st_writer_metadata(w, "schedule", "old"));
    TH_OK(tt_st_writer_metadata(w, "schedule", "cosine:warmup=5,total=50,min_lr=0")); /* replaces */
    return w;
}

static void test_round_trip(void)
{
    float weight[15], bias[7], got_w[15], got_b[7];
    int64_t step = 9007199254740993LL, got_step = 0; /* above 2^53: exact through I64 */
    tt_st_writer *w = sample_writer(weight, bias, step);
    const char *path = in_dir("round.safetensors");
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);

    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    CU_ASSERT_EQUAL(tt_safetensors_count(f), 4);
    TH_OK(tt_safetensors_get_f32(f, "enc.0.conv.weight", 2, (int64_t[]){3, 5}, got_w));
    TH_OK(tt_safetensors_get_f32(f, "enc.0.conv.bias", 1, (int64_t[]){7}, got_b));
    TH_OK(tt_safetensors_get_i64(f, "optimizer.step", 0, NULL, &got_step));
    TH_OK(tt_safetensors_get_f32(f, "empty", 2, (int64_t[]){2, 0}, NULL));
    double err = fmax(th_max_rel_error_f(got_w, weight, 15, 1e-30),
                      th_max_rel_error_f(got_b, bias, 7, 1e-30));
    printf("\n    round trip: max rel error %.1e, step %lld", err, (long long)got_step);
    CU_ASSERT(memcmp(got_w, weight, sizeof weight) == 0); /* bit exact, -0 included */
    CU_ASSERT(memcmp(got_b, bias, sizeof bias) == 0);
    CU_ASSERT_EQUAL(got_step, step);
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "format"), "pt");
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "schedule"), "cosine:warmup=5,total=50,min_lr=0");
    CU_ASSERT_PTR_NULL(tt_safetensors_metadata(f, "missing"));
    /* data order is the order added; offsets are contiguous */
    const tt_st_tensor *t0 = tt_safetensors_at(f, 0), *t1 = tt_safetensors_at(f, 1);
    CU_ASSERT_STRING_EQUAL(t0->name, "enc.0.conv.weight");
    CU_ASSERT_EQUAL(t0->begin, 0);
    CU_ASSERT_EQUAL(t0->end, 60);
    CU_ASSERT_EQUAL(t1->begin, 60);
    CU_ASSERT_EQUAL(tt_safetensors_find(f, "optimizer.step")->dtype, TT_ST_I64);
    CU_ASSERT_PTR_NULL(tt_safetensors_find(f, "nope"));
    tt_safetensors_close(f);

    /* the header length is a multiple of 8 and the JSON starts right after it */
    FILE *fp = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    unsigned char head[9];
    CU_ASSERT_EQUAL(fread(head, 1, 9, fp), 9);
    fclose(fp);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | head[i];
    CU_ASSERT_EQUAL(n % 8, 0);
    CU_ASSERT_EQUAL(head[8], '{');
    tt_safetensors_close(NULL);
    tt_st_writer_destroy(NULL);

    /* a copy with one metadata entry set: every tensor's bytes and every
     * other entry the same, in place too */
    TH_OK(tt_safetensors_open(path, &f));
    TH_OK(tt_safetensors_copy_with(f, "schedule", "constant", path));
    TH_OK(tt_safetensors_copy_with(f, "added", "1", path));
    tt_safetensors_close(f);
    TH_OK(tt_safetensors_open(path, &f));
    CU_ASSERT_EQUAL(tt_safetensors_count(f), 4);
    TH_OK(tt_safetensors_get_f32(f, "enc.0.conv.weight", 2, (int64_t[]){3, 5}, got_w));
    TH_OK(tt_safetensors_get_i64(f, "optimizer.step", 0, NULL, &got_step));
    CU_ASSERT(memcmp(got_w, weight, sizeof weight) == 0 && got_step == step);
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "format"), "pt");
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "added"), "1");
    /* the second copy was of the file as first opened: its schedule */
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "schedule"), "cosine:warmup=5,total=50,min_lr=0");
    tt_safetensors_close(f);
}

static void test_python_reads_ours(void)
{
    if (!ref_python_has("numpy")) {
        printf("\n    SKIP python cross-check: /usr/bin/python3 with numpy is missing");
        return;
    }
    float weight[15], bias[7];
    tt_st_writer *w = sample_writer(weight, bias, 42);
    const char *path = in_dir("py.safetensors"), *out = in_dir("py.json");
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, TH_PYTHON " '%s/optim_safetensors_check.py' read '%s' '%s'",
             ref_tests_dir(), path, out);
    fflush(stdout);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    FILE *fp = fopen(out, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    char text[16384];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[len] = '\0';
    cJSON *root = cJSON_Parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    printf("    python loader: %s", cJSON_GetObjectItem(root, "loader")->valuestring);
    cJSON *tensors = cJSON_GetObjectItem(root, "tensors");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(tensors), 4);
    cJSON *wt = cJSON_GetObjectItem(tensors, "enc.0.conv.weight");
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(wt, "dtype")->valuestring, "F32");
    cJSON *shape = cJSON_GetObjectItem(wt, "shape");
    CU_ASSERT(cJSON_GetArraySize(shape) == 2 && cJSON_GetArrayItem(shape, 0)->valueint == 3 &&
              cJSON_GetArrayItem(shape, 1)->valueint == 5);
    cJSON *values = cJSON_GetObjectItem(wt, "values");
    int same = cJSON_GetArraySize(values) == 15;
    for (int i = 0; same && i < 15; i++)
        same = cJSON_GetArrayItem(values, i)->valuedouble == (double)weight[i];
    CU_ASSERT(same);
    cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(tensors, "enc.0.conv.bias"), "values");
    same = cJSON_GetArraySize(b) == 7;
    for (int i = 0; same && i < 7; i++) same = cJSON_GetArrayItem(b, i)->valuedouble == (double)bias[i];
    CU_ASSERT(same);
    cJSON *st = cJSON_GetObjectItem(tensors, "optimizer.step");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(st, "shape")), 0);
    CU_ASSERT_EQUAL(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "values"), 0)->valuedouble, 42);
    cJSON *meta = cJSON_GetObjectItem(root, "metadata");
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(meta, "format")->valuestring, "pt");
    cJSON_Delete(root);
}

static void test_we_read_python(void)
{
    if (!ref_python_has("numpy")) {
        printf("\n    SKIP python cross-check: /usr/bin/python3 with numpy is missing");
        return;
    }
    const char *path = in_dir("from-python.safetensors");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, TH_PYTHON " '%s/optim_safetensors_check.py' write '%s'",
             ref_tests_dir(), path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    float w[6], z;
    int64_t step;
    TH_OK(tt_safetensors_get_f32(f, "b.weight", 2, (int64_t[]){2, 3}, w));
    TH_OK(tt_safetensors_get_f32(f, "z.bias", 1, (int64_t[]){1}, &z));
    TH_OK(tt_safetensors_get_i64(f, "a.step", 0, NULL, &step));
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(w[i], 0.5f * (float)i);
    CU_ASSERT_EQUAL(z, -1.25f);
    CU_ASSERT_EQUAL(step, 1234567890123LL);
    CU_ASSERT_STRING_EQUAL(tt_safetensors_metadata(f, "note"), "from python");
    tt_safetensors_close(f);
}

/* Writes raw bytes: an 8-byte length, the header (padded to 8), `data_bytes`
 * bytes of data.  length_override, when nonzero, replaces the true length. */
static const char *write_raw(const char *name, const char *header, size_t data_bytes,
                             uint64_t length_override)
{
    const char *path = in_dir(name);
    size_t n = strlen(header), padded = (n + 7) / 8 * 8;
    uint64_t length = length_override ? length_override : padded;
    FILE *fp = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    for (int i = 0; i < 8; i++) fputc((int)((length >> (8 * i)) & 0xff), fp);
    fputs(header, fp);
    for (size_t i = n; i < padded; i++) fputc(' ', fp);
    for (size_t i = 0; i < data_bytes; i++) fputc((int)(i & 0xff), fp);
    fclose(fp);
    return path;
}

/* Opening path fails with TT_ERR_FORMAT and a message with the path and
 * every fragment given (NULL-terminated). */
static void expect_refused(const char *path, const char *case_name, ...)
{
    tt_safetensors *f = (tt_safetensors *)0x1;
    tt_status s = tt_safetensors_open(path, &f);
    CU_ASSERT_PTR_NULL(f);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    const char *msg = s ? tt_status_message(s) : "(accepted)";
    int ok = strstr(msg, path) != NULL;
    va_list ap;
    va_start(ap, case_name);
    for (const char *frag; (frag = va_arg(ap, const char *));) ok &= strstr(msg, frag) != NULL;
    va_end(ap);
    const char *detail = strstr(msg, "': ");
    printf("\n    refused %-26s %s", case_name, detail ? detail + 3 : msg);
    CU_ASSERT(ok);
    tt_status_free(s);
}

#define ONE_F32 "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"

static void test_refused_files(void)
{
    /* the good file these start from is accepted */
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(write_raw("good.st", ONE_F32, 8, 0), &f));
    tt_safetensors_close(f);

    const char *short_path = in_dir("short.st");
    FILE *fp = fopen(short_path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    CU_ASSERT_EQUAL(fwrite("\x10\0\0", 1, 3, fp), 3); /* 3 bytes */
    fclose(fp);
    expect_refused(short_path, "file under 8 bytes", "too short", NULL);
    expect_refused(write_raw("trunc.st", ONE_F32, 5, 0), "truncated data", "tensor 'w'",
                   "truncated", NULL);
    /* a real file of ours, cut short */
    float weight[15], bias[7];
    tt_st_writer *w = sample_writer(weight, bias, 3);
    const char *path = in_dir("cut.st");
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    CU_ASSERT_EQUAL(truncate(path, 100), 0);
    expect_refused(path, "checkpoint cut at 100 B", "truncated", NULL);
    CU_ASSERT_EQUAL(truncate(path, 4), 0);
    expect_refused(path, "checkpoint cut at 4 B", "too short", NULL);

    expect_refused(write_raw("hlen.st", ONE_F32, 8, 4096), "header length > file", "header length 4096",
                   "truncated", NULL);
    expect_refused(write_raw("hbig.st", ONE_F32, 8, 1ULL << 40), "header length > limit",
                   "above the limit", NULL);
    expect_refused(write_raw("json.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],", 8, 0),
                   "bad JSON", "not valid JSON", NULL);
    expect_refused(write_raw("notobj.st", "[1, 2]", 8, 0), "header not an object",
                   "does not start with '{'", NULL);
    expect_refused(write_raw("range.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                             8, 0), "offsets out of range", "tensor 'w'", "run past", NULL);
    expect_refused(write_raw("overlap.st",
                             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, 0),
                   "overlapping offsets", "tensor 'b'", "overlap", NULL);
    expect_refused(write_raw("gap.st",
                             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, 0),
                   "gap between tensors", "tensor 'b'", "gap", NULL);
    expect_refused(write_raw("tail.st", ONE_F32, 12, 0), "bytes after the data", "4 bytes after",
                   NULL);
    expect_refused(write_raw("dtype.st", "{\"w\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                             8, 0), "unknown dtype", "tensor 'w'", "unknown dtype 'F33'", NULL);
    expect_refused(write_raw("bytes.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
                             8, 0), "shape vs byte length", "tensor 'w'", "needs 12 bytes", NULL);
    expect_refused(write_raw("neg.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
                             8, 0), "negative extent", "tensor 'w'", "shape entry 0", NULL);
    expect_refused(write_raw("dup.st",
                             "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                             "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, 0),
                   "duplicate name", "tensor 'w' appears twice", NULL);
    expect_refused(write_raw("meta.st", "{\"__metadata__\":{\"k\":1},"
                             "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 0),
                   "non-string metadata", "__metadata__", NULL);
    tt_status s = tt_safetensors_open(in_dir("absent.st"), &f);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "absent.st") != NULL);
    tt_status_free(s);
}

/* Every byte of a small file set to a few values: each result is either a
 * clean refusal or a file whose tensors lie inside it (run under
 * TT_SANITIZE to catch out-of-bounds reads). */
static void test_byte_flips(void)
{
    float weight[15], bias[7];
    tt_st_writer *w = sample_writer(weight, bias, 3);
    const char *path = in_dir("flip.st");
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    unsigned char bytes[1024];
    FILE *fp = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    size_t size = fread(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    CU_ASSERT_FATAL(size > 8 && size < sizeof bytes);
    const unsigned char values[] = {0x00, 0x7f, 0xff, '"', '}', ']', ',', '9', '-'};
    int refused = 0, accepted = 0, sane = 1;
    for (size_t at = 0; at < size; at++) {
        for (size_t v = 0; v < sizeof values; v++) {
            if (bytes[at] == values[v]) continue;
            unsigned char keep = bytes[at];
            bytes[at] = values[v];
            fp = fopen(path, "wb");
            CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
            CU_ASSERT_EQUAL(fwrite(bytes, 1, size, fp), size);
            fclose(fp);
            bytes[at] = keep;
            tt_safetensors *f = NULL;
            tt_status s = tt_safetensors_open(path, &f);
            if (s) {
                refused++;
                sane &= tt_status_code(s) == TT_ERR_FORMAT;
                tt_status_free(s);
                continue;
            }
            accepted++;
            for (size_t i = 0; i < tt_safetensors_count(f); i++) {
                const tt_st_tensor *t = tt_safetensors_at(f, i);
                sane &= t->end >= t->begin && t->end <= size;
            }
            tt_safetensors_close(f);
        }
    }
    printf("\n    %zu-byte file, single-byte corruptions: %d refused, %d still valid (data bytes)",
           size, refused, accepted);
    CU_ASSERT(sane);
    CU_ASSERT(refused > 0);
}

static void expect_get_error(tt_status s, const char *a, const char *b)
{
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    const char *msg = s ? tt_status_message(s) : "(accepted)";
    CU_ASSERT(strstr(msg, a) != NULL && strstr(msg, b) != NULL);
    const char *detail = strstr(msg, "': ");
    printf("\n    refused: %s", detail ? detail + 3 : msg);
    tt_status_free(s);
}

static void test_wrong_dtype_and_shape(void)
{
    float weight[15], bias[7], out[15];
    int64_t step;
    tt_st_writer *w = sample_writer(weight, bias, 3);
    const char *path = in_dir("expect.st");
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    expect_get_error(tt_safetensors_get_f32(f, "enc.0.conv.weight", 2, (int64_t[]){5, 3}, out),
                     "tensor 'enc.0.conv.weight' has shape [3, 5], expected [5, 3]", path);
    expect_get_error(tt_safetensors_get_f32(f, "enc.0.conv.weight", 1, (int64_t[]){15}, out),
                     "has shape [3, 5], expected [15]", path);
    expect_get_error(tt_safetensors_get_f32(f, "optimizer.step", 0, NULL, out),
                     "tensor 'optimizer.step' is I64, expected F32", path);
    expect_get_error(tt_safetensors_get_i64(f, "enc.0.conv.bias", 1, (int64_t[]){7}, &step),
                     "is F32, expected I64", path);
    expect_get_error(tt_safetensors_get_f32(f, "dec.9.weight", 1, (int64_t[]){1}, out),
                     "no tensor 'dec.9.weight'", path);
    tt_safetensors_close(f);

    /* the writer refuses what it cannot write */
    TH_OK(tt_st_writer_create(&w));
    tt_status s = tt_st_writer_add(w, "x", TT_ST_F32, 1, (int64_t[]){1}, weight);
    TH_OK(s);
    s = tt_st_writer_add(w, "x", TT_ST_F32, 1, (int64_t[]){1}, weight);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "'x' added twice"));
    tt_status_free(s);
    s = tt_st_writer_add(w, "__metadata__", TT_ST_F32, 1, (int64_t[]){1}, weight);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    s = tt_st_writer_add(w, "y", TT_ST_F32, 1, (int64_t[]){-1}, weight);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_st_writer_destroy(w);
}

/* Names in dir that contain ".tmp.". */
static int temporary_files(void)
{
    int count = 0;
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    for (struct dirent *e; (e = readdir(d));) count += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return count;
}

static void test_atomic_write(void)
{
    const char *path = in_dir("ckpt.safetensors");
    float small[4] = {1, 2, 3, 4}, got[4];
    tt_st_writer *w = NULL;
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_st_writer_add(w, "w", TT_ST_F32, 1, (int64_t[]){4}, small));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);

    /* a write that fails half way (file size limit: EFBIG) keeps the old file */
    enum { BIG = 1 << 16 };
    float *big = calloc(BIG, sizeof *big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_st_writer_add(w, "w", TT_ST_F32, 1, (int64_t[]){BIG}, big));
    struct rlimit old;
    CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit low = {4096, old.rlim_max};
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &low), 0);
    tt_status s = tt_st_writer_write(w, path);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    const char *msg = s ? tt_status_message(s) : "(accepted)";
    printf("\n    failed write: %s", msg);
    CU_ASSERT(strstr(msg, path) != NULL && strstr(msg, "unchanged") != NULL);
    tt_status_free(s);
    CU_ASSERT_EQUAL(temporary_files(), 0); /* no partial file left behind */
    tt_safetensors *f = NULL;
    TH_OK(tt_safetensors_open(path, &f));
    TH_OK(tt_safetensors_get_f32(f, "w", 1, (int64_t[]){4}, got));
    CU_ASSERT(memcmp(got, small, sizeof got) == 0); /* the old content */
    tt_safetensors_close(f);

    /* the same write without the limit replaces it */
    big[BIG - 1] = 5;
    tt_st_writer_destroy(w);
    TH_OK(tt_st_writer_create(&w));
    TH_OK(tt_st_writer_add(w, "w", TT_ST_F32, 1, (int64_t[]){BIG}, big));
    TH_OK(tt_st_writer_write(w, path));
    tt_st_writer_destroy(w);
    TH_OK(tt_safetensors_open(path, &f));
    CU_ASSERT_EQUAL(tt_safetensors_find(f, "w")->shape[0], BIG);
    tt_safetensors_close(f);
    CU_ASSERT_EQUAL(temporary_files(), 0);
    free(big);

    /* a folder that does not exist: a clear error, nothing created */
    TH_OK(tt_st_writer_create(&w));
    s = tt_st_writer_write(w, in_dir("no-such-folder/x.safetensors"));
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(s && strstr(tt_status_message(s), "no-such-folder/x.safetensors") != NULL);
    tt_status_free(s);
    tt_st_writer_destroy(w);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"round trip F32, I64, scalar, empty, metadata", test_round_trip},
        {"python reads our file", test_python_reads_ours},
        {"we read a file written by python", test_we_read_python},
        {"truncated and corrupted files refused", test_refused_files},
        {"single-byte corruptions refused cleanly", test_byte_flips},
        {"wrong dtype, shape, name refused by name", test_wrong_dtype_and_shape},
        {"atomic write keeps the old file on failure", test_atomic_write},
        CU_TEST_INFO_NULL,
    };
    if (suite_init()) return 1;
    int rc = th_run_suite("safetensors", tests, TH_HOST);
    return suite_clean() || rc;
}
