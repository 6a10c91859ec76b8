/*
 * Fuzz target for the data parsers: input byte 0 picks the parser, the rest
 * is its input.
 *   0  RLE: bytes 1, 2 give the width and height (1..64), then the RLE text;
 *      a mask that decodes must encode and decode to the same plane
 *   1  CSV: the whole text; records must have increasing line numbers
 *   2  image headers in memory (stbi_info, size limit, truncation check)
 *   3  mask PNG reading (chunk walk, palette mapping back to indices)
 * Built with libFuzzer (clang -fsanitize=fuzzer) or with fuzz_main.c, a
 * deterministic mutation loop for machines without clang; see run.sh.
 * A broken property aborts, so both drivers report it like a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/csv.h"
#include "data/dataset_probe.h"
#include "data/rle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz property broken: %s\n", what);
    abort();
}

static void fuzz_rle(const uint8_t *data, size_t size)
{
    if (size < 3) return;
    int w = 1 + data[1] % 64, h = 1 + data[2] % 64;
    uint8_t *plane = malloc((size_t)w * h), *back = malloc((size_t)w * h);
    char *text = NULL;
    if (!plane || !back) goto done;
    tt_status s = tt_rle_decode_n((const char *)data + 3, size - 3, w, h, plane);
    tt_status v = tt_rle_decode_n((const char *)data + 3, size - 3, w, h, NULL);
    if (!s != !v) fail("RLE validation and decoding disagree");
    tt_status_free(v);
    if (s) {
        if (!tt_status_message(s)[0]) fail("RLE error without a message");
        tt_status_free(s);
        goto done;
    }
    for (int i = 0; i < w * h; i++)
        if (plane[i] > 1) fail("RLE plane holds a value above 1");
    s = tt_rle_encode(plane, w, h, &text);
    if (s) fail("RLE encode failed on a decoded plane");
    s = tt_rle_decode(text, w, h, back);
    if (s || memcmp(plane, back, (size_t)w * h) != 0) fail("RLE round trip changed the plane");
done:
    free(text);
    free(plane);
    free(back);
}

static void fuzz_csv(const uint8_t *data, size_t size)
{
    tt_csv *csv = NULL;
    tt_status s = tt_csv_parse((const char *)data, size, "fuzz.csv", &csv);
    if (s) {
        if (csv) fail("CSV error with a table");
        tt_status_free(s);
        return;
    }
    int line = 0;
    for (int r = 0; r < csv->count; r++) {
        if (csv->records[r].line <= line || csv->records[r].count < 1) fail("CSV records out of order");
        line = csv->records[r].line;
        for (int f = 0; f < csv->records[r].count; f++)
            if (!csv->records[r].fields[f]) fail("CSV field is NULL");
    }
    tt_csv_destroy(csv);
}

static void fuzz_image(const uint8_t *data, size_t size)
{
    tt_image_header header;
    tt_status s = tt_probe_image_memory(data, size, "fuzz.img", 1 << 20, &header);
    if (!s && (header.width <= 0 || header.height <= 0 ||
               (uint64_t)header.width * (uint64_t)header.height > (1 << 20)))
        fail("image probe accepted a bad size");
    tt_status_free(s);
}

static void fuzz_mask(const uint8_t *data, size_t size)
{
    int w = 0, h = 0;
    uint8_t *plane = NULL;
    tt_status s = tt_probe_mask_png(data, size, "fuzz.png", 1 << 20, &w, &h, &plane);
    if (!s) {
        volatile uint8_t sum = 0; /* touch every byte: ASan checks the size */
        for (size_t i = 0; i < (size_t)w * (size_t)h; i++) sum = (uint8_t)(sum + plane[i]);
        (void)sum;
    }
    free(plane);
    tt_status_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    switch (data[0] % 4) {
    case 0: fuzz_rle(data, size); break;
    case 1: fuzz_csv(data + 1, size - 1); break;
    case 2: fuzz_image(data + 1, size - 1); break;
    default: fuzz_mask(data + 1, size - 1); break;
    }
    return 0;
}
