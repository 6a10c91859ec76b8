/*
 * A model of an encoder and a decoder (encoder.h).
 */
#include "model/encoder.h"

#include <stddef.h>

#include "core/status.h"
#include "model/efficientnet.h"
#include "model/resnet_encoder.h"

int tt_encoder_of(const char *kind)
{
    return tt_resnet_encoder_of(kind) != NULL || tt_efficientnet_of(kind) != NULL;
}

void tt_encoder_names(char *buf, size_t size)
{
    if (!size) return;
    buf[0] = '\0';
    tt_resnet_encoder_names(buf, size);
    tt_efficientnet_names(buf, size);
}

/* An error naming a tile whose sides are not multiples of `unit` (32: the
 * encoder's five halvings; 16 at output stride 16), a micro-batch below 1,
 * or no classes. */
static tt_status check(const tt_model_spec *spec, int unit, int capacity, int height, int width)
{
    if (spec->classes < 1 || spec->in_channels < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d classes, %d input channels", spec->kind,
                            spec->classes, spec->in_channels);
    if (capacity < 1 || height < unit || width < unit || height % unit || width % unit)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s needs a tile whose height and width are multiples of %d (got "
                            "%dx%d) and a micro-batch >= 1 (got %d); try --tile %dx%d",
                            spec->kind, unit, height, width, capacity,
                            (height + unit - 1) / unit * unit, (width + unit - 1) / unit * unit);
    return NULL;
}


tt_status tt_encoder_model_create(tt_backend *be, const tt_model_spec *spec, int output_stride,
                                 tt_decoder_fn decoder, int capacity, int height, int width,
                                 uint64_t seed, tt_model **out)
{
    *out = NULL;
    TT_TRY(check(spec, output_stride, capacity, height, width));
    const tt_resnet_encoder *r = tt_resnet_encoder_of(spec->kind);
    const tt_efficientnet *e = tt_efficientnet_of(spec->kind);
    if (!r && !e) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "model '%s': no such encoder", spec->kind);
    tt_graph_model *gm = NULL;
    TT_TRY(tt_graph_model_new(sizeof *gm, be, spec, capacity, height, width, &gm));
    tt_status status = NULL;
    tt_graph *g = &gm->graph;
    g->input = tt_graph_tensor(g, "input", spec->in_channels, height, width, TT_KEEP);
    int features[5];
    if (r) TT_CHECK(tt_resnet_encoder_build(gm, r, output_stride, features));
    else TT_CHECK(tt_efficientnet_build(gm, e, output_stride, features));
    TT_CHECK(decoder(gm, features));
    TT_CHECK(tt_graph_finish(g));
    TT_CHECK(tt_graph_model_bind(gm, seed));
    TT_CHECK(tt_graph_model_place(gm, 0, TT_PRECISION_FP32));
    *out = &gm->model;
cleanup:
    if (status) gm->model.ops->destroy(&gm->model);
    return status;
}
