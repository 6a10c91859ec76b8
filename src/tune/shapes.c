/*
 * The GEMM shapes `tiletrain tune` times: those of the built-in UNet's
 * im2col convolutions (mirroring src/model/unet.c and src/ops/conv2d.c,
 * conv_transpose2d.c), or a list read from a text file.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "tune/tune.h"
#include "core/status.h"

typedef struct shape_list {
    tt_gemm_shape *items;
    int count, capacity;
} shape_list;

/* Adds one call of a shape, merging it with an equal one. */
static tt_status add(shape_list *l, int ta, int tb, size_t m, size_t n, size_t k, int count,
                     const char *label)
{
    for (int i = 0; i < l->count; i++) {
        tt_gemm_shape *s = &l->items[i];
        if (s->trans_a == ta && s->trans_b == tb && s->m == m && s->n == n && s->k == k) {
            s->count += count;
            return NULL;
        }
    }
    if (l->count == l->capacity) {
        int cap = l->capacity ? 2 * l->capacity : 32;
        tt_gemm_shape *grown = tt_realloc(l->items, sizeof *grown * (size_t)cap);
        if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "GEMM shape list: out of host memory");
        l->items = grown;
        l->capacity = cap;
    }
    tt_gemm_shape *s = &l->items[l->count++];
    memset(s, 0, sizeof *s);
    *s = (tt_gemm_shape){.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .count = count};
    snprintf(s->label, sizeof s->label, "%s", label);
    return NULL;
}

/* The three GEMMs of a 3x3 (or 1x1) convolution, stride 1, same padding. */
static tt_status conv(shape_list *l, const char *name, size_t cin, size_t cout, size_t kernel,
                      size_t plane, int input_gradient)
{
    char label[96];
    size_t k = cin * kernel * kernel;
    snprintf(label, sizeof label, "%s forward", name);
    TT_TRY(add(l, 0, 0, cout, plane, k, 1, label));
    snprintf(label, sizeof label, "%s d weight", name);
    TT_TRY(add(l, 0, 1, cout, k, plane, 1, label));
    if (input_gradient) {
        snprintf(label, sizeof label, "%s d input", name);
        TT_TRY(add(l, 1, 0, k, plane, cout, 1, label));
    }
    return NULL;
}

/* A 2x2 stride-2 transposed convolution cin -> cout on an input plane. */
static tt_status upconv(shape_list *l, const char *name, size_t cin, size_t cout, size_t in_plane)
{
    char label[96];
    size_t k = cout * 4;
    snprintf(label, sizeof label, "%s forward", name);
    TT_TRY(add(l, 1, 0, k, in_plane, cin, 1, label));
    snprintf(label, sizeof label, "%s d input", name);
    TT_TRY(add(l, 0, 0, cin, in_plane, k, 1, label));
    snprintf(label, sizeof label, "%s d weight", name);
    return add(l, 0, 1, cin, k, in_plane, 1, label);
}

