/* The prefetch queue: order and bounded queue under a slow consumer,
 * measured waits under a slow producer, producer errors reaching the
 * consumer, end of stream, shutdown while blocked, and sampler-fed batches
 * equal to running the sampler directly. */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "data/prefetch.h"
#include "harness.h"
#include "ref_pixels.h"

static char dir[512];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct counter_fill {
    int delay_ms;       /* producer's time per batch */
    int fail_at;        /* batch number that fails (-1 none) */
    int end_after;      /* batches in the stream (0 endless) */
    int filled;
    atomic_int released;
    int max_ahead;      /* most batches filled but not yet released */
} counter_fill;

static tt_status fill_counter(void *ctx, tt_batch *b, int *end)
{
    counter_fill *f = ctx;
    if (f->delay_ms) sleep_ms(f->delay_ms);
    if (f->filled == f->fail_at)
        return tt_error_new(TT_ERR_FORMAT, "test producer: batch %d is broken", f->filled);
    size_t n = (size_t)b->batch_size * 3 * b->height * b->width;
    for (size_t i = 0; i < n; i++) b->image[i] = (float)f->filled;
    memset(b->mask, f->filled & 255, (size_t)b->batch_size * b->planes * b->height * b->width);
    f->filled++;
    int ahead = f->filled - atomic_load(&f->released);
    if (ahead > f->max_ahead) f->max_ahead = ahead;
    if (f->end_after && f->filled == f->end_after) *end = 1;
    return NULL;
}

static tt_prefetch_config small_config(int depth)
{
    tt_prefetch_config c = {2, 8, 6, 1, depth, 0, {0, 0, 0}, {1, 1, 1}, 3};
    return c;
}

static void test_slow_consumer(void)
{
    counter_fill f = {0, -1, 0, 0, 0, 0};
    tt_prefetch_config cfg = small_config(3);
    tt_prefetch *p;
    TH_OK(tt_prefetch_create(&cfg, fill_counter, &f, &p));
    int bad = 0;
    for (int k = 0; k < 10; k++) {
        tt_batch *b;
        TH_OK(tt_prefetch_next(p, &b));
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        bad += b->sequence != k || b->image[0] != (float)k || b->image[2 * 3 * 8 * 6 - 1] != (float)k ||
               b->mask[0] != k;
        sleep_ms(10); /* the consumer computes */
        atomic_fetch_add(&f.released, 1);
        tt_prefetch_release(p, b);
    }
    tt_prefetch_stats st;
    tt_prefetch_get_stats(p, &st);
    printf("\n  slow consumer: waited %.4f s over %lld batches; at most %d batches ahead (depth 3)",
           st.wait_seconds, (long long)st.batches, f.max_ahead);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(st.batches, 10);
    CU_ASSERT(f.max_ahead <= 3);
    CU_ASSERT(st.wait_seconds < 0.05); /* the queue was full whenever it asked */
    tt_prefetch_destroy(p);
}

static void test_slow_producer(void)
{
    counter_fill f = {30, -1, 0, 0, 0, 0};
    tt_prefetch_config cfg = small_config(2);
    tt_prefetch *p;
    TH_OK(tt_prefetch_create(&cfg, fill_counter, &f, &p));
    double per_batch_min = 1.0;
    for (int k = 0; k < 5; k++) {
        tt_batch *b;
        TH_OK(tt_prefetch_next(p, &b));
        CU_ASSERT_EQUAL(b->sequence, k);
        if (k > 0 && b->wait_seconds < per_batch_min) per_batch_min = b->wait_seconds;
        tt_prefetch_release(p, b);
    }
    tt_prefetch_stats st;
    tt_prefetch_get_stats(p, &st);
    printf("\n  slow producer (30 ms/batch): waited %.3f s over 5 batches, last %.3f s, min %.3f s",
           st.wait_seconds, st.last_wait_seconds, per_batch_min);
    CU_ASSERT(st.wait_seconds > 0.10);
    CU_ASSERT(per_batch_min > 0.015);
    CU_ASSERT(st.produce_seconds > 0.10);
    tt_prefetch_destroy(p);
}

static void test_error_propagates(void)
{
    counter_fill f = {0, 3, 0, 0, 0, 0};
    tt_prefetch_config cfg = small_config(2);
    tt_prefetch *p;
    TH_OK(tt_prefetch_create(&cfg, fill_counter, &f, &p));
    for (int k = 0; k < 3; k++) { /* batches made before the error still arrive */
        tt_batch *b;
        TH_OK(tt_prefetch_next(p, &b));
        CU_ASSERT_EQUAL(b->sequence, k);
        tt_prefetch_release(p, b);
    }
    tt_batch *b = (tt_batch *)1;
    tt_status s = tt_prefetch_next(p, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(strstr(tt_status_message(s), "batch 3 is broken") != NULL);
    printf("\n  error: %s", tt_status_message(s));
    tt_status_free(s);
    s = tt_prefetch_next(p, &b);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INTERNAL);
    tt_status_free(s);
    tt_prefetch_destroy(p);
}

