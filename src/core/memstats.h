/*
 * Device memory accounting: every byte the engine puts on a device has a
 * name and a category, so the report is exact and comparable across vendors.
 *
 * The accountant is backend-independent: a backend calls tt_memstats_add()
 * after a successful allocation and tt_memstats_remove() before a free.
 * It is not thread-safe; device allocation happens on the training thread.
 */
#ifndef TT_CORE_MEMSTATS_H
#define TT_CORE_MEMSTATS_H

#include <stddef.h>
#include <stdint.h>

typedef enum tt_mem_category {
    TT_MEM_PARAMETERS,
    TT_MEM_GRADIENTS,
    TT_MEM_OPTIMIZER,   /* optimizer state: moments, momentum */
    TT_MEM_ACTIVATIONS,
    TT_MEM_WORKSPACE,   /* scratch: im2col columns, reductions */
    TT_MEM_DATA,        /* input batches, labels, staging */
    TT_MEM_OTHER,
    TT_MEM_CATEGORY_COUNT
} tt_mem_category;

/* "parameters", "gradients", "optimizer", "activations", "workspace",
 * "data", "other". */
const char *tt_mem_category_name(tt_mem_category category);

/* One live allocation; embedded in the backend's buffer object. */
typedef struct tt_mem_record {
    char name[64];
    tt_mem_category category;
    uint64_t bytes;
    struct tt_mem_record *prev, *next;
} tt_mem_record;

typedef struct tt_memstats {
    uint64_t current[TT_MEM_CATEGORY_COUNT];
    uint64_t peak[TT_MEM_CATEGORY_COUNT];   /* highest current per category */
    uint64_t current_total;
    uint64_t peak_total;                    /* highest sum, not sum of peaks */
    uint64_t allocations;                   /* ever made */
    uint64_t live_count;
    tt_mem_record *live;                    /* newest first */
} tt_memstats;

void tt_memstats_add(tt_memstats *stats, tt_mem_record *record);
void tt_memstats_remove(tt_memstats *stats, tt_mem_record *record);
/* Peaks drop to the current levels: to measure one phase on its own. */
void tt_memstats_reset_peaks(tt_memstats *stats);

/* Fills out[0..max) with the largest live records, biggest first; returns
 * how many were written. */
size_t tt_memstats_largest(const tt_memstats *stats, const tt_mem_record **out, size_t max);

/* "1.50 GiB", "12.0 MiB", "512 B" into buf. */
const char *tt_format_bytes(uint64_t bytes, char *buf, size_t size);

#endif
