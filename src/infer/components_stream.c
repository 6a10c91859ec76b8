/* Small components removed from a streamed mask; see components_stream.h. */
#include "infer/components_stream.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

typedef struct run {
    int start, end;   /* columns, end exclusive */
    uint32_t label;
    uint8_t value;
} run;

struct tt_cc_stream {
    int width, planes, class_index;
    uint32_t *parent;
    uint64_t *size;
    size_t labels, capacity;
    run *above, *here;        /* per plane: width runs at most, each */
    int *above_n;
    size_t pass2_label;       /* pass 2: the next run's label */
    int filtering;
};

tt_status tt_cc_stream_new(int width, int planes, int class_index, tt_cc_stream **out)
{
    *out = NULL;
    if (width < 1 || planes < 1 || (class_index && planes != 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "components: %d planes %d wide (a class "
                            "index mask has 1)", planes, width);
    tt_cc_stream *s = tt_calloc(1, sizeof *s);
    if (s) {
        s->width = width, s->planes = planes, s->class_index = class_index;
        s->above = tt_malloc((size_t)planes * width * sizeof *s->above);
        s->here = tt_malloc((size_t)width * sizeof *s->here);
        s->above_n = tt_calloc((size_t)planes, sizeof *s->above_n);
    }
    if (!s || !s->above || !s->here || !s->above_n) {
        tt_cc_stream_free(s);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "components: out of host memory for rows of "
                            "%d pixels", width);
    }
    *out = s;
    return NULL;
}

void tt_cc_stream_free(tt_cc_stream *s)
{
    if (!s) return;
    free(s->parent);
    free(s->size);
    free(s->above);
    free(s->here);
    free(s->above_n);
    free(s);
}

size_t tt_cc_stream_runs(const tt_cc_stream *s) { return s->labels; }

static uint32_t find(uint32_t *parent, uint32_t x)
{
    uint32_t root = x;
    while (parent[root] != root) root = parent[root];
    while (parent[x] != root) {
        uint32_t next = parent[x];
        parent[x] = root;
        x = next;
    }
    return root;
}

/* The runs of one row of plane p into s->here; their count. */
static int runs_of(const tt_cc_stream *s, const uint8_t *row, int p)
{
    int n = 0, w = s->width, stride = s->planes;
    for (int x = 0; x < w;) {
        uint8_t v = row[(size_t)x * stride + p];
        if (!v) {
            x++;
            continue;
        }
        int start = x;
        if (s->class_index)
            while (x < w && row[(size_t)x * stride + p] == v) x++;
        else
            while (x < w && row[(size_t)x * stride + p]) x++;
        s->here[n++] = (run){start, x, 0, s->class_index ? v : 1};
    }
    return n;
}

static tt_status new_label(tt_cc_stream *s, uint64_t size, uint32_t *label)
{
    if (s->labels == s->capacity) {
        size_t cap = s->capacity ? 2 * s->capacity : 4096;
        if (cap > UINT32_MAX)
            return tt_error_new(TT_ERR_TOO_LARGE, "components: more than 2^32 runs in the mask");
        uint32_t *parent = tt_realloc(s->parent, cap * sizeof *parent);
        if (parent) s->parent = parent;
        uint64_t *sizes = tt_realloc(s->size, cap * sizeof *sizes);
        if (sizes) s->size = sizes;
        if (!parent || !sizes)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "components: out of host memory for %zu "
                                "runs of the mask", cap);
        s->capacity = cap;
    }
    *label = (uint32_t)s->labels++;
    s->parent[*label] = *label;
    s->size[*label] = size;
    return NULL;
}

static void join(tt_cc_stream *s, uint32_t a, uint32_t b)
{
    a = find(s->parent, a), b = find(s->parent, b);
    if (a == b) return;
    if (b < a) {
        uint32_t t = a;
        a = b, b = t;
    }
    s->parent[b] = a;
    s->size[a] += s->size[b];
}

tt_status tt_cc_stream_add(tt_cc_stream *s, int rows, const uint8_t *mask)
{
    if (s->filtering)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "components: rows added after filtering began");
    size_t line = (size_t)s->width * s->planes;
    for (int y = 0; y < rows; y++)
        for (int p = 0; p < s->planes; p++) {
            int n = runs_of(s, mask + y * line, p), q = 0;
            run *above = s->above + (size_t)p * s->width;
            for (int i = 0; i < n; i++) {
                run *r = &s->here[i];
                TT_TRY(new_label(s, (uint64_t)(r->end - r->start), &r->label));
                /* runs above touching [start - 1, end + 1): diagonals count */
                while (q < s->above_n[p] && above[q].end < r->start) q++;
                for (int k = q; k < s->above_n[p] && above[k].start <= r->end; k++)
                    if (above[k].value == r->value) join(s, r->label, above[k].label);
            }
            memcpy(above, s->here, (size_t)n * sizeof *above);
            s->above_n[p] = n;
        }
    return NULL;
}

tt_status tt_cc_stream_filter(tt_cc_stream *s, int rows, uint8_t *mask, const int *min_size)
{
    s->filtering = 1;
    size_t line = (size_t)s->width * s->planes;
    for (int y = 0; y < rows; y++)
        for (int p = 0; p < s->planes; p++) {
            uint8_t *row = mask + y * line;
            int n = runs_of(s, row, p);
            if (s->pass2_label + (size_t)n > s->labels)
                return tt_error_new(TT_ERR_INVALID_ARGUMENT, "components: the rows filtered are "
                                    "not the rows added");
            for (int i = 0; i < n; i++) {
                const run *r = &s->here[i];
                uint32_t root = find(s->parent, (uint32_t)s->pass2_label++);
                int least = min_size[s->class_index ? r->value : p];
                if (least > 1 && s->size[root] < (uint64_t)least)
                    for (int x = r->start; x < r->end; x++) row[(size_t)x * s->planes + p] = 0;
            }
        }
    return NULL;
}
