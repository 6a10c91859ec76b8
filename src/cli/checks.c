/* The checks list; see checks.h. */
#include "cli/checks.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

void tt_checks_add(tt_checks *c, const tt_check *one)
{
    if (c->count == c->capacity) {
        int capacity = c->capacity ? 2 * c->capacity : 32;
        tt_check *items = tt_realloc(c->items, (size_t)capacity * sizeof *items);
        if (!items) {
            c->oom = 1;
            c->failures += one->failed;
            return;
        }
        c->items = items, c->capacity = capacity;
    }
    c->items[c->count++] = *one;
    c->failures += one->failed;
    if (!c->out) return;
    fprintf(c->out, "  %-44s", one->what);
    if (one->bound > 0) fprintf(c->out, " error %.2e (bound %.1e)", one->error, one->bound);
    fprintf(c->out, "  %s", one->failed ? "WRONG" : one->slow ? "slow" : "right");
    if (one->seconds > 0) fprintf(c->out, "  (%.2f s)", one->seconds);
    if (one->note[0]) fprintf(c->out, "  %s", one->note);
    fputc('\n', c->out);
}

cJSON *tt_checks_json(const tt_checks *c)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < c->count; i++) {
        const tt_check *k = &c->items[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "what", k->what);
        cJSON_AddStringToObject(o, "verdict", k->failed ? "wrong" : k->slow ? "slow" : "right");
        if (k->bound > 0) {
            cJSON_AddNumberToObject(o, "error", k->error < 1e30 ? k->error : 1e30);
            cJSON_AddNumberToObject(o, "bound", k->bound);
        }
        cJSON_AddNumberToObject(o, "seconds", k->seconds);
        if (k->note[0]) cJSON_AddStringToObject(o, "note", k->note);
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

void tt_checks_free(tt_checks *c)
{
    free(c->items);
    memset(c, 0, sizeof *c);
}
