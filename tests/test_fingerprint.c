/*
 * The data set's fingerprint (data/fingerprint.h) on a hand-made folder set
 * whose regions, ignored pixels, empty masks and grey intensities are known,
 * and the plan made from it (train/run_plan.h): what it chooses, that the
 * chosen micro-batch fits a small --mem-limit by the engine's own estimate,
 * and the errors for a set too small to plan and for unreadable pixels.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "data/fingerprint.h"
#include "harness.h"
#include "ref_data.h"
#include "train/fit.h"
#include "train/recipe.h"
#include "train/run_plan.h"

enum { W = 40, H = 30 };

/* A rectangle of `value` into a W x H plane. */
static void rect(uint8_t *plane, int x0, int y0, int w, int h, uint8_t value)
{
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) plane[y * W + x] = value;
}

/* Three grey images (pixel 64, 128, 192) and their class-index masks:
 *   a: class 1 10x5 at (2, 2), class 2 3x3 at (30, 20), ignore 4x4 at (20, 10)
 *   b: empty (all 0)
 *   c: class 1 10x10 at (5, 12) and 2x2 at (36, 1) */
static char *make_set(int images)
{
    char *dir = rd_tempdir("fingerprint");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *img = rd_subdir(dir, "images"), *masks = rd_subdir(dir, "masks");
    static uint8_t plane[W * H], grey[W * H];
    const char *names[3] = {"a.png", "b.png", "c.png"};
    for (int k = 0; k < images; k++) {
        memset(plane, 0, sizeof plane);
        memset(grey, 64 * (k + 1), sizeof grey);
        if (k == 0) rect(plane, 2, 2, 10, 5, 1), rect(plane, 30, 20, 3, 3, 2), rect(plane, 20, 10, 4, 4, 255);
        if (k == 2) rect(plane, 5, 12, 10, 10, 1), rect(plane, 36, 1, 2, 2, 1);
        CU_ASSERT_FATAL(rd_write_gray_png(img, names[k], W, H, grey));
        CU_ASSERT_FATAL(rd_write_gray_png(masks, names[k], W, H, plane));
    }
    free(img);
    free(masks);
    return dir;
}

static tt_dataset *open_set(const char *dir)
{
    const char *classes[3] = {"background", "one", "two"};
    tt_dataset_options o = {.dir = dir, .classes = classes, .class_count = 3};
    tt_dataset *ds = NULL;
    TH_OK(tt_dataset_open(&o, &ds));
    return ds;
}

