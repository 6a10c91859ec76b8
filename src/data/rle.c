/*
 * Kaggle run-length encoding: decode with strict validation, encode.
 * Pixel p (1-based) lies at row (p-1) % height, column (p-1) / height.
 */
#include "data/rle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

/* Longest token quoted back in an error message. */
#define TT_RLE_QUOTE 24

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Parses the decimal token [p, end) into *value.  Returns NULL or an error
 * naming token number `index` (1-based) and saying what is wrong. */
static tt_status parse_token(const char *p, const char *end, size_t index, uint64_t *value)
{
    size_t len = (size_t)(end - p);
    char quoted[TT_RLE_QUOTE + 4];
    size_t q = len < TT_RLE_QUOTE ? len : TT_RLE_QUOTE;
    for (size_t i = 0; i < q; i++) {
        unsigned char c = (unsigned char)p[i];
        quoted[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    strcpy(quoted + q, len > q ? "..." : "");
    const char *what = index % 2 ? "start" : "length";
    if (p[0] == '-')
        return tt_error_new(TT_ERR_FORMAT, "RLE token %zu ('%s'): negative %s; starts and lengths are >= 1",
                            index, quoted, what);
    uint64_t v = 0;
    for (const char *c = p; c < end; c++) {
        if (*c < '0' || *c > '9')
            return tt_error_new(TT_ERR_FORMAT, "RLE token %zu ('%s') is not a number; expected "
                                "space-separated 'start length' pairs", index, quoted);
        if (v > (UINT64_MAX - 9) / 10)
            return tt_error_new(TT_ERR_FORMAT, "RLE token %zu ('%s'): %s too large", index, quoted, what);
        v = v * 10 + (uint64_t)(*c - '0');
    }
    if (v == 0)
        return tt_error_new(TT_ERR_FORMAT, "RLE token %zu: %s is 0; RLE is 1-based and runs are at "
                            "least 1 pixel long", index, what);
    *value = v;
    return NULL;
}

tt_status tt_rle_decode_n(const char *text, size_t size, int width, int height, uint8_t *plane)
{
    TT_ASSERT(width > 0 && height > 0);
    const uint64_t total = (uint64_t)width * (uint64_t)height;
    if (plane) memset(plane, 0, (size_t)total);
    if (!text) return NULL;
    const char *p = text, *end = text + size;
    size_t index = 0;
    uint64_t start = 0, prev_end = 0, prev_start = 0; /* prev_end: one past the last pixel, 0-based */
    for (;;) {
        while (p < end && is_space(*p)) p++;
        if (p == end) break;
        const char *token = p;
        while (p < end && !is_space(*p) && *p != '\0') p++;
        if (p < end && *p == '\0')
            return tt_error_new(TT_ERR_FORMAT, "RLE text holds a NUL byte at offset %zu", (size_t)(p - text));
        uint64_t value = 0;
        index++;
        TT_TRY(parse_token(token, p, index, &value));
        if (index % 2) {
            start = value;
            continue;
        }
        uint64_t first = start - 1, length = value;
        size_t pair = index / 2;
        if (first >= total || length > total - first)
            return tt_error_new(TT_ERR_FORMAT, "RLE run %zu (start %llu, length %llu) ends past the "
                                "image's %llu pixels (%d x %d); is the image size right?", pair,
                                (unsigned long long)start, (unsigned long long)length,
                                (unsigned long long)total, width, height);
        if (pair > 1 && first < prev_end) {
            if (first < prev_start)
                return tt_error_new(TT_ERR_FORMAT, "RLE run %zu (start %llu) comes before run %zu "
                                    "(start %llu): runs must be sorted by start", pair,
                                    (unsigned long long)start, pair - 1,
                                    (unsigned long long)(prev_start + 1));
            return tt_error_new(TT_ERR_FORMAT, "RLE run %zu (start %llu) overlaps run %zu (pixels "
                                "%llu..%llu)", pair, (unsigned long long)start, pair - 1,
                                (unsigned long long)(prev_start + 1), (unsigned long long)prev_end);
        }
        for (uint64_t k = first; plane && k < first + length; k++) {
            uint64_t row = k % (uint64_t)height, col = k / (uint64_t)height;
            plane[row * (uint64_t)width + col] = 1;
        }
        prev_start = first;
        prev_end = first + length;
    }
    if (index % 2)
        return tt_error_new(TT_ERR_FORMAT, "RLE has %zu tokens, an odd count: the last start has "
                            "no length", index);
    return NULL;
}

tt_status tt_rle_decode(const char *text, int width, int height, uint8_t *plane)
{
    return tt_rle_decode_n(text, text ? strlen(text) : 0, width, height, plane);
}

tt_status tt_rle_encode(const uint8_t *plane, int width, int height, char **text)
{
    TT_ASSERT(width > 0 && height > 0 && plane && text);
    *text = NULL;
    size_t capacity = 64, used = 0;
    char *out = tt_malloc(capacity);
    if (!out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "RLE encode: out of host memory");
    out[0] = '\0';
    const uint64_t total = (uint64_t)width * (uint64_t)height;
    uint64_t k = 0;
    while (k < total) {
        uint64_t row = k % (uint64_t)height, col = k / (uint64_t)height;
        if (!plane[row * (uint64_t)width + col]) {
            k++;
            continue;
        }
        uint64_t run_start = k;
        while (k < total && plane[(k % (uint64_t)height) * (uint64_t)width + k / (uint64_t)height]) k++;
        char pair[48];
        int n = snprintf(pair, sizeof pair, "%s%llu %llu", used ? " " : "",
                         (unsigned long long)(run_start + 1), (unsigned long long)(k - run_start));
        if (used + (size_t)n + 1 > capacity) {
            while (used + (size_t)n + 1 > capacity) capacity *= 2;
            char *grown = tt_realloc(out, capacity);
            if (!grown) {
                free(out);
                return tt_error_new(TT_ERR_OUT_OF_MEMORY, "RLE encode: out of host memory");
            }
            out = grown;
        }
        memcpy(out + used, pair, (size_t)n + 1);
        used += (size_t)n;
    }
    *text = out;
    return NULL;
}
