/* --loss and --class-weights: terms parsed with their keys and defaults,
 * the text written back, errors naming the term, the mask kinds each name
 * takes, and the window's counts (valid items, weights, images). */
#include <string.h>

#include "harness.h"
#include "train/loss_spec.h"

static void expect_error(const char *spec, tt_mask_kind kind, const char *needle)
{
    tt_loss_spec s;
    tt_status st = tt_loss_spec_parse(spec, kind, &s);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    if (st) {
        int found = strstr(tt_status_message(st), needle) != NULL;
        if (!found) printf("\n    '%s': %s (wanted '%s')", spec, tt_status_message(st), needle);
        CU_ASSERT(found);
    }
    tt_status_free(st);
}

static void test_parse_and_format(void)
{
    static const char *const cases[][2] = {
        /* text, text written back */
        {"bce", "bce"},
        {"bce+0.5*dice", "bce+0.5*dice"},
        {"focal:gamma=1:alpha=0.25", "focal:gamma=1:alpha=0.25"},
        {"focal:gamma=2", "focal"},
        {"2*dice:reduce=window:smooth=0.1+lovasz", "2*dice:smooth=0.1:reduce=window+lovasz"},
        {"tversky:alpha=0.3:beta=0.7", "tversky"},
        {"tversky:beta=0.9:reduce=image", "tversky:beta=0.9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_loss_spec s;
        TH_OK(tt_loss_spec_parse(cases[i][0], TT_MASK_MULTI_LABEL, &s));
        char text[256];
        tt_loss_spec_format(&s, text, sizeof text);
        CU_ASSERT_STRING_EQUAL(text, cases[i][1]);
        tt_loss_spec again;
        TH_OK(tt_loss_spec_parse(text, TT_MASK_MULTI_LABEL, &again));
        CU_ASSERT(memcmp(&s, &again, sizeof s) == 0);
    }
    tt_loss_spec s;
    TH_OK(tt_loss_spec_parse("0.5*ce+dice:reduce=window:smooth=2+focal:alpha=0.1",
                             TT_MASK_CLASS_INDEX, &s));
    CU_ASSERT_EQUAL(s.count, 3);
    CU_ASSERT_EQUAL(s.terms[0].kind, TT_LOSS_CE);
    CU_ASSERT_DOUBLE_EQUAL(s.terms[0].weight, 0.5, 0);
    CU_ASSERT_EQUAL(s.terms[1].kind, TT_LOSS_DICE);
    CU_ASSERT_EQUAL(s.terms[1].per_window, 1);
    CU_ASSERT_DOUBLE_EQUAL(s.terms[1].smooth, 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(s.terms[1].alpha, 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(s.terms[2].gamma, 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(s.terms[2].alpha, 0.1, 0);
    CU_ASSERT(tt_loss_spec_two_pass(&s));
    CU_ASSERT_EQUAL(tt_loss_term_normaliser(&s.terms[0], TT_MASK_CLASS_INDEX), TT_NORMALISE_WEIGHTS);
    CU_ASSERT_EQUAL(tt_loss_term_normaliser(&s.terms[1], TT_MASK_CLASS_INDEX), TT_NORMALISE_ONE);
    CU_ASSERT_EQUAL(tt_loss_term_normaliser(&s.terms[2], TT_MASK_CLASS_INDEX), TT_NORMALISE_ITEMS);
    /* auto: the mask kind's own */
    TH_OK(tt_loss_spec_parse("auto", TT_MASK_CLASS_INDEX, &s));
    CU_ASSERT(s.count == 1 && s.terms[0].kind == TT_LOSS_CE && !tt_loss_spec_two_pass(&s));
    TH_OK(tt_loss_spec_parse("", TT_MASK_MULTI_LABEL, &s));
    CU_ASSERT(s.count == 1 && s.terms[0].kind == TT_LOSS_BCE);
}

static void test_errors(void)
{
    expect_error("bce+", TT_MASK_MULTI_LABEL, "empty term");
    expect_error("bce++dice", TT_MASK_MULTI_LABEL, "empty term");
    expect_error("hinge", TT_MASK_MULTI_LABEL, "unknown loss name");
    expect_error("ce", TT_MASK_MULTI_LABEL, "use bce");
    expect_error("bce", TT_MASK_CLASS_INDEX, "use ce");
    expect_error("-1*dice", TT_MASK_MULTI_LABEL, "weight");
    expect_error("x*dice", TT_MASK_MULTI_LABEL, "weight");
    expect_error("focal:gamma", TT_MASK_MULTI_LABEL, "KEY=VALUE");
    expect_error("focal:gamma=-1", TT_MASK_MULTI_LABEL, "from 0 to 10");
    expect_error("focal:beta=1", TT_MASK_MULTI_LABEL, "it takes gamma, alpha");
    expect_error("dice:reduce=batch", TT_MASK_MULTI_LABEL, "reduce=batch");
    expect_error("tversky:alpha=0:beta=0", TT_MASK_MULTI_LABEL, "alpha + beta");
    expect_error("bce+dice+dice", TT_MASK_MULTI_LABEL, "named twice");
    expect_error("bce+dice+focal+lovasz+tversky", TT_MASK_MULTI_LABEL, "at most 4");
}

static void test_class_weights(void)
{
    float w[TT_LOSS_CLASSES_MAX];
    TH_OK(tt_class_weights_parse("", 3, w));
    CU_ASSERT(w[0] == 1 && w[1] == 1 && w[2] == 1);
    TH_OK(tt_class_weights_parse("1,2.5,0", 3, w));
    CU_ASSERT(w[0] == 1 && w[1] == 2.5f && w[2] == 0);
    static const char *const bad[][2] = {
        {"1,2", "2 values for 3 classes"}, {"1,2,3,4", "4 values for 3 classes"},
        {"1,x,3", "value 2"}, {"1,-2,3", "value 2"}, {"0,0,0", "every weight is 0"},
        {"1,,3", "value 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tt_status st = tt_class_weights_parse(bad[i][0], 3, w);
        CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
        CU_ASSERT(st && strstr(tt_status_message(st), bad[i][1]) != NULL);
        if (st && !strstr(tt_status_message(st), bad[i][1]))
            printf("\n    '%s': %s", bad[i][0], tt_status_message(st));
        tt_status_free(st);
    }
}

static void test_counts(void)
{
    /* class index: 2 images of 2x2, classes 3; labels 255 ignored, 7 invalid */
    const uint8_t labels[8] = {0, 1, 2, 255, 2, 2, 7, 1};
    const float weights[3] = {1, 2, 0.5f};
    tt_loss_counts c = {0};
    tt_loss_count(&c, labels, 2, 1, 4, 3, TT_MASK_CLASS_INDEX, 255, weights);
    CU_ASSERT_DOUBLE_EQUAL(c.items, 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.weights, 1 + 2 + 0.5 + 0.5 + 0.5 + 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.images, 2, 0);
    tt_loss_count(&c, labels, 1, 1, 4, 3, TT_MASK_CLASS_INDEX, 255, NULL); /* adds */
    CU_ASSERT_DOUBLE_EQUAL(c.items, 9, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.weights, 6.5 + 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.images, 3, 0);
    /* multi-label: 1 image, 2 planes of 4: 0/1 valid, 255 ignored, 2 invalid */
    const uint8_t planes[8] = {0, 1, 255, 1, 2, 0, 0, 255};
    tt_loss_counts m = {0};
    tt_loss_count(&m, planes, 1, 2, 4, 2, TT_MASK_MULTI_LABEL, 255, weights);
    CU_ASSERT_DOUBLE_EQUAL(m.items, 5, 0);
    CU_ASSERT_DOUBLE_EQUAL(m.weights, 5, 0);
    tt_loss_spec s;
    TH_OK(tt_loss_spec_parse("bce+dice+lovasz", TT_MASK_MULTI_LABEL, &s));
    CU_ASSERT_DOUBLE_EQUAL(tt_loss_counts_of(&m, &s.terms[0], TT_MASK_MULTI_LABEL), 5, 0);
    CU_ASSERT_DOUBLE_EQUAL(tt_loss_counts_of(&m, &s.terms[1], TT_MASK_MULTI_LABEL), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(tt_loss_counts_of(&m, &s.terms[2], TT_MASK_MULTI_LABEL), 1, 0);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"terms, keys, defaults, written back", test_parse_and_format},
        {"bad specs name the term and the fix", test_errors},
        {"--class-weights", test_class_weights},
        {"the window's counts", test_counts},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("loss_spec", tests, TH_HOST);
}