static void test_fingerprint(void)
{
    char *dir = make_set(3);
    tt_dataset *ds = open_set(dir);
    tt_fingerprint f;
    TH_OK(tt_fingerprint_compute(ds, 0, &f));
    CU_ASSERT_EQUAL(f.images, 3);
    CU_ASSERT_EQUAL(f.stride, 1);
    CU_ASSERT_EQUAL(f.median_width, W);
    CU_ASSERT_EQUAL(f.median_height, H);
    CU_ASSERT(f.grey);
    for (int c = 0; c < 3; c++) CU_ASSERT_DOUBLE_EQUAL(f.mean[c], 128.0 / 255, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(f.std[0], sqrt((64.0 * 64 * 2 / 3)) / 255, 1e-9);
    CU_ASSERT_EQUAL(f.mask_kind, TT_MASK_CLASS_INDEX);
    CU_ASSERT_EQUAL(f.foreground_classes, 2);
    CU_ASSERT_DOUBLE_EQUAL(f.empty_share, 1.0 / 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(f.ignore_share, 16.0 / (3 * W * H), 1e-12);
    double labelled = 3 * W * H - 16;
    CU_ASSERT_DOUBLE_EQUAL(f.foreground_share, (50 + 9 + 100 + 4) / labelled, 1e-12);
    /* class 1: regions of 50, 100 and 4 px; extents 10, 10, 2 */
    const tt_class_fingerprint *one = &f.cls[1], *two = &f.cls[2];
    CU_ASSERT_EQUAL(one->regions, 3);
    CU_ASSERT_EQUAL(one->images, 2);
    CU_ASSERT_DOUBLE_EQUAL(one->median_area, 50, 0);
    CU_ASSERT_DOUBLE_EQUAL(one->min_area, 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(one->max_area, 100, 0);
    CU_ASSERT_DOUBLE_EQUAL(one->typical_area, 100, 0); /* 104 of its 154 px lie in the big ones */
    CU_ASSERT_DOUBLE_EQUAL(one->typical_extent, 10, 0);
    CU_ASSERT_DOUBLE_EQUAL(one->small_area, 50, 0);    /* the 4 px speck is under 5% */
    CU_ASSERT_DOUBLE_EQUAL(one->pixel_share, 154 / labelled, 1e-12);
    CU_ASSERT_EQUAL(two->regions, 1);
    CU_ASSERT_DOUBLE_EQUAL(two->typical_area, 9, 0);
    CU_ASSERT_EQUAL(f.cls[0].regions, 0); /* the background is no region */
    /* at most 2 images read: a and c (evenly spread) */
    TH_OK(tt_fingerprint_compute(ds, 2, &f));
    CU_ASSERT_EQUAL(f.images_read, 2);
    CU_ASSERT_DOUBLE_EQUAL(f.empty_share, 0.5, 1e-12);
    tt_dataset_destroy(ds);
    rd_remove(dir);
}

/* A device of 1 GiB, CPU. */
static tt_device_info cpu_device(void)
{
    tt_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "test CPU");
    snprintf(d.type, sizeof d.type, "CPU");
    d.global_mem_bytes = d.max_alloc_bytes = d.max_binding_bytes = 1ull << 30;
    d.compute_units = 2;
    d.base_align_bytes = 128;
    return d;
}

static int choice_int(const tt_run_plan *p, const char *option)
{
    const tt_plan_choice *c = tt_run_plan_find(p, option);
    CU_ASSERT_PTR_NOT_NULL(c);
    return c ? atoi(c->value) : -1;
}

/* A set of `images` (make_set), opened and fingerprinted, a CPU device and
 * a plan to fill; planned_free() undoes it. */
typedef struct planned {
    char *dir;
    tt_dataset *ds;
    tt_fingerprint f;
    tt_device_info device;
    tt_run_plan *plan;
} planned;

static planned plan_set(int images)
{
    planned p = {.dir = make_set(images), .device = cpu_device()};
    p.ds = open_set(p.dir);
    TH_OK(tt_fingerprint_compute(p.ds, 0, &p.f));
    p.plan = calloc(1, sizeof *p.plan);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p.plan);
    return p;
}

static void planned_free(planned *p)
{
    free(p->plan);
    tt_dataset_destroy(p->ds);
    rd_remove(p->dir);
}

/* Plans with the defaults and `limit`, nothing given. */
static tt_status plan_with(planned *p, uint64_t limit, tt_train_options *o)
{
    tt_train_options_default(o);
    o->mem_limit = limit;
    return tt_run_plan_make(&p->f, &p->device, o, NULL, p->plan);
}

static void test_plan(void)
{
    planned p = plan_set(3);
    tt_run_plan *plan = p.plan;
    tt_train_options o;
    TH_OK(plan_with(&p, 0, &o));
    /* the smallest side (30 px) bounds the tile; class index: no Dice, no min-size */
    CU_ASSERT_STRING_EQUAL(tt_run_plan_find(plan, "tile")->value, "16x16");
    CU_ASSERT_PTR_NULL(tt_run_plan_find(plan, "loss"));
    CU_ASSERT_PTR_NULL(tt_run_plan_find(plan, "min-size"));
    CU_ASSERT_EQUAL(choice_int(plan, "micro-batch") * choice_int(plan, "accum") >= 8, 1);
    CU_ASSERT_STRING_EQUAL(tt_run_plan_find(plan, "base-channels")->value, "8");
    /* the options hold what the choices say */
    CU_ASSERT(o.tile[0] == 16 && o.tile[1] == 16 && o.base_channels == 8);
    CU_ASSERT_EQUAL(o.micro_batch, choice_int(plan, "micro-batch"));
    CU_ASSERT_EQUAL(o.accum, choice_int(plan, "accum"));
    CU_ASSERT_DOUBLE_EQUAL(o.lr, 1e-2, 0);
    CU_ASSERT_STRING_EQUAL(o.schedule, "cosine");
    /* train's --help marks what a plan chooses: every choice is among them */
    for (int i = 0; i < plan->count; i++) CU_ASSERT(tt_run_plan_chooses(plan->choices[i].option));
    CU_ASSERT(!tt_run_plan_chooses("seed") && !tt_run_plan_chooses("data"));
    /* a limit not even one 16 px crop fits (checkpointing on): an error, no
     * plan, the options as they were */
    tt_train_options before;
    tt_train_options_default(&before);
    before.mem_limit = 16u << 10;
    tt_status s = plan_with(&p, 16u << 10, &o);
    if (s) printf("\n  16 KiB: %s", tt_status_message(s));
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_OUT_OF_MEMORY);
    CU_ASSERT(s && strstr(tt_status_message(s), "no configuration fits") != NULL);
    CU_ASSERT(memcmp(&o, &before, sizeof o) == 0);
    tt_status_free(s);
    /* under a tight limit the micro-batch the plan takes fits, by the estimate
     * of the run its choices make */
    uint64_t limit = 400u << 10; /* about 4 images of 16x16 */
    TH_OK(plan_with(&p, limit, &o));
    CU_ASSERT_PTR_NOT_NULL(tt_run_plan_find(plan, "depth"));
    CU_ASSERT_PTR_NOT_NULL(tt_run_plan_find(plan, "base-channels"));
    CU_ASSERT_EQUAL(choice_int(plan, "micro-batch") > 0, 1);
    CU_ASSERT_EQUAL(o.tile[0], 16);
    int micro = o.micro_batch;
    CU_ASSERT_EQUAL(micro, choice_int(plan, "micro-batch"));
    tt_model_spec m;
    TH_OK(tt_recipe_model(&o, 3, &m));
    uint64_t peak = 0, next = 0;
    TH_OK(tt_fit_estimate(&p.device, &o, &m, TT_MASK_CLASS_INDEX, 1, micro, o.tile, m.checkpointing, &peak));
    TH_OK(tt_fit_estimate(&p.device, &o, &m, TT_MASK_CLASS_INDEX, 1, micro + 1, o.tile, m.checkpointing, &next));
    printf("\n  limit %llu: micro-batch %d (%s), estimate %llu; one more %llu", (unsigned long long)limit,
           micro, tt_norm_kind_name(o.norm), (unsigned long long)peak, (unsigned long long)next);
    CU_ASSERT(peak <= limit);
    CU_ASSERT(micro >= 8 || next > limit);
    if (micro < 4) CU_ASSERT_EQUAL(o.norm, TT_NORM_GROUP);
    planned_free(&p);
}

