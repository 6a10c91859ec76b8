/*
 * Checkpoints for tests/export/check.sh, without training:
 *
 *   make_checkpoint OUT KIND CLASSES [batch|group]
 *       a model of KIND (model.c's table; the norm for the plain UNet)
 *       initialised as PyTorch would, its batch norms' running statistics
 *       and affine parameters then drawn at random (so that folding them
 *       into the convolutions is tested on values that are not 0 and 1),
 *       with "model", "mean", "std" and "mask_kind" metadata as `tiletrain
 *       train` writes them;
 *   make_checkpoint --bare OUT KIND CLASSES
 *       the same tensors with no metadata at all;
 *   make_checkpoint --set IN OUT KEY VALUE
 *       IN with __metadata__ KEY set to VALUE (a model of an unknown kind).
 *
 * The model is built on the dry backend: only its table of tensors is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/status.h"
#include "io/safetensors.h"
#include "model/model.h"

static float uniform(uint64_t *state, float lo, float hi)
{
    *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
    return lo + (hi - lo) * (float)((*state >> 40) / (double)(1 << 24));
}

/* Norm parameters and running statistics drawn away from 1 and 0. */
static void perturb(const tt_param_table *t, float *trainable, float *state)
{
    uint64_t rng = 0x2545f4914f6cdd1du;
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        float *v = (p->trainable ? trainable : state) + p->offset;
        for (size_t k = 0; k < p->count; k++) {
            switch (p->role) {
            case TT_PARAM_NORM_WEIGHT: v[k] = uniform(&rng, 0.5f, 1.5f); break;
            case TT_PARAM_NORM_BIAS: v[k] = uniform(&rng, -0.2f, 0.2f); break;
            case TT_PARAM_RUNNING_MEAN: v[k] = uniform(&rng, -0.2f, 0.2f); break;
            case TT_PARAM_RUNNING_VAR: v[k] = uniform(&rng, 0.5f, 2.0f); break;
            default: break;
            }
        }
    }
}

static tt_status make(const char *out, const char *kind, int classes, const char *norm, int bare)
{
    tt_status status = NULL;
    tt_backend *be = NULL;
    tt_model *model = NULL;
    tt_st_writer *w = NULL;
    float *trainable = NULL, *state = NULL;
    tt_model_spec spec = tt_model_spec_default();
    snprintf(spec.kind, sizeof spec.kind, "%s", kind);
    spec.classes = classes;
    if (norm && strcmp(norm, "batch") == 0) spec.norm = TT_NORM_BATCH;
    spec.predict_only = 1; /* no gradients nor a backward planned: the table is all we use */
    TT_CHECK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY}, &be));
    TT_CHECK(tt_model_create(be, &spec, 1, 64, 64, 7, &model));
    const tt_param_table *t = model->params;
    trainable = malloc((t->trainable_floats + 1) * sizeof *trainable);
    state = malloc((t->state_floats + 1) * sizeof *state);
    if (!trainable || !state) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto cleanup;
    }
    tt_params_init(t, 7, trainable, state);
    perturb(t, trainable, state);
    TT_CHECK(tt_st_writer_create(&w));
    for (int i = 0; i < t->count; i++) {
        const tt_param *p = &t->params[i];
        int64_t shape[4];
        for (int d = 0; d < p->ndim; d++) shape[d] = p->shape[d];
        TT_CHECK(tt_st_writer_add(w, p->name, TT_ST_F32, p->ndim, shape,
                                  (p->trainable ? trainable : state) + p->offset));
    }
    if (!bare) {
        char json[512];
        tt_model_spec_json(&model->spec, json, sizeof json);
        TT_CHECK(tt_st_writer_metadata(w, "model", json));
        TT_CHECK(tt_st_writer_metadata(w, "mean", "[0.485, 0.456, 0.406]"));
        TT_CHECK(tt_st_writer_metadata(w, "std", "[0.229, 0.224, 0.225]"));
        TT_CHECK(tt_st_writer_metadata(w, "mask_kind", "multi-label"));
    }
    TT_CHECK(tt_st_writer_write(w, out));
cleanup:
    tt_st_writer_destroy(w);
    free(trainable);
    free(state);
    tt_model_destroy(model);
    tt_backend_destroy(be);
    return status;
}

static tt_status set(const char *in, const char *out, const char *key, const char *value)
{
    tt_safetensors *f = NULL;
    TT_TRY(tt_safetensors_open(in, &f));
    tt_status status = tt_safetensors_copy_with(f, key, value, out);
    tt_safetensors_close(f);
    return status;
}

int main(int argc, char **argv)
{
    tt_status status;
    if (argc == 6 && strcmp(argv[1], "--set") == 0)
        status = set(argv[2], argv[3], argv[4], argv[5]);
    else if (argc == 5 && strcmp(argv[1], "--bare") == 0)
        status = make(argv[2], argv[3], atoi(argv[4]), NULL, 1);
    else if (argc == 4 || argc == 5)
        status = make(argv[1], argv[2], atoi(argv[3]), argc == 5 ? argv[4] : NULL, 0);
    else {
        fprintf(stderr, "usage: make_checkpoint OUT KIND CLASSES [batch|group]\n"
                        "       make_checkpoint --bare OUT KIND CLASSES\n"
                        "       make_checkpoint --set IN OUT KEY VALUE\n");
        return 2;
    }
    if (!status) return 0;
    fprintf(stderr, "make_checkpoint: %s\n", tt_status_message(status));
    tt_status_free(status);
    return 1;
}
