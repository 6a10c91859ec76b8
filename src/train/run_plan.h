/*
 * `tiletrain plan`: a training recipe chosen from the data set's
 * fingerprint (data/fingerprint.h) and the device's memory, nnU-Net's
 * lesson for our memory-bound cards.  Every choice is a value of one of
 * train's options (the name and the text `train` would parse) with the
 * reason for it, so a plan is what a person would have typed, and
 * plan.json can be read back as options.
 */
#ifndef TT_TRAIN_RUN_PLAN_H
#define TT_TRAIN_RUN_PLAN_H

#include <stdint.h>
#include <stdio.h>

struct cJSON;

#include "data/fingerprint.h"
#include "train/train_options.h"

#define TT_PLAN_MAX_CHOICES 24
#define TT_PLAN_IMAGES 200     /* images a fingerprint reads unless told otherwise */

typedef struct tt_plan_choice {
    char option[24];   /* train's option, without "--": "tile", "norm", ... */
    char value[64];    /* as train parses it: "128x128", "batch", "1e-2"; "" for a flag */
    char reason[240];
} tt_plan_choice;

typedef struct tt_run_plan {
    tt_fingerprint fingerprint;
    tt_device_info device;      /* the device planned for */
    tt_plan_choice choices[TT_PLAN_MAX_CHOICES];
    int count;
} tt_run_plan;

/* The plan for a data set of fingerprint `fp` trained on a device like
 * `device`: its rules (run_plan.c's table, in order) set each option they
 * choose on *opt, except those given[] marks (indices of train's option
 * table; NULL: none given), and write the choice with its reason into
 * *out.  The rules see the given values (a given tile sizes the network
 * the plan fits), and the memory rule fits the run with the engine's own
 * estimate (train/fit.c) under opt->mem_limit (0: the device's memory less
 * a margin), so the micro-batch, accum and checkpointing it leaves are
 * final.  Errors: TT_ERR_INVALID_ARGUMENT for a data set too small to
 * train and validate on (fewer than two images), TT_ERR_OUT_OF_MEMORY when
 * not even the smallest configuration fits, naming the limit; *opt is then
 * as it was. */
tt_status tt_run_plan_make(const tt_fingerprint *fp, const tt_device_info *device,
                           tt_train_options *opt, const unsigned char *given, tt_run_plan *out);

/* 1 when a plan may choose `option` (train's name, without "--"). */
int tt_run_plan_chooses(const char *option);

/* The choice for `option`, NULL when the plan makes none. */
const tt_plan_choice *tt_run_plan_find(const tt_run_plan *plan, const char *option);

/* The device a run of these options plans for: --backend's (auto: the one
 * train would take) device that --device selects (its first entry under
 * mpirun), from that API's own list. */
tt_status tt_run_plan_device(const tt_train_options *options, tt_device_info *out);

/* tt_run_plan_make for the data set the options name (--data, --format,
 * --csv, --images; up to max_images images read, all when 0) on
 * tt_run_plan_device's device (`tiletrain plan`). */
tt_status tt_run_plan_for(tt_train_options *options, const unsigned char *given, int max_images,
                          tt_run_plan *out);

/* " --tile 128x128 --depth 3 ...": the train options the plan stands for,
 * each with a space before it, to `f`. */
void tt_run_plan_print_args(const tt_run_plan *plan, FILE *f);

/* A plan.json parsed (it must hold an "args" list); the caller owns *out
 * (cJSON_Delete).  Errors name the file. */
tt_status tt_run_plan_read(const char *path, struct cJSON **out);

/* Sets a plan.json's "args" on `options` through train's option table,
 * except those given[] marks (and steps where --epochs is given,
 * val-fraction where --val-list is, augment where --no-augment is); a UNet over a ResNet encoder takes
 * none of the plain UNet's sizes, norm or intensity statistics (its
 * encoder's own: ImageNet's).  Errors name the file. */
tt_status tt_run_plan_apply_file(const char *path, tt_train_options *options,
                                 const unsigned char *given);

/* Writes plan.json (tt_run_plan_json) to `path`, atomically. */
tt_status tt_run_plan_write(const tt_run_plan *plan, const char *path);

/* {"fingerprint": {...}, "choices": {"tile": {"value": .., "reason": ..}, ..},
 *  "args": ["--tile", "128x128", ..]}: the file plan.json; NULL when out of
 * memory.  The caller owns it (cJSON_Delete). */
struct cJSON *tt_run_plan_json(const tt_run_plan *plan);

#endif
