/* The UNet's configuration, its spec <-> configuration mapping, and its named
 * parameters (python/tiletrain_torch.py's order). */
#include "model/unet_config.h"
#include "model/unet.h"

#include <stdio.h>

#include "core/knobs.h"
#include "core/status.h"

tt_unet_config tt_unet_config_default(void)
{
    return (tt_unet_config){.in_channels = 3, .classes = 4, .base_channels = 16, .depth = 3,
                            .norm = TT_NORM_GROUP, .groups = 8};
}

tt_status tt_unet_config_check(const tt_unet_config *c)
{
    if (c->in_channels < 1 || c->in_channels > 64)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "in_channels %d: give 1 to 64", c->in_channels);
    if (c->classes < 1 || c->classes > 254)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "classes %d: give 1 to 254", c->classes);
    if (c->base_channels < 1 || c->base_channels > 1024)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "base_channels %d: give 1 to 1024",
                            c->base_channels);
    if (c->depth < 1 || c->depth > 8)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "depth %d: give 1 to 8", c->depth);
    if (c->norm == TT_NORM_GROUP) {
        if (c->groups < 1 || c->base_channels % c->groups != 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "groups %d must divide base_channels %d (and so every level's "
                                "channels); try groups = %d",
                                c->groups, c->base_channels,
                                c->base_channels % 8 == 0 ? 8 : c->base_channels);
    }
    return NULL;
}

static tt_status add_conv(tt_param_table *t, const char *prefix, int cout, int cin, int k)
{
    char name[80];
    int wshape[4] = {cout, cin, k, k}, bshape[1] = {cout};
    snprintf(name, sizeof name, "%s.weight", prefix);
    TT_TRY(tt_params_add(t, name, 4, wshape, TT_PARAM_WEIGHT, cin * k * k));
    snprintf(name, sizeof name, "%s.bias", prefix);
    return tt_params_add(t, name, 1, bshape, TT_PARAM_BIAS, cin * k * k);
}

static tt_status add_norm(tt_param_table *t, const tt_unet_config *c, const char *prefix, int ch)
{
    if (c->norm == TT_NORM_NONE) return NULL;
    char name[64];
    int shape[1] = {ch};
    snprintf(name, sizeof name, "%s.weight", prefix);
    TT_TRY(tt_params_add(t, name, 1, shape, TT_PARAM_NORM_WEIGHT, 0));
    snprintf(name, sizeof name, "%s.bias", prefix);
    TT_TRY(tt_params_add(t, name, 1, shape, TT_PARAM_NORM_BIAS, 0));
    if (c->norm == TT_NORM_BATCH) {
        snprintf(name, sizeof name, "%s.running_mean", prefix);
        TT_TRY(tt_params_add(t, name, 1, shape, TT_PARAM_RUNNING_MEAN, 0));
        snprintf(name, sizeof name, "%s.running_var", prefix);
        TT_TRY(tt_params_add(t, name, 1, shape, TT_PARAM_RUNNING_VAR, 0));
    }
    return NULL;
}

static tt_status add_block(tt_param_table *t, const tt_unet_config *c, const char *prefix, int cin,
                           int cout)
{
    char name[64];
    snprintf(name, sizeof name, "%s.conv1", prefix);
    TT_TRY(add_conv(t, name, cout, cin, 3));
    snprintf(name, sizeof name, "%s.norm1", prefix);
    TT_TRY(add_norm(t, c, name, cout));
    snprintf(name, sizeof name, "%s.conv2", prefix);
    TT_TRY(add_conv(t, name, cout, cout, 3));
    snprintf(name, sizeof name, "%s.norm2", prefix);
    return add_norm(t, c, name, cout);
}

tt_status tt_unet_params(const tt_unet_config *c, tt_param_table *t)
{
    TT_TRY(tt_unet_config_check(c));
    char name[64];
    int cin = c->in_channels;
    for (int i = 0; i < c->depth; i++) {
        snprintf(name, sizeof name, "enc.%d", i);
        TT_TRY(add_block(t, c, name, cin, tt_unet_channels(c, i)));
        cin = tt_unet_channels(c, i);
    }
    TT_TRY(add_block(t, c, "bottleneck", tt_unet_channels(c, c->depth - 1),
                     tt_unet_channels(c, c->depth)));
    for (int i = 0; i < c->depth; i++) {
        /* ConvTranspose2d weight (Cin, Cout, 2, 2); PyTorch's fan_in is dim 1 * k * k */
        int up_in = tt_unet_channels(c, i + 1), up_out = tt_unet_channels(c, i);
        int wshape[4] = {up_in, up_out, 2, 2}, bshape[1] = {up_out};
        snprintf(name, sizeof name, "up.%d.weight", i);
        TT_TRY(tt_params_add(t, name, 4, wshape, TT_PARAM_WEIGHT, up_out * 4));
        snprintf(name, sizeof name, "up.%d.bias", i);
        TT_TRY(tt_params_add(t, name, 1, bshape, TT_PARAM_BIAS, up_out * 4));
    }
    for (int i = 0; i < c->depth; i++) {
        snprintf(name, sizeof name, "dec.%d", i);
        TT_TRY(add_block(t, c, name, 2 * tt_unet_channels(c, i), tt_unet_channels(c, i)));
    }
    return add_conv(t, "head", c->classes, tt_unet_channels(c, 0), 1);
}

tt_status tt_unet_tile_check(const tt_unet_config *c, int capacity, int height, int width)
{
    int multiple = 1 << c->depth;
    if (capacity < 1 || height < multiple || width < multiple || height % multiple ||
        width % multiple)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "UNet of depth %d needs a tile whose height and width are multiples "
                            "of %d (got %dx%d) and a micro-batch >= 1 (got %d); try --tile %dx%d",
                            c->depth, multiple, height, width, capacity,
                            (height + multiple - 1) / multiple * multiple,
                            (width + multiple - 1) / multiple * multiple);
    return NULL;
}

int tt_unet_banded(const tt_unet_config *c)
{
    int banded = tt_knob_flag(TT_KNOB_UNET_BANDED, c->precision != TT_PRECISION_FP32);
    return c->checkpointing && banded && c->norm != TT_NORM_NONE;
}

tt_unet_config tt_unet_config_of(const tt_model_spec *s)
{
    return (tt_unet_config){.in_channels = s->in_channels, .classes = s->classes,
                            .base_channels = s->base_channels, .depth = s->depth, .norm = s->norm,
                            .groups = s->groups, .checkpointing = s->checkpointing,
                            .algo = s->algo, .precision = s->precision};
}

tt_model_spec tt_unet_spec_of(const tt_unet_config *c)
{
    tt_model_spec s = {.kind = "unet", .in_channels = c->in_channels, .classes = c->classes,
                       .base_channels = c->base_channels, .depth = c->depth, .norm = c->norm,
                       .groups = c->groups, .checkpointing = c->checkpointing, .algo = c->algo,
                       .precision = c->precision};
    return s;
}
