/* The UNet's tensors carry PyTorch's names, shapes and order (python/tiletrain_torch.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "model/unet_config.h"

/* Runs tiletrain_torch.py names (or $TT_TORCH_UNET's); NULL (after saying
 * why) when torch is absent. */
static cJSON *torch_names(const char *args)
{
    const char *script = getenv("TT_TORCH_UNET");
    if (!script) script = TT_SOURCE_DIR "/python/tiletrain_torch.py";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, TH_PYTHON " '%s' names %s 2>/dev/null", script, args);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    int rc = pclose(p);
    if (rc != 0 || n == 0) {
        printf("\n  SKIPPED torch comparison: '%s' did not run (needs python3-torch and "
               "python/tiletrain_torch.py or $TT_TORCH_UNET)\n", cmd);
        return NULL;
    }
    return cJSON_Parse(buf);
}

static void compare_with_torch(const tt_unet_config *c, const char *args)
{
    tt_param_table t = {0};
    TH_OK(tt_unet_params(c, &t));
    cJSON *root = torch_names(args);
    if (!root) {
        tt_params_free(&t);
        return;
    }
    int i = 0;
    cJSON *item;
    cJSON_ArrayForEach(item, root)
    {
        if (strstr(item->string, "num_batches_tracked")) continue; /* an int64 host counter */
        CU_ASSERT_FATAL(i < t.count);
        CU_ASSERT_STRING_EQUAL(t.params[i].name, item->string);
        CU_ASSERT_EQUAL(t.params[i].ndim, cJSON_GetArraySize(item));
        for (int d = 0; d < t.params[i].ndim; d++)
            CU_ASSERT_EQUAL(t.params[i].shape[d], cJSON_GetArrayItem(item, d)->valueint);
        i++;
    }
    CU_ASSERT_EQUAL(i, t.count);
    cJSON_Delete(root);
    tt_params_free(&t);
}

static void test_group_norm_names(void)
{
    tt_unet_config c = tt_unet_config_default();
    compare_with_torch(&c, "--base-channels 16 --depth 3 --classes 4 --groups 8");
}

static void test_batch_norm_names(void)
{
    tt_unet_config c = {.in_channels = 3, .classes = 2, .base_channels = 4, .depth = 2,
                        .norm = TT_NORM_BATCH, .groups = 1};
    compare_with_torch(&c, "--base-channels 4 --depth 2 --classes 2 --norm batch");
}

static void test_no_norm_names(void)
{
    tt_unet_config c = {.in_channels = 3, .classes = 3, .base_channels = 8, .depth = 1,
                        .norm = TT_NORM_NONE, .groups = 1};
    compare_with_torch(&c, "--base-channels 8 --depth 1 --classes 3 --norm none");
}

/* Known by hand: depth 1, base 2, 1 class, no norm. */
static void test_counts_by_hand(void)
{
    tt_unet_config c = {.in_channels = 3, .classes = 1, .base_channels = 2, .depth = 1,
                        .norm = TT_NORM_NONE, .groups = 1};
    tt_param_table t = {0};
    TH_OK(tt_unet_params(&c, &t));
    /* enc.0: 2x3x3x3+2, 2x2x3x3+2; bottleneck: 4x2x3x3+4, 4x4x3x3+4;
     * up.0: 4x2x2x2+2; dec.0: 2x4x3x3+2, 2x2x3x3+2; head: 1x2+1 */
    size_t want = 54 + 2 + 36 + 2 + 72 + 4 + 144 + 4 + 32 + 2 + 72 + 2 + 36 + 2 + 2 + 1;
    size_t got = 0;
    for (int i = 0; i < t.count; i++) got += t.params[i].count;
    CU_ASSERT_EQUAL(got, want);
    CU_ASSERT_EQUAL(t.count, 16);
    CU_ASSERT_EQUAL(t.state_floats, 0);
    /* offsets are 16-float aligned and do not overlap */
    for (int i = 0; i + 1 < t.count; i++) {
        CU_ASSERT_EQUAL(t.params[i].offset % 16, 0);
        CU_ASSERT(t.params[i].offset + t.params[i].count <= t.params[i + 1].offset);
    }
    const tt_param *up = tt_params_find(&t, "up.0.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(up);
    CU_ASSERT_EQUAL(up->fan_in, 2 * 2 * 2); /* ConvTranspose: dim 1 x kH x kW */
    tt_params_free(&t);
}

static void test_init_distribution(void)
{
    tt_unet_config c = tt_unet_config_default();
    tt_param_table t = {0};
    TH_OK(tt_unet_params(&c, &t));
    float *w = malloc(t.trainable_floats * sizeof *w);
    float *w2 = malloc(t.trainable_floats * sizeof *w2);
    tt_params_init(&t, 7, w, NULL);
    tt_params_init(&t, 7, w2, NULL);
    CU_ASSERT_EQUAL(memcmp(w, w2, t.trainable_floats * sizeof *w), 0); /* seeded */
    const tt_param *p = tt_params_find(&t, "bottleneck.conv2.weight");
    double bound = 1.0 / sqrt(p->fan_in), maxabs = 0, mean = 0;
    for (size_t j = 0; j < p->count; j++) {
        double v = w[p->offset + j];
        maxabs = fmax(maxabs, fabs(v));
        mean += v / (double)p->count;
    }
    CU_ASSERT(maxabs <= bound && maxabs > 0.95 * bound);
    CU_ASSERT(fabs(mean) < 0.05 * bound);
    const tt_param *g = tt_params_find(&t, "enc.0.norm1.weight");
    CU_ASSERT_EQUAL(w[g->offset], 1.0f);
    const tt_param *b = tt_params_find(&t, "enc.0.norm1.bias");
    CU_ASSERT_EQUAL(w[b->offset], 0.0f);
    tt_params_init(&t, 8, w2, NULL);
    CU_ASSERT(memcmp(w, w2, t.trainable_floats * sizeof *w) != 0);
    free(w), free(w2);
    tt_params_free(&t);
}

static void test_bad_config(void)
{
    tt_unet_config c = tt_unet_config_default();
    c.groups = 5;
    tt_param_table t = {0};
    tt_status s = tt_unet_params(&c, &t);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "groups 5") != NULL);
    tt_status_free(s);
    tt_params_free(&t);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"names match torch (group norm)", test_group_norm_names},
        {"names match torch (batch norm)", test_batch_norm_names},
        {"names match torch (no norm)", test_no_norm_names},
        {"counts and layout by hand", test_counts_by_hand},
        {"init: seeded, PyTorch bounds", test_init_distribution},
        {"bad config is a clear error", test_bad_config},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("unet_params", tests, TH_HOST);
}
