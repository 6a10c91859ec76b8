/*
 * The builders every data set format uses: items, classes, problems and
 * the image probe of an item (folders are listed by tt_image_list_dir).  The format files call these;
 * they call no format.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "data/dataset_internal.h"
#include "data/dataset_probe.h"

static tt_status oom(void)
{
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "opening a data set: out of host memory");
}


char *tt_ds_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *path = tt_malloc(a + b + 2);
    if (!path) return NULL;
    memcpy(path, dir, a);
    path[a] = '/';
    memcpy(path + a + 1, name, b + 1);
    return path;
}

tt_status tt_ds_problem(tt_dataset *ds, const char *item, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (ds->problem_count == ds->problem_capacity) {
        int capacity = ds->problem_capacity ? 2 * ds->problem_capacity : 16;
        tt_dataset_problem *grown = tt_realloc(ds->problems, sizeof *grown * (size_t)capacity);
        if (!grown) return oom();
        ds->problems = grown;
        ds->problem_capacity = capacity;
    }
    tt_dataset_problem *p = &ds->problems[ds->problem_count];
    p->item = tt_strdup(item ? item : "");
    p->reason = tt_strdup(line);
    if (!p->item || !p->reason) {
        free(p->item);
        free(p->reason);
        return oom();
    }
    ds->problem_count++;
    return NULL;
}

tt_status tt_ds_problem_status(tt_dataset *ds, int index, const char *item, tt_status problem)
{
    if (index >= 0) ds->items[index].bad = 1;
    if (tt_status_code(problem) == TT_ERR_OUT_OF_MEMORY) return problem;
    tt_status status = tt_ds_problem(ds, item, "%s", tt_status_message(problem));
    tt_status_free(problem);
    return status;
}

tt_status tt_ds_add_item(tt_dataset *ds, const char *name, const char *image_path, int *index)
{
    if (ds->count == ds->capacity) {
        int capacity = ds->capacity ? 2 * ds->capacity : 64;
        tt_ds_item *grown = tt_realloc(ds->items, sizeof *grown * (size_t)capacity);
        if (!grown) return oom();
        ds->items = grown;
        ds->capacity = capacity;
    }
    tt_ds_item *item = &ds->items[ds->count];
    memset(item, 0, sizeof *item);
    item->name = tt_strdup(name);
    item->image_path = tt_strdup(image_path);
    if (!item->name || !item->image_path) {
        free(item->name);
        free(item->image_path);
        return oom();
    }
    *index = ds->count++;
    return NULL;
}

tt_status tt_ds_add_class(tt_dataset *ds, const char *name, int *index)
{
    char **grown = tt_realloc(ds->class_names, sizeof *grown * (size_t)(ds->classes + 1));
    if (!grown) return oom();
    ds->class_names = grown;
    if (!(grown[ds->classes] = tt_strdup(name))) return oom();
    *index = ds->classes++;
    return NULL;
}

int tt_ds_find_class(const tt_dataset *ds, const char *name)
{
    for (int i = 0; i < ds->classes; i++)
        if (strcmp(ds->class_names[i], name) == 0) return i;
    return -1;
}

tt_status tt_ds_probe_item(tt_dataset *ds, int index)
{
    tt_ds_item *item = &ds->items[index];
    tt_image_header header;
    tt_status problem = tt_probe_image(item->image_path, ds->max_pixels, &header);
    if (problem) return tt_ds_problem_status(ds, index, item->name, problem);
    item->width = header.width;
    item->height = header.height;
    return NULL;
}

void tt_ds_free_item(const tt_dataset *ds, tt_ds_item *item)
{
    free(item->name);
    free(item->image_path);
    if (ds->format && ds->format->free_item) ds->format->free_item(item->format_data);
}

int tt_ds_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int tt_ds_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
