/* The CSV reader: RFC 4180 quoting, CRLF, line numbers in records and errors. */
#include <stdlib.h>
#include <string.h>

#include "io/csv.h"
#include "harness.h"

static tt_csv *parse(const char *text)
{
    tt_csv *csv = NULL;
    TH_OK(tt_csv_parse(text, strlen(text), "t.csv", &csv));
    return csv;
}

static void expect_error(const char *text, const char *part)
{
    tt_csv *csv = NULL;
    tt_status s = tt_csv_parse(text, strlen(text), "t.csv", &csv);
    CU_ASSERT_PTR_NULL(csv);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    int found = s && strstr(tt_status_message(s), part) != NULL;
    if (!found) printf("\n  message '%s' lacks '%s'", s ? tt_status_message(s) : "(none)", part);
    CU_ASSERT(found);
    tt_status_free(s);
}

static void test_plain_and_crlf(void)
{
    tt_csv *csv = parse("\xEF\xBB\xBF" "a,b,c\r\n1,,3\r\n\r\nx,y,\n");
    CU_ASSERT_EQUAL_FATAL(csv->count, 3);
    CU_ASSERT_STRING_EQUAL(csv->records[0].fields[0], "a");
    CU_ASSERT_EQUAL(csv->records[1].count, 3);
    CU_ASSERT_STRING_EQUAL(csv->records[1].fields[1], "");
    CU_ASSERT_EQUAL(csv->records[2].line, 4); /* the blank line 3 is skipped, counted */
    CU_ASSERT_EQUAL(csv->records[2].count, 3);
    CU_ASSERT_STRING_EQUAL(csv->records[2].fields[2], "");
    tt_csv_destroy(csv);
}

static void test_quotes(void)
{
    tt_csv *csv = parse("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\nnext,\"\"\n");
    CU_ASSERT_EQUAL_FATAL(csv->count, 2);
    CU_ASSERT_EQUAL_FATAL(csv->records[0].count, 3);
    CU_ASSERT_STRING_EQUAL(csv->records[0].fields[0], "a,b");
    CU_ASSERT_STRING_EQUAL(csv->records[0].fields[1], "say \"hi\"");
    CU_ASSERT_STRING_EQUAL(csv->records[0].fields[2], "two\nlines");
    CU_ASSERT_EQUAL(csv->records[1].line, 3);
    CU_ASSERT_STRING_EQUAL(csv->records[1].fields[1], "");
    tt_csv_destroy(csv);
    csv = parse("last,\"no newline\"");
    CU_ASSERT_EQUAL(csv->count, 1);
    CU_ASSERT_STRING_EQUAL(csv->records[0].fields[1], "no newline");
    tt_csv_destroy(csv);
}

static void test_errors(void)
{
    expect_error("a,b\n\"open,c\n", "t.csv:2: quoted field never closed");
    expect_error("a,b\nx,y\"z\n", "t.csv:2: quote inside an unquoted field");
    expect_error("a,b\n\n\"x\"y,z\n", "t.csv:3: text after a closing quote");
    tt_csv *csv = NULL;
    tt_status s = tt_csv_parse("a,\0b\n", 5, "t.csv", &csv);
    CU_ASSERT(s && strstr(tt_status_message(s), "t.csv:1: NUL byte") != NULL);
    tt_status_free(s);
    s = tt_csv_read_file("/nonexistent/x.csv", &csv);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(strstr(tt_status_message(s), "/nonexistent/x.csv") != NULL);
    tt_status_free(s);
    csv = parse("");
    CU_ASSERT_EQUAL(csv->count, 0);
    tt_csv_destroy(csv);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"plain fields, CRLF, BOM, blank lines", test_plain_and_crlf},
        {"quoted fields", test_quotes},
        {"errors with line numbers", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("csv", tests, TH_HOST);
}
