/* --init: a file's tensors into a model by name, whatever else either has;
 * see weights.h. */
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

static void note(char names[][96], int *count, const char *name)
{
    if (*count < TT_WEIGHTS_REPORT_NAMES) {
        size_t n = strlen(name) < 95 ? strlen(name) : 95;
        memcpy(names[*count], name, n);
        names[*count][n] = 0;
    }
    (*count)++;
}

/* The file's tensor `t` (model name `full`) into the host arena of p; the
 * reader checks dtype and shape and names both shapes when they differ. */
static tt_status take(const tt_safetensors *f, const tt_st_tensor *t, const tt_param *p,
                      const char *full, float *arena)
{
    int64_t shape[4] = {0};
    for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
    tt_status s = tt_safetensors_get_f32(f, t->name, p->ndim, shape, arena + p->offset);
    if (s && strcmp(full, t->name) != 0) s = tt_error_prefix(s, "model tensor '%s'", full);
    return s;
}

static int counter_of(const tt_model *m, const char *name)
{
    for (int i = 0; i < m->counter_count; i++)
        if (strcmp(m->counters[i].name, name) == 0) return i;
    return -1;
}

static tt_status read_matching(tt_model *m, const tt_safetensors *f, const char *prefix,
                               float *params, float *state, char *loaded, tt_weights_report *r)
{
    const tt_param_table *pt = m->params;
    for (size_t i = 0; i < tt_safetensors_count(f); i++) {
        const tt_st_tensor *t = tt_safetensors_at(f, i);
        if (strncmp(t->name, "optim.", 6) == 0) { /* a checkpoint's optimizer state */
            r->ignored++;
            continue;
        }
        char full[256];
        snprintf(full, sizeof full, "%s%s", prefix, t->name);
        const tt_param *p = tt_params_find(pt, full);
        int c = p ? -1 : counter_of(m, full);
        if (p) {
            TT_TRY(take(f, t, p, full, p->trainable ? params : state));
            loaded[p - pt->params] = 1;
        } else if (c >= 0) {
            TT_TRY(tt_safetensors_get_i64(f, t->name, t->ndim, t->shape, m->counters[c].value));
            loaded[pt->count + c] = 1;
        } else {
            note(r->unexpected_names, &r->unexpected, full);
            continue;
        }
        r->matched++;
    }
    for (int i = 0; i < pt->count; i++)
        if (!loaded[i]) note(r->missing_names, &r->missing, pt->params[i].name);
    for (int c = 0; c < m->counter_count; c++)
        if (!loaded[pt->count + c]) note(r->missing_names, &r->missing, m->counters[c].name);
    return NULL;
}

tt_status tt_weights_init(tt_model *m, const char *path, const char *prefix, tt_weights_report *r)
{
    memset(r, 0, sizeof *r);
    if (!prefix) prefix = "";
    tt_safetensors *f = NULL;
    TT_TRY(tt_error_prefix(tt_safetensors_open(path, &f), "--init"));
    const tt_param_table *pt = m->params;
    tt_status status = NULL;
    float *params = NULL, *state = NULL;
    char *loaded = tt_calloc((size_t)pt->count + (size_t)m->counter_count + 1, 1);
    if (!loaded) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    /* what the file lacks keeps its value: start from the model's own */
    TT_CHECK(tt_weights_download(m->be, m->param_buffer, pt->trainable_floats, &params));
    TT_CHECK(tt_weights_download(m->be, m->state_buffer, pt->state_floats, &state));
    TT_CHECK(read_matching(m, f, prefix, params, state, loaded, r));
    if (!r->matched) {
        status = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "none of its %zu tensors is one of this model's (the file has '%s', "
                              "the model '%s'%s); give the weights' model%s",
                              tt_safetensors_count(f),
                              tt_safetensors_count(f) ? tt_safetensors_at(f, 0)->name : "nothing",
                              pt->count ? pt->params[0].name : "nothing",
                              *prefix ? ", with the prefix" : "",
                              *prefix ? " or another --init-prefix" : ", or --init-prefix");
        goto cleanup;
    }
    TT_CHECK(tt_model_set_params(m, params, state));
cleanup:
    free(params), free(state), free(loaded);
    tt_safetensors_close(f);
    return tt_error_prefix(status, "--init %s", path);
}

static size_t names(char *buf, size_t size, const char list[][96], int count)
{
    size_t used = 0;
    for (int i = 0; i < count && i < TT_WEIGHTS_REPORT_NAMES && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", list[i]);
    if (count > TT_WEIGHTS_REPORT_NAMES && used < size)
        used += (size_t)snprintf(buf + used, size - used, ", ...");
    return used;
}

void tt_weights_report_text(const tt_weights_report *r, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "matched %d tensor%s", r->matched,
                                   r->matched == 1 ? "" : "s");
    if (r->missing && used < size) {
        used += (size_t)snprintf(buf + used, size - used, "; missing %d, kept as initialised (",
                                 r->missing);
        used += used < size ? names(buf + used, size - used, r->missing_names, r->missing) : 0;
        used += used < size ? (size_t)snprintf(buf + used, size - used, ")") : 0;
    }
    if (r->unexpected && used < size) {
        used += (size_t)snprintf(buf + used, size - used, "; unexpected %d, not used (",
                                 r->unexpected);
        used += used < size ? names(buf + used, size - used, r->unexpected_names, r->unexpected) : 0;
        used += used < size ? (size_t)snprintf(buf + used, size - used, ")") : 0;
    }
    if (r->ignored && used < size)
        snprintf(buf + used, size - used, "; %d optimizer tensors of a checkpoint left out "
                 "(--resume continues a run)", r->ignored);
}
