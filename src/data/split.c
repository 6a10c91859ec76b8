/*
 * Train / validation splits of a source's items (declared in sampler.h):
 * by a seeded fraction, or by a list file of item names.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "data/sampler.h"

/* Builds the two sorted lists from a 0/1 flag per item. */
static tt_status lists_from_flags(const char *flags, int count, int **train, int *train_count, int **val,
                                  int *val_count)
{
    int nv = 0;
    for (int i = 0; i < count; i++) nv += flags[i];
    *train = tt_malloc(sizeof **train * (count - nv + 1));
    *val = tt_malloc(sizeof **val * (nv + 1));
    if (!*train || !*val) {
        free(*train);
        free(*val);
        *train = *val = NULL;
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "split: no host memory for %d items", count);
    }
    *train_count = *val_count = 0;
    for (int i = 0; i < count; i++) {
        if (flags[i]) (*val)[(*val_count)++] = i;
        else (*train)[(*train_count)++] = i;
    }
    return NULL;
}

tt_status tt_split_fraction(const tt_item_source *source, double val_fraction, uint64_t seed, int **train,
                            int *train_count, int **val, int *val_count)
{
    *train = *val = NULL;
    if (!(val_fraction >= 0.0 && val_fraction < 1.0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "split: validation fraction %g; give a value in [0, 1)",
                            val_fraction);
    int n = source->count;
    int nv = (int)(val_fraction * n + 0.5);
    if (val_fraction > 0 && nv == 0 && n >= 2) nv = 1;
    if (nv >= n && n > 0) nv = n - 1;
    char *flags = tt_calloc((size_t)n + 1, 1);
    int *order = tt_malloc(sizeof *order * ((size_t)n + 1));
    tt_status status = NULL;
    if (!flags || !order) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "split: no host memory for %d items", n);
        goto cleanup;
    }
    tt_rng rng = tt_rng_from(seed, 0x73706c6974ULL /* "split" */, 0);
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)tt_rng_below(&rng, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < nv; i++) flags[order[i]] = 1;
    status = lists_from_flags(flags, n, train, train_count, val, val_count);
cleanup:
    free(flags);
    free(order);
    return status;
}

/* Does `line` name `name`, fully or without the extension? */
static int names_item(const char *line, const char *name)
{
    if (strcmp(line, name) == 0) return 1;
    const char *dot = strrchr(name, '.');
    return dot && strlen(line) == (size_t)(dot - name) && strncmp(line, name, (size_t)(dot - name)) == 0;
}

tt_status tt_split_list(const tt_item_source *source, const char *list_path, int **train, int *train_count,
                        int **val, int *val_count)
{
    *train = *val = NULL;
    FILE *f = fopen(list_path, "r");
    if (!f)
        return tt_error_new(TT_ERR_IO, "split: cannot open validation list %s: %s", list_path, strerror(errno));
    int n = source->count, listed = 0, line_no = 0;
    char *flags = tt_calloc((size_t)n + 1, 1);
    char line[4096];
    tt_status status = NULL;
    if (!flags) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "split: no host memory");
        goto cleanup;
    }
    if ((status = tt_read_fault("the validation list", list_path))) goto cleanup;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        char *p = line, *e;
        while (isspace((unsigned char)*p)) p++;
        e = p + strlen(p);
        while (e > p && isspace((unsigned char)e[-1])) *--e = '\0';
        if (!*p || *p == '#') continue;
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            if (names_item(p, source->name(source->ctx, i))) {
                flags[i] = 1;
                found = 1;
            }
        if (!found) {
            status = tt_error_new(TT_ERR_FORMAT, "%s:%d: '%s' is not an item of the dataset; list image "
                                  "names one per line", list_path, line_no, p);
            goto cleanup;
        }
        listed++;
    }
    if (ferror(f)) { /* a list cut short would move items into training unseen */
        status = tt_error_new(TT_ERR_IO, "split: cannot read validation list %s: %s; check the "
                              "disk, or give --val-list a readable copy", list_path, strerror(errno));
        goto cleanup;
    }
    if (!listed) {
        status = tt_error_new(TT_ERR_FORMAT, "split: validation list %s names no items", list_path);
        goto cleanup;
    }
    status = lists_from_flags(flags, n, train, train_count, val, val_count);
cleanup:
    free(flags);
    fclose(f);
    return status;
}