tt_status tt_gemm_shapes_unet(int in_channels, int classes, int base_channels, int depth,
                              int height, int width, tt_gemm_shape **shapes, int *count)
{
    *shapes = NULL;
    *count = 0;
    if (in_channels < 1 || classes < 1 || base_channels < 1 || depth < 0 || depth > 8 ||
        height < 1 || width < 1 || height % (1 << depth) || width % (1 << depth))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "UNet GEMM shapes: need positive channels and classes, depth 0..8 and "
                            "a tile divisible by 2^depth (got %dx%d, depth %d)",
                            height, width, depth);
    shape_list l = {0};
    tt_status status = NULL;
    char name[32];
    size_t cin = (size_t)in_channels;
    for (int i = 0; i <= depth; i++) {
        size_t ch = (size_t)base_channels << i;
        size_t plane = (size_t)(height >> i) * (size_t)(width >> i);
        if (i < depth) snprintf(name, sizeof name, "enc.%d", i);
        else snprintf(name, sizeof name, "bottleneck");
        char c1[40], c2[40];
        snprintf(c1, sizeof c1, "%s.conv1", name);
        snprintf(c2, sizeof c2, "%s.conv2", name);
        TT_CHECK(conv(&l, c1, cin, ch, 3, plane, i > 0));
        TT_CHECK(conv(&l, c2, ch, ch, 3, plane, 1));
        cin = ch;
    }
    for (int i = depth - 1; i >= 0; i--) {
        size_t ch = (size_t)base_channels << i;
        size_t plane = (size_t)(height >> i) * (size_t)(width >> i);
        char c[40];
        snprintf(c, sizeof c, "up.%d", i);
        TT_CHECK(upconv(&l, c, 2 * ch, ch, plane / 4));
        snprintf(c, sizeof c, "dec.%d.conv1", i);
        TT_CHECK(conv(&l, c, 2 * ch, ch, 3, plane, 1));
        snprintf(c, sizeof c, "dec.%d.conv2", i);
        TT_CHECK(conv(&l, c, ch, ch, 3, plane, 1));
    }
    TT_CHECK(conv(&l, "head", (size_t)base_channels, (size_t)classes, 1,
                  (size_t)height * (size_t)width, 1));
    *shapes = l.items;
    *count = l.count;
    return NULL;
cleanup:
    free(l.items);
    return status;
}

static int parse_trans(const char *word, int *trans)
{
    if (strcmp(word, "N") == 0 || strcmp(word, "n") == 0) *trans = 0;
    else if (strcmp(word, "T") == 0 || strcmp(word, "t") == 0) *trans = 1;
    else return 0;
    return 1;
}

tt_status tt_gemm_shapes_load(const char *path, tt_gemm_shape **shapes, int *count)
{
    *shapes = NULL;
    *count = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return tt_error_new(TT_ERR_IO, "cannot open the shape file '%s': %s", path, strerror(errno));
    shape_list l = {0};
    tt_status status = tt_read_fault("the shape file", path);
    char line[512];
    int lineno = 0;
    while (!status && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char ta[8], tb[8];
        unsigned long long m, n, k;
        int times = 1, used = 0;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p) continue;
        int got = sscanf(p, "%7s %7s %llu %llu %llu %n", ta, tb, &m, &n, &k, &used);
        int trans_a = 0, trans_b = 0;
        if (got >= 5 && p[used]) {
            char *end = NULL;
            long c = strtol(p + used, &end, 10);
            while (end && isspace((unsigned char)*end)) end++;
            if (!end || *end || c < 1 || c > 1000000) got = 0;
            times = (int)c;
        }
        if (got < 5 || !parse_trans(ta, &trans_a) || !parse_trans(tb, &trans_b) || m < 1 ||
            n < 1 || k < 1 || m > (1u << 24) || n > (1u << 24) || k > (1u << 24)) {
            status = tt_error_new(TT_ERR_FORMAT,
                                  "%s:%d: expected \"TA TB M N K [COUNT]\" (TA, TB: N or T; "
                                  "sizes 1..2^24)", path, lineno);
            goto cleanup;
        }
        char label[48];
        snprintf(label, sizeof label, "%s:%d", path, lineno);
        size_t len = strlen(label);
        if (len > 40) memmove(label, label + len - 40, 41); /* keep the file's tail */
        TT_CHECK(add(&l, trans_a, trans_b, (size_t)m, (size_t)n, (size_t)k, times, label));
    }
    if (status) goto cleanup;
    if (ferror(f)) {
        status = tt_error_new(TT_ERR_IO, "cannot read the shape file '%s': %s", path, strerror(errno));
        goto cleanup;
    }
    if (l.count == 0) {
        status = tt_error_new(TT_ERR_FORMAT, "shape file '%s' lists no GEMM", path);
        goto cleanup;
    }
    *shapes = l.items;
    *count = l.count;
    l.items = NULL;
cleanup:
    free(l.items);
    fclose(f);
    return status;
}