/* Options given by flags stay, and the rules plan around them. */
static void test_plan_given(void)
{
    planned p = plan_set(3);
    tt_run_plan *plan = p.plan;
    tt_train_options o;
    tt_train_options_default(&o);
    unsigned char given[TT_TRAIN_OPTION_MAX] = {0};
    char *argv[] = {"train", "--tile", "24x24", "--micro-batch", "2", "--norm", "batch",
                    "--lr", "0.003", "--steps", "7"};
    int help = 0;
    TH_OK(tt_opt_parse_args_given(tt_train_option_table, tt_train_option_count, &o, 11, argv, 1,
                                  &help, given));
    TH_OK(tt_run_plan_make(&p.f, &p.device, &o, given, plan));
    CU_ASSERT(o.tile[0] == 24 && o.tile[1] == 24 && o.micro_batch == 2);
    CU_ASSERT_EQUAL(o.norm, TT_NORM_BATCH);
    CU_ASSERT_DOUBLE_EQUAL(o.lr, 0.003, 0);
    CU_ASSERT_EQUAL(o.steps, 7);
    /* no choice for what was given; the rest planned around it */
    const char *kept[] = {"tile", "micro-batch", "norm", "lr", "steps"};
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        CU_ASSERT_PTR_NULL(tt_run_plan_find(plan, kept[i]));
    CU_ASSERT_EQUAL(choice_int(plan, "accum"), 4);       /* 2 x 4: the plan's batch of 8 */
    CU_ASSERT_EQUAL(choice_int(plan, "depth"), 1);       /* a 24 px crop: one level down */
    CU_ASSERT_EQUAL(choice_int(plan, "val-every"), 2);   /* a third of the 7 steps given */
    CU_ASSERT_EQUAL(o.depth, 1);
    planned_free(&p);
}

static void test_refused(void)
{
    /* one image: nothing to validate on */
    planned p = plan_set(1);
    tt_train_options o;
    tt_status s = plan_with(&p, 0, &o);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "at least 2") != NULL);
    tt_status_free(s);
    /* pixels that do not decode (a valid header) are named */
    char *img = rd_subdir(p.dir, "images");
    size_t size = 0;
    unsigned char *bytes = rd_read(img, "a.png", &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    for (size_t i = size / 2; i < size - 12; i++) bytes[i] ^= 0x5a; /* IDAT scrambled, IEND kept */
    CU_ASSERT_FATAL(rd_write_bytes(img, "a.png", bytes, size));
    tt_dataset_destroy(p.ds);
    p.ds = open_set(p.dir);
    s = tt_fingerprint_compute(p.ds, 0, &p.f);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT(s && strstr(tt_status_message(s), "a.png") != NULL);
    if (s) printf("\n  corrupt pixels: %s", tt_status_message(s));
    tt_status_free(s);
    free(bytes);
    free(img);
    planned_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fingerprint of a known folder set", test_fingerprint},
        {"plan: choices, and a micro-batch that fits --mem-limit", test_plan},
        {"plan: given options stay, the rules plan around them", test_plan_given},
        {"plan refuses one image; unreadable pixels named", test_refused},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("fingerprint", tests, TH_HOST);
}
