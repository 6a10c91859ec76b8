/*
 * Kaggle RLE: hand-computed masks (column-major order, 1-based starts),
 * round trips on odd sizes, and every kind of bad input.
 */
#include <stdlib.h>
#include <string.h>

#include "data/rle.h"
#include "harness.h"

/* Expects a TT_ERR_FORMAT whose message contains `part`. */
static void expect_error(const char *text, int w, int h, const char *part)
{
    uint8_t *plane = malloc((size_t)w * (size_t)h);
    tt_status s = tt_rle_decode(text, w, h, plane);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    int found = strstr(tt_status_message(s), part) != NULL;
    if (!found) printf("\n  '%s': message '%s' lacks '%s'", text, tt_status_message(s), part);
    CU_ASSERT(found);
    tt_status_free(s);
    /* validation alone gives the same verdict */
    s = tt_rle_decode(text, w, h, NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    tt_status_free(s);
    free(plane);
}

static void test_column_major_by_hand(void)
{
    /* 3 wide, 2 high: pixel 1 = (row 0, col 0), 2 = (1, 0), 3 = (0, 1), 4 = (1, 1), 5 = (0, 2), 6 = (1, 2) */
    uint8_t plane[6];
    TH_OK(tt_rle_decode("2 3", 3, 2, plane));
    const uint8_t want1[6] = {0, 1, 0, /* row 1 */ 1, 1, 0};
    CU_ASSERT_EQUAL(memcmp(plane, want1, 6), 0);
    TH_OK(tt_rle_decode("1 1 6 1", 3, 2, plane));
    const uint8_t want2[6] = {1, 0, 0, 0, 0, 1};
    CU_ASSERT_EQUAL(memcmp(plane, want2, 6), 0);
    /* a single column image: column-major equals row-major */
    uint8_t column[5];
    TH_OK(tt_rle_decode("  2 2\t5 1 \r\n", 1, 5, column));
    const uint8_t want3[5] = {0, 1, 1, 0, 1};
    CU_ASSERT_EQUAL(memcmp(column, want3, 5), 0);
    /* adjacent runs are allowed */
    TH_OK(tt_rle_decode("1 2 3 4", 3, 2, plane));
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(plane[i], 1);
    char *text = NULL;
    TH_OK(tt_rle_encode(plane, 3, 2, &text));
    CU_ASSERT_STRING_EQUAL(text, "1 6");
    free(text);
    TH_OK(tt_rle_encode(want1, 3, 2, &text));
    CU_ASSERT_STRING_EQUAL(text, "2 3");
    free(text);
    TH_OK(tt_rle_encode(want2, 3, 2, &text));
    CU_ASSERT_STRING_EQUAL(text, "1 1 6 1");
    free(text);
}

static void test_empty(void)
{
    uint8_t plane[4] = {9, 9, 9, 9};
    TH_OK(tt_rle_decode("", 2, 2, plane));
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(plane[i], 0);
    memset(plane, 9, 4);
    TH_OK(tt_rle_decode(NULL, 2, 2, plane));
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(plane[i], 0);
    TH_OK(tt_rle_decode("   ", 2, 2, plane));
    char *text = NULL;
    TH_OK(tt_rle_encode(plane, 2, 2, &text));
    CU_ASSERT_STRING_EQUAL(text, "");
    free(text);
}

static void test_round_trip(void)
{
    const int sizes[][2] = {{1, 1}, {7, 5}, {13, 1}, {1, 13}, {33, 17}, {64, 3}};
    uint64_t seed = 42;
    int checked = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        uint8_t *plane = malloc((size_t)w * h), *back = malloc((size_t)w * h);
        for (int density = 0; density <= 4; density++) {
            for (int i = 0; i < w * h; i++) plane[i] = th_uniform(&seed, 0, 4) < density;
            char *text = NULL;
            TH_OK(tt_rle_encode(plane, w, h, &text));
            TH_OK(tt_rle_decode(text, w, h, back));
            CU_ASSERT_EQUAL(memcmp(plane, back, (size_t)w * h), 0);
            /* the encoding has the fewest runs: no two adjacent */
            char *again = NULL;
            TH_OK(tt_rle_encode(back, w, h, &again));
            CU_ASSERT_STRING_EQUAL(text, again);
            free(text);
            free(again);
            checked++;
        }
        free(plane);
        free(back);
    }
    printf("\n  round trips: %d planes, 0 mismatches allowed", checked);
}

static void test_bad_odd_count(void) { expect_error("1 2 3", 3, 2, "odd"); }
static void test_bad_not_numeric(void)
{
    expect_error("1 x", 3, 2, "not a number");
    expect_error("1a 2", 3, 2, "'1a'");
    expect_error("1.5 2", 3, 2, "not a number");
}
static void test_bad_zero(void)
{
    expect_error("0 2", 3, 2, "start is 0");
    expect_error("1 0", 3, 2, "length is 0");
}
static void test_bad_negative(void)
{
    expect_error("-1 2", 3, 2, "negative start");
    expect_error("1 -2", 3, 2, "negative length");
}
static void test_bad_past_end(void)
{
    expect_error("5 3", 3, 2, "past the");
    expect_error("7 1", 3, 2, "past the");
    expect_error("1 99999999999999999999999", 3, 2, "too large");
}
static void test_bad_overlap(void) { expect_error("1 3 2 2", 3, 2, "overlaps run 1"); }
static void test_bad_unsorted(void) { expect_error("4 1 1 1", 3, 2, "sorted"); }

static void test_bad_nul(void)
{
    uint8_t plane[6];
    tt_status s = tt_rle_decode_n("1 1\0 3 1", 8, 3, 2, plane);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(strstr(tt_status_message(s), "NUL") != NULL);
    tt_status_free(s);
    /* _n does not read past size */
    TH_OK(tt_rle_decode_n("2 1 junk", 3, 3, 2, plane));
    CU_ASSERT_EQUAL(plane[3], 1);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"column-major order by hand", test_column_major_by_hand},
        {"empty masks", test_empty},
        {"round trip on odd sizes", test_round_trip},
        {"odd token count", test_bad_odd_count},
        {"non-numeric token", test_bad_not_numeric},
        {"zero start or length", test_bad_zero},
        {"negative start or length", test_bad_negative},
        {"run past the end", test_bad_past_end},
        {"overlapping runs", test_bad_overlap},
        {"unsorted runs", test_bad_unsorted},
        {"NUL byte, bounded input", test_bad_nul},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("rle", tests, TH_HOST);
}
