/* Current and peak bytes per category, and the list of live allocations. */
#include "core/memstats.h"

#include <stdio.h>

#include "core/status.h"

const char *tt_mem_category_name(tt_mem_category category)
{
    static const char *const names[] = {
        "parameters", "gradients", "optimizer", "activations",
        "workspace",  "data",      "other",
    };
    _Static_assert(sizeof names / sizeof names[0] == TT_MEM_CATEGORY_COUNT,
                   "every memory category needs a name");
    return (unsigned)category < TT_MEM_CATEGORY_COUNT ? names[category] : "?";
}

void tt_memstats_add(tt_memstats *stats, tt_mem_record *record)
{
    TT_ASSERT((unsigned)record->category < TT_MEM_CATEGORY_COUNT);
    tt_mem_category c = record->category;
    stats->current[c] += record->bytes;
    if (stats->current[c] > stats->peak[c]) stats->peak[c] = stats->current[c];
    stats->current_total += record->bytes;
    if (stats->current_total > stats->peak_total) stats->peak_total = stats->current_total;
    stats->allocations++;
    stats->live_count++;
    record->prev = NULL;
    record->next = stats->live;
    if (stats->live) stats->live->prev = record;
    stats->live = record;
}

void tt_memstats_remove(tt_memstats *stats, tt_mem_record *record)
{
    tt_mem_category c = record->category;
    TT_ASSERT(stats->current[c] >= record->bytes && stats->live_count > 0);
    stats->current[c] -= record->bytes;
    stats->current_total -= record->bytes;
    stats->live_count--;
    if (record->prev) record->prev->next = record->next;
    else stats->live = record->next;
    if (record->next) record->next->prev = record->prev;
    record->prev = record->next = NULL;
}

void tt_memstats_reset_peaks(tt_memstats *stats)
{
    for (int c = 0; c < TT_MEM_CATEGORY_COUNT; c++) stats->peak[c] = stats->current[c];
    stats->peak_total = stats->current_total;
}

size_t tt_memstats_largest(const tt_memstats *stats, const tt_mem_record **out, size_t max)
{
    size_t n = 0;
    for (const tt_mem_record *r = stats->live; r; r = r->next) {
        /* insertion into a short sorted array: max is small (a report) */
        size_t i = n < max ? n++ : max;
        if (i == max && (max == 0 || out[max - 1]->bytes >= r->bytes)) continue;
        if (i == max) i = max - 1;
        while (i > 0 && out[i - 1]->bytes < r->bytes) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = r;
    }
    return n;
}

const char *tt_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}
