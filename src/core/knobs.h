/*
 * The TT_* environment variables the library reads: one table, read once.
 *
 * Every variable has a row in tt_knob_table (src/core/knobs.c): its name,
 * its kind (a user setting, a debugging aid or a test knob), the file that
 * reads it, the values it takes and what it does.  The values are read from
 * the environment once, on the first access (thread-safe), and kept; code
 * asks for them by id through the typed accessors below, never with
 * getenv().  README.md lists the user settings and docs/knobs.md all of
 * them; tests/test_knobs.c checks both lists and the sources against the
 * table.
 *
 * A program (or test) that changes a variable after the first access calls
 * tt_knobs_reload() before the change should count; reloading while other
 * threads read knobs is not safe.
 */
#ifndef TT_CORE_KNOBS_H
#define TT_CORE_KNOBS_H

typedef enum tt_knob_id {
    TT_KNOB_DEVICE = 0,
    TT_KNOB_KERNEL_DIR,
    TT_KNOB_CACHE_DIR,
    TT_KNOB_DATA_CACHE_DIR,
    TT_KNOB_NO_TUNING,
    TT_KNOB_CONV_ALGO,
    TT_KNOB_POISON_ACTIVATIONS,
    TT_KNOB_PLAN_DUMP,
    TT_KNOB_LOOP_LIMIT,
    TT_KNOB_DISPATCH_FLOPS,
    TT_KNOB_KERNEL_WG_LIMIT,
    TT_KNOB_SHADER_DIR,
    TT_KNOB_VULKAN_VALIDATION,
    TT_KNOB_VULKAN_STAGING,
    TT_KNOB_VULKAN_LOADER,
    TT_KNOB_VULKAN_ADDRESSED,
    TT_KNOB_UNET_BANDED,
    TT_KNOB_UNET_BAND_ROWS,
    TT_KNOB_CONV_PERTURB,
    TT_KNOB_FAULT,
    TT_KNOB_MPI_TIMEOUT,
    TT_KNOB_COUNT
} tt_knob_id;

typedef enum tt_knob_kind {
    TT_KNOB_USER,   /* a setting for users: documented in README.md */
    TT_KNOB_DEBUG,  /* a debugging aid */
    TT_KNOB_TEST,   /* overrides a choice the library makes, so tests reach every path */
} tt_knob_kind;

typedef struct tt_knob {
    const char *name;    /* "TT_DEVICE" */
    tt_knob_kind kind;
    const char *reader;  /* the file that reads it: "src/backend/opencl/cl_device.c" */
    const char *values;  /* what it takes: "a device index or part of its name" */
    const char *what;    /* what it does, one sentence */
} tt_knob;

/* The table, TT_KNOB_COUNT rows in tt_knob_id order. */
extern const tt_knob tt_knob_table[TT_KNOB_COUNT];
/* "user setting", "debugging", "test knob". */
const char *tt_knob_kind_name(tt_knob_kind kind);

/* The value as read: NULL when the variable is unset (an empty value is ""). */
const char *tt_knob_str(tt_knob_id id);
/* Set and not empty. */
int tt_knob_set(tt_knob_id id);
/* "0" -> 0, "1" -> 1; `fallback` when unset or anything else. */
int tt_knob_flag(tt_knob_id id, int fallback);

/* Reads every variable again (tests that change one between cases). */
void tt_knobs_reload(void);

#endif