static void test_end_and_shutdown(void)
{
    /* a finite stream ends with a NULL batch */
    counter_fill f = {0, -1, 4, 0, 0, 0};
    tt_prefetch_config cfg = small_config(2);
    tt_prefetch *p;
    TH_OK(tt_prefetch_create(&cfg, fill_counter, &f, &p));
    int got = 0;
    for (;;) {
        tt_batch *b;
        TH_OK(tt_prefetch_next(p, &b));
        if (!b) break;
        got++;
        tt_prefetch_release(p, b);
    }
    CU_ASSERT_EQUAL(got, 4);
    tt_prefetch_destroy(p);

    /* a producer blocked on a full queue, and one inside a slow fill, both
     * stop promptly */
    for (int slow = 0; slow < 2; slow++) {
        counter_fill g = {slow ? 50 : 0, -1, 0, 0, 0, 0};
        TH_OK(tt_prefetch_create(&cfg, fill_counter, &g, &p));
        sleep_ms(slow ? 20 : 30);
        tt_batch *held = NULL;
        if (!slow) TH_OK(tt_prefetch_next(p, &held)); /* one held, never released */
        double t0 = now();
        tt_prefetch_destroy(p);
        double took = now() - t0;
        printf("\n  shutdown (%s): %.3f s", slow ? "inside a slow fill" : "queue full", took);
        CU_ASSERT(took < 0.5);
    }
    tt_prefetch_destroy(NULL);

    tt_prefetch_config bad = small_config(2);
    bad.batch_size = 0;
    tt_status s = tt_prefetch_create(&bad, fill_counter, &f, &p);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
}

static void test_sampler_batches(void)
{
    int w = 90, h = 70, tile = 32, classes = 2;
    rp_source src;
    rp_source_init(&src, classes, TT_MASK_MULTI_LABEL);
    for (int i = 0; i < 3; i++) {
        uint8_t *rgb = rp_make_rgb(w, h, (uint64_t)(i + 20));
        char path[PATH_MAX], name[32];
        snprintf(name, sizeof name, "p%d.png", i);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        CU_ASSERT_FATAL(rp_write_png(path, w, h, rgb));
        uint8_t *mask = malloc((size_t)classes * w * h);
        for (int p = 0; p < classes * w * h; p++) mask[p] = rgb[(p % (w * h)) * 3 + p / (w * h)] > 100;
        rp_source_add(&src, name, path, w, h, mask);
        free(mask), free(rgb);
    }
    char cdir[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    tt_tilecache_config ccfg = {.dir = cdir};
    tt_tilecache *cache_a, *cache_b;
    TH_OK(tt_tilecache_create(&ccfg, &src.source, &cache_a));
    TH_OK(tt_tilecache_create(&ccfg, &src.source, &cache_b));
    tt_sampler_config scfg = {tile, tile, 0.3, 1, 0, 0, 17, tt_augment_defaults(), 1};
    int items[3] = {0, 1, 2};
    tt_sampler *sa, *sb;
    TH_OK(tt_sampler_create(&scfg, cache_a, items, 3, &sa));
    TH_OK(tt_sampler_create(&scfg, cache_b, items, 3, &sb));
    tt_prefetch_config cfg = {4, tile, tile, classes, 2, 1, {0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f}, 3};
    tt_prefetch *p;
    TH_OK(tt_prefetch_create_sampler(&cfg, sa, 10, &p)); /* 10 crops: batches of 4, 4, 2 */
    size_t px = (size_t)tile * tile;
    uint8_t rgb[32 * 32 * 3], mask[2 * 32 * 32];
    double max_err = 0;
    int batches = 0, mask_bad = 0, crops = 0, last_size = 0;
    for (;;) {
        tt_batch *b;
        TH_OK(tt_prefetch_next(p, &b));
        if (!b) break;
        crops += b->batch_size;
        last_size = b->batch_size;
        for (int i = 0; i < b->batch_size; i++) {
            tt_crop_info info;
            TH_OK(tt_sampler_next(sb, rgb, mask, &info)); /* the same stream, by hand */
            CU_ASSERT_EQUAL(b->items[i], info.item);
            mask_bad += memcmp(b->mask + i * classes * px, mask, classes * px) != 0;
            for (int c = 0; c < 3; c++)
                for (size_t q = 0; q < px; q++) {
                    double want = (rgb[3 * q + c] / 255.0 - cfg.mean[c]) / cfg.std[c];
                    double err = fabs(b->image[(i * 3 + c) * px + q] - want);
                    if (err > max_err) max_err = err;
                }
        }
        tt_sampler_state st;
        tt_sampler_get_state(sb, &st);
        CU_ASSERT(st.epoch == b->state_after.epoch && st.position == b->state_after.position);
        batches++;
        tt_prefetch_release(p, b);
    }
    printf("\n  sampler batches: %d, max |image - (v/255 - mean)/std| = %.2e", batches, max_err);
    CU_ASSERT_EQUAL(batches, 3);
    CU_ASSERT_EQUAL(crops, 10);
    CU_ASSERT_EQUAL(last_size, 2); /* the short last batch of a finite stream */
    CU_ASSERT_EQUAL(mask_bad, 0);
    CU_ASSERT(max_err < 1e-5);
    tt_prefetch_destroy(p);
    tt_sampler_destroy(sa), tt_sampler_destroy(sb);
    tt_tilecache_destroy(cache_a), tt_tilecache_destroy(cache_b);
    rp_source_free(&src);
}

int main(void)
{
    if (!rd_tempdir_in(dir, sizeof dir, "pixels")) return 1;
    CU_TestInfo tests[] = {
        {"slow consumer: order, bounded queue", test_slow_consumer},
        {"slow producer: waits measured", test_slow_producer},
        {"producer errors reach the consumer", test_error_propagates},
        {"end of stream and shutdown", test_end_and_shutdown},
        {"sampler batches equal the sampler", test_sampler_batches},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("prefetch", tests, TH_HOST);
    rd_rmtree(dir);
    return rc;
}
