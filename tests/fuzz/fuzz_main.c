/*
 * A stand-in for libFuzzer where clang is missing: reads the seed files
 * named on the command line, then mutates them deterministically (bit
 * flips, byte sets, interesting values, cuts, duplicated and spliced
 * ranges) and feeds LLVMFuzzerTestOneInput until the time is up.
 * usage: fuzz_main SECONDS SEED... ; a crash or abort is the failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 8192

static uint64_t next(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SECONDS SEED...\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]);
    int seeds = argc - 2;
    uint8_t **seed = calloc((size_t)seeds, sizeof *seed);
    size_t *seed_size = calloc((size_t)seeds, sizeof *seed_size);
    for (int i = 0; i < seeds; i++) {
        FILE *f = fopen(argv[i + 2], "rb");
        seed[i] = malloc(MAX_INPUT);
        if (!f || !seed[i]) {
            fprintf(stderr, "cannot read seed %s\n", argv[i + 2]);
            return 2;
        }
        seed_size[i] = fread(seed[i], 1, MAX_INPUT, f);
        fclose(f);
        LLVMFuzzerTestOneInput(seed[i], seed_size[i]);
    }
    static const uint8_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, '0', '9', ' ', ',', '"', '\n', '\r', '-'};
    uint8_t *buf = malloc(MAX_INPUT * 2);
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    long runs = 0;
    clock_t start = clock();
    while ((double)(clock() - start) / CLOCKS_PER_SEC < seconds) {
        for (int batch = 0; batch < 256; batch++, runs++) {
            int s = (int)(next(&state) % (uint64_t)seeds);
            size_t n = seed_size[s];
            memcpy(buf, seed[s], n);
            int mutations = 1 + (int)(next(&state) % 8);
            for (int m = 0; m < mutations; m++) {
                uint64_t r = next(&state);
                size_t at = n ? (size_t)(r >> 8) % n : 0;
                switch (r % 7) {
                case 0: if (n) buf[at] ^= (uint8_t)(1u << (r >> 40) % 8); break;
                case 1: if (n) buf[at] = (uint8_t)(r >> 32); break;
                case 2: if (n) buf[at] = interesting[(r >> 32) % sizeof interesting]; break;
                case 3: if (n > 1) n = 1 + (size_t)(r >> 32) % n; break; /* cut */
                case 4: { /* duplicate a range at the end */
                    size_t len = n ? 1 + (size_t)(r >> 32) % (n - at) : 0;
                    if (n + len <= MAX_INPUT) { memmove(buf + n, buf + at, len); n += len; }
                    break;
                }
                case 5: { /* splice another seed's tail */
                    int o = (int)((r >> 32) % (uint64_t)seeds);
                    size_t from = seed_size[o] ? (size_t)(r >> 48) % seed_size[o] : 0;
                    size_t len = seed_size[o] - from;
                    if (at + len <= MAX_INPUT) { memcpy(buf + at, seed[o] + from, len); n = at + len; }
                    break;
                }
                default: if (n > 1) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
                }
            }
            if (n) buf[0] = seed[s][0]; /* keep the parser selector most of the time */
            if ((next(&state) & 15) == 0 && n) buf[0] = (uint8_t)next(&state);
            LLVMFuzzerTestOneInput(buf, n);
        }
    }
    printf("fuzz_main: %ld inputs in %.0f s, no crash\n", runs, seconds);
    for (int i = 0; i < seeds; i++) free(seed[i]);
    free(seed);
    free(seed_size);
    free(buf);
    return 0;
}
