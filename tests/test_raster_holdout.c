/*
 * Held-out validation of raster sets (data/raster_holdout.h) and the
 * training crops that avoid it (data/raster_sampler.h): with one scene,
 * about one block in k of a grid of blocks twice the crop is held out,
 * spread over rows and columns, and no training crop touches one (the
 * mask marks the held-out blocks with class 1: every crop's mask is all
 * 0), including crops that found no free place at random; with several
 * scenes whole scenes are held out, the same ones for the same seed, and
 * never drawn; a scene too small to keep a block for training is refused
 * naming --val-fraction; without a holdout the crops are those of before.
 * The rasters are written with tt_raster_writer.
 */
#include <stdlib.h>
#include <string.h>

#include "data/raster_holdout.h"
#include "data/raster_sampler.h"
#include "harness.h"

static char dir[] = "/tmp/tt-rhold-XXXXXX";

/* DIR/NAME/images/S.tif (16-bit, one band) and its mask, class 1 where
 * marked(x, y) says. */
static void write_pair(const char *set, const char *scene, int w, int h,
                       const tt_raster_holdout *held)
{
    char path[512];
    snprintf(path, sizeof path, "mkdir -p %s/%s/images %s/%s/masks", dir, set, dir, set);
    CU_ASSERT_FATAL(system(path) == 0);
    uint16_t *image = malloc(sizeof *image * (size_t)w * h);
    uint8_t *mask = malloc((size_t)w * h);
    CU_ASSERT_FATAL(image && mask);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            image[(size_t)y * w + x] = (uint16_t)(1000 + x + y);
            mask[(size_t)y * w + x] = (uint8_t)(held ? tt_raster_holdout_touches(held, 0, x, y, 1, 1)
                                                     : 0);
        }
    tt_raster_writer *wr = NULL;
    snprintf(path, sizeof path, "%s/%s/images/%s.tif", dir, set, scene);
    TH_OK(tt_raster_writer_open(path, w, h, 1, TT_SAMPLE_U16, NULL, &wr));
    TH_OK(tt_raster_writer_rows(wr, h, image));
    TH_OK(tt_raster_writer_close(wr));
    snprintf(path, sizeof path, "%s/%s/masks/%s.tif", dir, set, scene);
    TH_OK(tt_raster_writer_open(path, w, h, 1, TT_SAMPLE_U8, NULL, &wr));
    TH_OK(tt_raster_writer_rows(wr, h, mask));
    TH_OK(tt_raster_writer_close(wr));
    free(image);
    free(mask);
}

/* Draws `crops` training crops of tile x tile; returns how many hold a
 * pixel of class 1. */
static int crops_touching(tt_raster_set *set, const tt_raster_holdout *h, int tile, int crops,
                          double fg_fraction)
{
    tt_raster_sampler_config rc = {.tile_width = tile, .tile_height = tile, .seed = 9,
                                   .no_augment = 1, .holdout = h, .fg_fraction = fg_fraction};
    tt_raster_sampler *rs = NULL;
    TH_OK(tt_raster_sampler_create(&rc, set, &rs));
    size_t plane = (size_t)tile * tile;
    float *image = malloc(sizeof *image * plane * 8);
    uint8_t *mask = malloc(plane * 8);
    int items[8], touching = 0, end = 0;
    for (int done = 0; done < crops; done += 8) {
        tt_batch b = {.batch_size = 8, .height = tile, .width = tile, .planes = 1, .channels = 1,
                      .image = image, .mask = mask, .items = items};
        TH_OK(tt_raster_sampler_fill(rs, &b, &end));
        for (int i = 0; i < 8; i++) {
            int any = 0;
            for (size_t p = 0; p < plane; p++) any |= mask[i * plane + p] == 1;
            touching += any;
        }
    }
    free(image);
    free(mask);
    tt_raster_sampler_destroy(rs);
    return touching;
}

