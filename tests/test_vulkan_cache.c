/* The Vulkan pipeline cache on disk (src/backend/vulkan/vk_pipeline_cache.c):
 * written when a backend closes, loaded by the next one on the device, and
 * rebuilt, never trusted, when spoiled: garbage, an empty or truncated
 * file, another device's, driver's or cache UUID's, a wrong hash or size,
 * the bare driver data of the old format, and a file whose read fails
 * (TT_FAULT=read) are each ignored; the backend
 * starts, its shaders give correct results with validation silent, and
 * the file is rewritten so that the next backend loads it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "test_vulkan.h"

#define OUR_HEADER 56 /* the file's own header before the driver's data */

static char cache_dir[] = "/tmp/tt_vkpc_XXXXXX";
static char cache_file[1024];

/* Opens a backend on cache_dir, runs util/copy and util/fill and checks
 * them, closes it (writing the file); returns whether the file was loaded. */
static int run_once(void)
{
    th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"},
                            &be));
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_vk_backend *vk = be->impl;
    int loaded = vk->cache_loaded;
    CU_ASSERT(strstr(vk->cache_file, "/pipelines/vulkan-") != NULL);
    snprintf(cache_file, sizeof cache_file, "%s", vk->cache_file);
    enum { N = 777 };
    float x[N], y[N];
    uint64_t seed = 42;
    th_fill_uniform(x, N, -3.0f, 3.0f, &seed);
    tt_buffer *bx = alloc(be, sizeof x, "x"), *by = alloc(be, sizeof y, "y");
    TH_OK(tt_write(be, tt_mem_of(bx), x, sizeof x));
    TH_OK(TT_LAUNCH_1D(be, "util", "fill", N, tt_arg_mem(tt_mem_of(by)), tt_arg_f32(9.0f),
                       tt_arg_i32(N)));
    TH_OK(TT_LAUNCH_1D(be, "util", "copy", N - 1, tt_arg_mem(tt_mem_of(by)),
                       tt_arg_mem(tt_mem_of(bx)), tt_arg_i32(N - 1)));
    TH_OK(tt_read(be, y, tt_mem_of(by), sizeof y));
    CU_ASSERT(memcmp(x, y, (N - 1) * sizeof(float)) == 0);
    CU_ASSERT(y[N - 1] == 9.0f);
    tt_buffer_free(bx);
    tt_buffer_free(by);
    TH_OK(tt_finish(be));
    CU_ASSERT_EQUAL(vk->messages.count, 0);
    if (vk->messages.count) printf("\n    validation: %s\n", vk->messages.first);
    tt_backend_destroy(be);
    return loaded;
}

static unsigned char *read_all(size_t *len)
{
    FILE *f = fopen(cache_file, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    CU_ASSERT_FATAL(data && fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

static void write_all(const unsigned char *data, size_t len)
{
    FILE *f = fopen(cache_file, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The stored hash made right again after the driver data was changed. */
static void rehash(unsigned char *data, size_t len)
{
    put_u64(data + 48, tt_hash_bytes(TT_HASH_INIT, data + OUR_HEADER, len - OUR_HEADER));
}

enum { GARBAGE, EMPTY, HALF, ONE_SHORT, HEADER_ONLY, OLD_FORMAT, WRONG_MAGIC, WRONG_VERSION,
       WRONG_DEVICE, WRONG_DRIVER, WRONG_UUID, WRONG_DRIVER_UUID, WRONG_SIZE, WRONG_HASH,
       LONGER, CASES };
static const char *const case_names[CASES] = {
    "garbage", "empty", "half", "one byte short", "our header only", "old format",
    "wrong magic", "wrong format version", "another device", "another driver version",
    "another cache UUID", "another UUID in the driver's header", "a size that lies",
    "a wrong hash", "a byte appended"};

/* Into *out a copy of the valid file `good` spoiled as case `which`. */
static size_t spoil(const unsigned char *good, size_t len, int which, unsigned char *out)
{
    memcpy(out, good, len);
    switch (which) {
    case GARBAGE: {
        uint64_t seed = 7;
        for (size_t i = 0; i < len; i++) out[i] = (unsigned char)(th_uniform(&seed, 0, 256));
        return len;
    }
    case EMPTY: return 0;
    case HALF: return len / 2;
    case ONE_SHORT: return len - 1;
    case HEADER_ONLY: return OUR_HEADER;
    case OLD_FORMAT: memmove(out, good + OUR_HEADER, len - OUR_HEADER); return len - OUR_HEADER;
    case WRONG_MAGIC: out[0] ^= 0x20; return len;
    case WRONG_VERSION: out[8] += 1; return len;
    case WRONG_DEVICE: out[16] ^= 1; out[OUR_HEADER + 12] ^= 1; rehash(out, len); return len;
    case WRONG_DRIVER: out[20] ^= 1; return len;
    case WRONG_UUID: out[24] ^= 0x80; out[OUR_HEADER + 16] ^= 0x80; rehash(out, len); return len;
    case WRONG_DRIVER_UUID: out[OUR_HEADER + 31] ^= 1; rehash(out, len); return len;
    case WRONG_SIZE: out[40] += 1; return len;
    case WRONG_HASH: out[48] ^= 1; return len;
    default: out[len] = 0; return len + 1;
    }
}

static void test_spoiled_files(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(cache_dir));
    const char *was = getenv("TT_CACHE_DIR");
    char *old = was ? strdup(was) : NULL;
    th_setenv("TT_CACHE_DIR", cache_dir);
    CU_ASSERT_EQUAL(run_once(), 0); /* no file yet */
    CU_ASSERT_EQUAL(run_once(), 1); /* the file it wrote is taken */
    size_t len = 0;
    unsigned char *good = read_all(&len);
    CU_ASSERT_FATAL(len >= OUR_HEADER + 32);
    CU_ASSERT(memcmp(good, "TTVKPIPE", 8) == 0);
    unsigned char *bad = malloc(len + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    for (int which = 0; which < CASES; which++) {
        write_all(bad, spoil(good, len, which, bad));
        int loaded = run_once();
        if (loaded) printf("\n    trusted a file with %s\n", case_names[which]);
        CU_ASSERT_EQUAL(loaded, 0);
        size_t again_len = 0;
        unsigned char *again = read_all(&again_len); /* rewritten whole */
        CU_ASSERT(again_len == len && memcmp(again, "TTVKPIPE", 8) == 0);
        free(again);
        CU_ASSERT_EQUAL(run_once(), 1);
    }
    /* a whole file whose read fails (EIO; TT_FAULT=read:1, the first file
     * read since): as a spoiled one, not taken, and written whole again */
    write_all(good, len);
    th_setenv("TT_FAULT", "read:1");
    int loaded = run_once();
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT_EQUAL(loaded, 0);
    CU_ASSERT_EQUAL(run_once(), 1);
    free(bad);
    free(good);
    th_setenv("TT_CACHE_DIR", old);
    free(old);
    unlink(cache_file);
    char *slash = strrchr(cache_file, '/');
    if (slash) *slash = '\0';
    rmdir(cache_file);
    rmdir(cache_dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"spoiled pipeline cache files are rebuilt", test_spoiled_files},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("vulkan_cache", tests, TH_VULKAN);
}
