/*
 * The banded UNet step's layers (unet_internal.h): where a parameter and
 * its gradient live, the layers' descriptors, the shared workspace and a
 * decoder conv1's weight in halves.
 */
#include <stdio.h>

#include "core/status.h"
#include "model/unet_internal.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})

int tt_unet_param_index(const tt_unet *u, const char *prefix, const char *suffix)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    const tt_param *p = tt_params_find(&u->params, name);
    return p ? (int)(p - u->params.params) : -1;
}

tt_conv_transpose2d_desc tt_unet_upconv(const tt_unet *u, int batch, int cin, int cout, int h,
                                        int w)
{
    return (tt_conv_transpose2d_desc){.batch = batch, .in_channels = cin, .in_h = h, .in_w = w,
                                      .out_channels = cout, .kernel_h = 2, .kernel_w = 2,
                                      .stride_h = 2, .stride_w = 2, .algo = u->conv_algo};
}

/* The block's norms are each followed by a ReLU, fused into them: the
 * forward writes relu(norm(conv)), the backward takes d act and finds the
 * ReLU's mask again from conv and the saved statistics. */
tt_group_norm_desc tt_unet_group_desc(const tt_unet *u, const tt_unet_block *b, int n,
                                     tt_precision xp)
{
    tt_group_norm_desc d =
        tt_group_norm_desc_make(n, b->channels, b->height, b->width, u->config.groups);
    d.relu = 1;
    d.input_precision = xp;
    return d;
}

tt_batch_norm_desc tt_unet_batch_desc(const tt_unet *u, const tt_unet_block *b, int n,
                                     tt_precision xp)
{
    tt_batch_norm_desc d = tt_batch_norm_desc_make(n, b->channels, b->height, b->width);
    d.relu = 1;
    d.sync = u->model.norm_sync;
    d.input_precision = xp;
    return d;
}

tt_mem tt_unet_workspace(const tt_unet *u)
{
    return u->model.workspace_buffer ? tt_mem_of(u->model.workspace_buffer) : NONE;
}

tt_status tt_unet_split_conv1(tt_unet *u, const tt_unet_block *b, tt_unet_split *s)
{
    int half = b->in_channels / 2;
    s->half_floats = (size_t)b->channels * half * 9;
    size_t bytes = s->half_floats * sizeof(float);
    s->wa = tt_mem_of(u->wsplit_buffer), s->wb = tt_mem_at(s->wa, bytes);
    s->ga = tt_mem_at(s->wa, 2 * bytes), s->gb = tt_mem_at(s->wa, 3 * bytes);
    s->desc = (tt_concat_desc){b->channels, half, half, 3, 3};
    TT_TRY(tt_fill(u->be, s->wa, 0.0f, 2 * s->half_floats));
    return tt_concat_backward(u->be, s->wa, s->wb, tt_unet_param(u, b->conv1_w), &s->desc);
}

tt_status tt_unet_join_conv1_grads(tt_unet *u, const tt_unet_block *b, const tt_unet_split *s)
{
    /* [ga | gb] as (C', 2C, 3, 3) */
    TT_TRY(tt_concat_forward(u->be, s->wa, s->ga, s->gb, &s->desc));
    return tt_axpy(u->be, tt_unet_grad(u, b->conv1_w), s->wa, 1.0f, 2 * s->half_floats);
}
