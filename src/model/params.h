/*
 * A model's tensors by name, laid out in flat arenas.
 *
 * Trainable tensors (conv weights and biases, norm affine parameters) share
 * one flat float arena; their gradients use the same layout in a second
 * arena, so zeroing, clipping, scaling and the optimizer are single flat
 * passes.  Non-trainable state (BatchNorm running statistics) lives in a
 * third arena.  Names and shapes are PyTorch's state_dict names, so a
 * checkpoint loads on either side.
 */
#ifndef TT_MODEL_PARAMS_H
#define TT_MODEL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

typedef enum tt_param_role {
    TT_PARAM_WEIGHT,        /* conv / transposed-conv weight: Kaiming-uniform */
    TT_PARAM_BIAS,          /* conv bias: uniform(+-1/sqrt(fan_in)) */
    TT_PARAM_NORM_WEIGHT,   /* ones */
    TT_PARAM_NORM_BIAS,     /* zeros */
    TT_PARAM_RUNNING_MEAN,  /* zeros, not trained */
    TT_PARAM_RUNNING_VAR,   /* ones, not trained */
} tt_param_role;

typedef struct tt_param {
    char name[64];          /* e.g. "enc.0.conv1.weight" */
    int ndim;
    int shape[4];
    size_t count;           /* product of shape */
    size_t offset;          /* in floats, within its arena */
    int trainable;          /* 1: parameter arena; 0: state arena */
    tt_param_role role;
    int fan_in;             /* for weight and bias init */
} tt_param;

typedef struct tt_param_table {
    tt_param *params;
    int count;
    int capacity;
    size_t trainable_floats;  /* size of the parameter (and gradient) arena */
    size_t state_floats;      /* size of the running-statistics arena */
} tt_param_table;

/* Appends a tensor; offsets are assigned in order, aligned to 16 floats so
 * each tensor starts on a 64-byte boundary. */
tt_status tt_params_add(tt_param_table *table, const char *name, int ndim, const int *shape,
                        tt_param_role role, int fan_in);
const tt_param *tt_params_find(const tt_param_table *table, const char *name);
/* The trainable values (PyTorch's parameter count: no alignment gaps). */
size_t tt_params_trainable_count(const tt_param_table *table);
void tt_params_free(tt_param_table *table);

/* Fills the host copies of both arenas with PyTorch's default init, from a
 * seed (the numbers differ from PyTorch's RNG; the distributions match). */
void tt_params_init(const tt_param_table *table, uint64_t seed, float *trainable, float *state);

#endif
