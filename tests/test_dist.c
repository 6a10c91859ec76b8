/*
 * Data parallel (src/dist, train/data_parallel.c).  Alone (test_dist) every
 * collective is the identity and a window's failure is this process's own;
 * under `mpirun -np 2` (test_dist_mpi) the same tests check the sums, the
 * maximum, the gather and the broadcast across ranks, that a failure on
 * rank 1 reaches rank 0 naming the rank and its message, that the gradient
 * arena is summed through the staging buffer, and that weights which differ
 * on one rank are caught.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "train/data_parallel.h"

static tt_dist world;

static void test_collectives(void)
{
    int k = world.size, r = world.rank;
    float f[2] = {(float)(r + 1), 2.0f};
    TH_OK(tt_dist_sum_f32(&world, f, 2));
    CU_ASSERT_DOUBLE_EQUAL(f[0], k * (k + 1) / 2.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(f[1], 2.0 * k, 0);
    double d[3] = {0.25 * r, -1.0 * r, 1e300};
    TH_OK(tt_dist_sum_f64(&world, d, 3));
    CU_ASSERT_DOUBLE_EQUAL(d[0], 0.25 * k * (k - 1) / 2.0, 0);
    double m[2] = {(double)r, -(double)r};
    TH_OK(tt_dist_max_f64(&world, m, 2));
    CU_ASSERT_DOUBLE_EQUAL(m[0], k - 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(m[1], 0, 0);
    uint64_t mine[2] = {10u * (uint64_t)r, 7}, *all = calloc(2 * (size_t)k, sizeof *all);
    TH_OK(tt_dist_gather_u64(&world, mine, 2, all));
    for (int i = 0; i < k; i++) {
        CU_ASSERT_EQUAL(all[2 * i], 10u * (uint64_t)i);
        CU_ASSERT_EQUAL(all[2 * i + 1], 7);
    }
    free(all);
    char text[32];
    snprintf(text, sizeof text, "from %d", r);
    TH_OK(tt_dist_broadcast(&world, text, sizeof text, k - 1));
    char want[32];
    snprintf(want, sizeof want, "from %d", k - 1);
    CU_ASSERT_STRING_EQUAL(text, want);
}

/* A window where the last rank failed: every rank stops, naming it. */
static void test_window_failure(void)
{
    int last = world.size - 1;
    double sums[2] = {1, 2};
    TH_OK(tt_dp_sum_window(&world, sums, 2, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sums[0], world.size, 0);
    tt_status mine = world.rank == last
                         ? tt_error_new(TT_ERR_FORMAT, "image x.png: corrupt")
                         : NULL;
    tt_status s = tt_dp_sum_window(&world, sums, 2, mine);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const char *text = tt_status_message(s);
    printf("\n    rank %d: %s", world.rank, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "image x.png: corrupt"));
    if (world.size > 1) {
        char named[64];
        snprintf(named, sizeof named, "rank %d of %d", last, world.size);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, named));
        CU_ASSERT_EQUAL(tt_status_code(s), world.rank == last ? TT_ERR_FORMAT : TT_ERR_PEER);
    }
    tt_status_free(s);
}

static tt_step *small_engine(void)
{
    tt_step_config c = {.micro_batch = 1, .height = 16, .width = 16, .seed = 3, .planes = 1,
                        .optimizer = {.name = "adamw", .lr = 1e-3, .weight_decay = -1}};
    c.model = tt_model_spec_default();
    c.model.classes = 2, c.model.base_channels = 4, c.model.depth = 1, c.model.groups = 2;
    tt_step *engine = NULL;
    tt_status s = tt_step_create(th_backend(), &c, &engine);
    if (s) th_report_status("tt_step_create", s, __FILE__, __LINE__);
    return engine;
}

static void test_gradient_sum(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    tt_step *engine = small_engine();
    CU_ASSERT_PTR_NOT_NULL_FATAL(engine);
    tt_data_parallel *dp = NULL;
    TH_OK(tt_dp_create(&world, engine, &dp));
    CU_ASSERT((dp != NULL) == (world.size > 1));
    if (dp) {
        size_t n = engine->model->params->trainable_floats;
        float *g = malloc(n * sizeof *g);
        for (size_t i = 0; i < n; i++) g[i] = (float)(world.rank + 1) * (float)(i % 7);
        TH_OK(tt_write(engine->be, tt_mem_of(engine->model->grad_buffer), g, n * sizeof *g));
        TH_OK(tt_dp_sum_grads(dp));
        TH_OK(tt_read(engine->be, g, tt_mem_of(engine->model->grad_buffer), n * sizeof *g));
        double k = world.size, want = k * (k + 1) / 2;
        int wrong = 0;
        for (size_t i = 0; i < n; i++) wrong += g[i] != (float)(want * (double)(i % 7));
        CU_ASSERT_EQUAL(wrong, 0);
        free(g);
    }
    tt_dp_destroy(dp);
    tt_step_destroy(engine);
}

static void test_weights_diverge(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    tt_step *engine = small_engine();
    CU_ASSERT_PTR_NOT_NULL_FATAL(engine);
    tt_data_parallel *dp = NULL;
    TH_OK(tt_dp_create(&world, engine, &dp));
    if (dp) {
        TH_OK(tt_dp_check_weights(dp, 0)); /* the same seed: the same weights */
        size_t n = engine->model->params->trainable_floats;
        float *w = malloc(n * sizeof *w);
        TH_OK(tt_model_get_params(engine->model, w, NULL));
        if (world.rank == world.size - 1) w[n / 2] = nextafterf(w[n / 2], 1e30f); /* one ulp */
        TH_OK(tt_model_set_params(engine->model, w, NULL));
        free(w);
        tt_status s = tt_dp_check_weights(dp, 7);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        char named[64];
        snprintf(named, sizeof named, "weights of rank %d differ from rank 0's after step 7",
                 world.size - 1);
        printf("\n    rank %d: %s", world.rank, tt_status_message(s));
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(s), named));
        tt_status_free(s);
    }
    tt_dp_destroy(dp);
    tt_step_destroy(engine);
}

int main(void)
{
    tt_status s = tt_dist_start(&world);
    if (s) {
        fprintf(stderr, "test_dist: %s\n", tt_status_message(s));
        tt_status_free(s);
        return 1;
    }
    printf("test_dist: rank %d of %d\n", world.rank, world.size);
    CU_TestInfo tests[] = {
        {"sum, max, gather, broadcast", test_collectives},
        {"a failure on the last rank stops every rank, naming it", test_window_failure},
        {"the gradient arena summed through the staging buffer", test_gradient_sum},
        {"weights one ulp apart on one rank are caught", test_weights_diverge},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("dist", tests, TH_OPENCL);
    tt_dist_finish(&world);
    return rc;
}
