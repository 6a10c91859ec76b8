/*
 * Table-driven options shared by command-line flags and config files.
 *
 * A command describes its options once (name, kind, place in its struct,
 * help); the same table parses `--name value` flags, INI files (`name =
 * value`, sections ignored) and JSON files ({"name": value}), prints --help,
 * and rejects unknown keys with the file and line.  Names use dashes; in
 * files, underscores are accepted too (micro_batch = micro-batch).
 */
#ifndef TT_CORE_OPTIONS_H
#define TT_CORE_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "tiletrain.h"

typedef enum tt_opt_kind {
    TT_OPT_INT,     /* int */
    TT_OPT_U64,     /* uint64_t */
    TT_OPT_DOUBLE,  /* double */
    TT_OPT_STRING,  /* char[TT_OPT_STRING_MAX] */
    TT_OPT_FLAG,    /* int set to 1; in files: true/false/1/0 */
    TT_OPT_SIZE2,   /* int[2] from "HxW" (or "N" for a square) */
    TT_OPT_CHOICE,  /* char[TT_OPT_STRING_MAX], one of `choices` ("a|b|c") */
    TT_OPT_INT_AUTO,/* int, or "auto" stored as 0 */
    TT_OPT_BYTES,   /* uint64_t from "2GiB", "512MiB", "1.5GB", "1000000" */
    TT_OPT_ENUM,    /* an enum (int-sized): the index of the value in `choices`
                       ("none|group|batch": the C enum in that order) */
    TT_OPT_TRIPLE,  /* float[3] from "a,b,c"; NaN in the first: not given;
                       a checked range with min > 0 asks each to be positive */
} tt_opt_kind;

#define TT_OPT_STRING_MAX 1024

typedef struct tt_opt {
    const char *name;     /* "micro-batch" */
    tt_opt_kind kind;
    size_t offset;        /* offsetof(options struct, field) */
    const char *metavar;  /* "B" */
    const char *help;
    double min, max;      /* for numbers; min > max means unchecked */
    const char *choices;  /* for TT_OPT_CHOICE and TT_OPT_ENUM */
} tt_opt;

/* Sets one option from text; `where` names the source for errors
 * ("--lr", "cfg.ini:12").  Unknown names are TT_ERR_INVALID_ARGUMENT. */
tt_status tt_opt_set(const tt_opt *table, size_t count, void *opts, const char *name,
                     const char *value, const char *where);

/* Loads an INI or JSON file (JSON when it starts with '{'). */
tt_status tt_opt_load_file(const tt_opt *table, size_t count, void *opts, const char *path);

/* Parses argv[first..argc): `--config FILE` is applied first wherever it
 * stands, then every flag in order, so flags override the file.  Stray
 * arguments, unknown flags and missing values are errors naming them.
 * *help is set when --help is given (nothing else is parsed then). */
tt_status tt_opt_parse_args(const tt_opt *table, size_t count, void *opts, int argc, char **argv,
                            int first, int *help);
/* The same, and given[i] set to 1 for each option i of the table that the
 * command line or its --config file set (given: `count` bytes, zeroed
 * first), so that a caller can tell a value given from a default. */
tt_status tt_opt_parse_args_given(const tt_opt *table, size_t count, void *opts, int argc,
                                  char **argv, int first, int *help, unsigned char *given);

/* The value of option `o` in `opts` as text its parser reads back ("128x96",
 * "batch", "0.001", "2GiB"); "" for an unset string, a flag that is off, a
 * TT_OPT_TRIPLE not given or TT_OPT_BYTES 0.  Returns buf. */
const char *tt_opt_format(const tt_opt *o, const void *opts, char *buf, size_t size);

/* The name at `index` of a choices list ("a|b|c"), into buf; "" when out
 * of range.  Returns buf. */
const char *tt_opt_choice_name(const char *choices, int index, char *buf, size_t size);

/* Index of the table's option named `name`, -1 when none. */
int tt_opt_index(const tt_opt *table, size_t count, const char *name);

/* A new table: base's `count` options with their offsets moved by `offset`
 * (base's struct embedded at that offset in a larger one), then extra's
 * `extra_count` as they are, so a command can take another's options plus
 * its own.  *total receives the length.  malloc'd (free() it); NULL when
 * out of memory. */
tt_opt *tt_opt_table_concat(const tt_opt *base, size_t count, size_t offset, const tt_opt *extra,
                            size_t extra_count, size_t *total);

void tt_opt_print_help(const tt_opt *table, size_t count, FILE *out);
/* The same with each option's default from `defaults` (a struct of the
 * table's; NULL: none), "(default V)" after its help unless the help says
 * the default itself (a value in words, "default: detected") or the value
 * is empty (tt_opt_format), and note(name), when not NULL, after that
 * (train: "[from the plan]" beside what the plan chooses). */
void tt_opt_print_help_full(const tt_opt *table, size_t count, const void *defaults, FILE *out,
                            const char *(*note)(const char *name));

/* The word of `words` closest to `typed` by edit distance, or NULL when none
 * is close enough to be what was meant (for "did you mean" messages). */
const char *tt_closest_word(const char *typed, const char *const *words, size_t count);

#endif
