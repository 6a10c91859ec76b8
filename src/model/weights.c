/* A model's tensors by PyTorch name in safetensors files; see weights.h. */
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"

static void shape_of(const tt_param *p, int64_t *shape)
{
    for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
}

/* Parameter i of the table if it belongs to the arena asked for, with its
 * file name (prefix + name + suffix) and shape; NULL otherwise. */
static const tt_param *in_arena(const tt_param_table *t, int i, int trainable, const char *prefix,
                                const char *suffix, char name[160], int64_t shape[4])
{
    const tt_param *p = &t->params[i];
    if (p->trainable != trainable) return NULL;
    snprintf(name, 160, "%s%s%s", prefix, p->name, suffix);
    shape_of(p, shape);
    return p;
}

tt_status tt_weights_add_arena(tt_st_writer *w, const tt_param_table *t, const float *arena,
                               int trainable, const char *prefix, const char *suffix)
{
    char name[160];
    int64_t shape[4];
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = in_arena(t, i, trainable, prefix, suffix, name, shape);
        if (p) TT_TRY(tt_st_writer_add(w, name, TT_ST_F32, p->ndim, shape, arena + p->offset));
    }
    return NULL;
}

tt_status tt_weights_read_arena(const tt_safetensors *f, const tt_param_table *t, float *arena,
                                int trainable, const char *prefix, const char *suffix)
{
    char name[160];
    int64_t shape[4];
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = in_arena(t, i, trainable, prefix, suffix, name, shape);
        if (p) TT_TRY(tt_safetensors_get_f32(f, name, p->ndim, shape, arena + p->offset));
    }
    return NULL;
}

/* The alignment gaps between tensors must not carry heap garbage to the
 * device, hence calloc. */
tt_status tt_weights_download(tt_backend *be, tt_buffer *buf, size_t floats, float **out)
{
    *out = tt_calloc(floats ? floats : 1, sizeof(float));
    if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "weights: out of host memory");
    if (buf) return tt_read(be, *out, tt_mem_of(buf), floats * sizeof(float));
    return NULL;
}

static size_t largest(const tt_param_table *t, int trainable)
{
    size_t most = 1;
    for (int i = 0; i < t->count; i++)
        if (t->params[i].trainable == trainable && t->params[i].count > most)
            most = t->params[i].count;
    return most;
}

tt_status tt_weights_upload_arena(tt_backend *be, tt_buffer *buf, const tt_safetensors *f,
                                  const tt_param_table *t, int trainable, const char *prefix,
                                  const char *suffix, int optional)
{
    if (!buf) return NULL; /* an arena with no tensors */
    float *host = tt_malloc(largest(t, trainable) * sizeof *host);
    if (!host) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "weights: out of host memory");
    tt_status status = NULL;
    char name[160];
    int64_t shape[4];
    for (int i = 0; i < t->count && !status; i++) {
        const tt_param *p = in_arena(t, i, trainable, prefix, suffix, name, shape);
        if (!p || (optional && !tt_safetensors_find(f, name))) continue;
        status = tt_safetensors_get_f32(f, name, p->ndim, shape, host);
        if (!status)
            status = tt_write(be, tt_mem_f32(tt_mem_of(buf), p->offset), host,
                              p->count * sizeof *host);
    }
    free(host);
    return status;
}

tt_status tt_weights_add(tt_st_writer *w, tt_model *m)
{
    const tt_param_table *pt = m->params;
    tt_status status = NULL;
    float *params = NULL, *state = NULL;
    TT_CHECK(tt_weights_download(m->be, m->param_buffer, pt->trainable_floats, &params));
    TT_CHECK(tt_weights_download(m->be, m->state_buffer, pt->state_floats, &state));
    TT_CHECK(tt_weights_add_arena(w, pt, params, 1, "", ""));
    TT_CHECK(tt_weights_add_arena(w, pt, state, 0, "", ""));
    for (int i = 0; i < m->counter_count; i++)
        TT_CHECK(tt_st_writer_add(w, m->counters[i].name, TT_ST_I64, 0, NULL, m->counters[i].value));
cleanup:
    free(params), free(state);
    return status;
}

tt_status tt_weights_read(tt_model *m, const tt_safetensors *f, tt_weights_need need)
{
    int need_stats = need >= TT_WEIGHTS_NEED_STATS, need_counts = need >= TT_WEIGHTS_NEED_ALL;
    const tt_param_table *pt = m->params;
    TT_TRY(tt_weights_upload_arena(m->be, m->param_buffer, f, pt, 1, "", "", 0));
    /* running statistics: required on resume and for prediction, taken when present for --init */
    TT_TRY(tt_weights_upload_arena(m->be, m->state_buffer, f, pt, 0, "", "", !need_stats));
    for (int i = 0; i < m->counter_count; i++)
        if (need_counts || tt_safetensors_find(f, m->counters[i].name))
            TT_TRY(tt_safetensors_get_i64(f, m->counters[i].name, 0, NULL, m->counters[i].value));
    return NULL;
}

tt_status tt_weights_load(tt_model *m, const char *path)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_error_prefix(tt_safetensors_open(path, &f), "--init"));
    tt_status status = tt_weights_read(m, f, TT_WEIGHTS_NEED_WEIGHTS);
    tt_safetensors_close(f);
    return tt_error_prefix(status, "--init %s", path);
}

tt_status tt_weights_save_grads(tt_model *m, const char *path)
{
    tt_status status = NULL;
    tt_st_writer *w = NULL;
    float *grads = NULL;
    TT_CHECK(tt_st_writer_create(&w));
    TT_CHECK(tt_weights_download(m->be, m->grad_buffer, m->params->trainable_floats, &grads));
    TT_CHECK(tt_weights_add_arena(w, m->params, grads, 1, "", ""));
    TT_CHECK(tt_st_writer_metadata(w, "content", "normalised gradients of the last window"));
    TT_CHECK(tt_st_writer_write(w, path));
cleanup:
    tt_st_writer_destroy(w);
    free(grads);
    return tt_error_prefix(status, "--save-grads");
}
