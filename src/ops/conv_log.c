/* A log of the convolutions a backend runs; see conv_log.h. */
#include "ops/conv_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"

static tt_conv_log_entry *append(tt_backend *be, tt_conv_dir dir)
{
    tt_conv_log *log = be->conv_log;
    if (!log || log->failed) return NULL;
    if (log->count == log->capacity) {
        int cap = log->capacity ? 2 * log->capacity : 64;
        tt_conv_log_entry *e = tt_realloc(log->entries, sizeof *e * (size_t)cap);
        if (!e) {
            log->failed = 1;
            return NULL;
        }
        log->entries = e;
        log->capacity = cap;
    }
    tt_conv_log_entry *e = &log->entries[log->count++];
    memset(e, 0, sizeof *e);
    e->dir = dir;
    e->forward_phase = be->phase && strcmp(be->phase, "forward") == 0;
    snprintf(e->layer, sizeof e->layer, "%s", be->layer);
    return e;
}

void tt_conv_log_conv2d(tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir)
{
    tt_conv_log_entry *e = append(be, dir);
    if (e) e->conv = *desc;
}

void tt_conv_log_transposed(tt_backend *be, const tt_conv_transpose2d_desc *desc, tt_conv_dir dir)
{
    tt_conv_log_entry *e = append(be, dir);
    if (!e) return;
    e->transposed = 1;
    e->convt = *desc;
}

void tt_conv_log_free(tt_conv_log *log)
{
    free(log->entries);
    *log = (tt_conv_log){0};
}