static void test_blocks_of_one_scene(void)
{
    enum { W = 300, H = 260, TILE = 16 };
    /* the plan first (on a scene of the right size), then the mask that marks it */
    write_pair("one", "a", W, H, NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/one", dir);
    tt_raster_set *set = NULL;
    TH_OK(tt_raster_set_open(path, NULL, &set));
    tt_raster_holdout h;
    TH_OK(tt_raster_holdout_plan(set, 0.5, 1, TILE, TILE, &h));
    CU_ASSERT_EQUAL(h.block, 2 * TILE);
    CU_ASSERT_EQUAL(h.every, 2); /* a checkerboard: crops often touch it */
    int across = (W + 31) / 32, down = (H + 31) / 32;
    CU_ASSERT(h.region_count >= across * down / 2 && h.region_count <= across * down / 2 + 1);
    int rows_with[16] = {0}, columns_with[16] = {0};
    for (int i = 0; i < h.region_count; i++)
        rows_with[h.regions[i].y0 / 32]++, columns_with[h.regions[i].x0 / 32]++;
    for (int i = 0; i < down; i++) CU_ASSERT(rows_with[i] > 0);
    for (int i = 0; i < across; i++) CU_ASSERT(columns_with[i] > 0);
    tt_raster_set_destroy(set);
    write_pair("one", "a", W, H, &h);
    TH_OK(tt_raster_set_open(path, NULL, &set));
    int touching = crops_touching(set, &h, TILE, 400, 0);
    int without = crops_touching(set, NULL, TILE, 400, 0);
    /* seeking foreground (class 1 is the held-out blocks) finds none either */
    int seeking = crops_touching(set, &h, TILE, 200, 1.0);
    printf("\n  400 crops of 16 px, 1 block in 2 of 32 px held out: %d touch one (%d without "
           "the holdout), %d of 200 seeking class 1", touching, without, seeking);
    CU_ASSERT_EQUAL(touching, 0);
    CU_ASSERT_EQUAL(seeking, 0);
    CU_ASSERT(without > 200); /* the mask does mark them: the check can fail */
    tt_raster_holdout_free(&h);

    /* one block in 5 at 0.2, spread: no column of the grid wholly held */
    TH_OK(tt_raster_holdout_plan(set, 0.2, 1, TILE, TILE, &h));
    CU_ASSERT_EQUAL(h.every, 5);
    CU_ASSERT(h.region_count * 5 >= across * down - 5 && h.region_count * 5 <= across * down + 5);
    tt_raster_holdout_free(&h);
    /* too small to keep a whole block of 2 x 200 px for training */
    tt_status s = tt_raster_holdout_plan(set, 0.5, 1, 200, 200, &h);
    CU_ASSERT(s && strstr(tt_status_message(s), "--val-fraction") &&
              strstr(tt_status_message(s), "a.tif"));
    tt_status_free(s);
    tt_raster_set_destroy(set);
}

static void test_whole_scenes(void)
{
    /* scene c is all class 1 in its mask once it is known to be held out */
    const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) write_pair("many", names[i], 64, 48, NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/many", dir);
    tt_raster_set *set = NULL;
    TH_OK(tt_raster_set_open(path, NULL, &set));
    tt_raster_holdout h, again;
    TH_OK(tt_raster_holdout_plan(set, 0.25, 3, 16, 16, &h));
    TH_OK(tt_raster_holdout_plan(set, 0.25, 3, 16, 16, &again));
    CU_ASSERT_EQUAL(h.block, 0);
    CU_ASSERT_EQUAL_FATAL(h.region_count, 1);
    CU_ASSERT(memcmp(h.held, again.held, 4) == 0); /* the same seed, the same scene */
    int held = h.regions[0].scene;
    CU_ASSERT(h.regions[0].width == 64 && h.regions[0].height == 48);
    tt_raster_set_destroy(set);
    /* its mask all 1: a crop from it shows */
    tt_raster_holdout all = {.scenes = 1, .held = (uint8_t[]){1}};
    write_pair("many", names[held], 64, 48, &all);
    TH_OK(tt_raster_set_open(path, NULL, &set));
    int touching = crops_touching(set, &h, 16, 200, 0);
    int without = crops_touching(set, NULL, 16, 200, 0);
    printf("\n  4 scenes, %s held out: %d of 200 crops from it (%d without the holdout)",
           names[held], touching, without);
    CU_ASSERT_EQUAL(touching, 0);
    CU_ASSERT(without > 20);
    /* at most all but one scene */
    tt_raster_holdout most;
    TH_OK(tt_raster_holdout_plan(set, 0.99, 3, 16, 16, &most));
    CU_ASSERT_EQUAL(most.region_count, 3);
    tt_raster_holdout_free(&most);
    tt_raster_holdout_free(&h);
    tt_raster_holdout_free(&again);
    tt_raster_set_destroy(set);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    CU_TestInfo tests[] = {
        {"one scene: blocks held out, spread; no training crop touches one", test_blocks_of_one_scene},
        {"several scenes: whole scenes held out by seed, never drawn", test_whole_scenes},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("raster_holdout", tests, TH_HOST);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}
