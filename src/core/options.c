/* Options from flags, INI (inih) and JSON (cJSON) files; see options.h. */
#include "core/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <ini.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"

/* "micro_batch" and "micro-batch" are the same name. */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a == '_' ? '-' : *a, y = *b == '_' ? '-' : *b;
        if (x != y) return 0;
    }
    return *a == *b;
}

/* Edit distance with transpositions (optimal string alignment: "trian" is
 * one edit from "train"), for "did you mean" (short names only); '_' in
 * `a` matches '-' in `b`. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    static _Thread_local size_t d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = (a[i - 1] == b[j - 1] || (a[i - 1] == '_' && b[j - 1] == '-')) ? 0 : 1;
            size_t best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* Whether a word d edits away from `typed` is a likely meaning of it. */
static int close_enough(size_t d, const char *typed)
{
    size_t len = strlen(typed);
    return d <= (len < 6 ? 1 : len / 3);
}

/* The option closest to `name`, or NULL when none is close. */
static const tt_opt *closest(const tt_opt *table, size_t count, const char *name)
{
    const tt_opt *best = NULL;
    size_t best_d = 99;
    for (size_t i = 0; i < count; i++) {
        size_t d = distance(name, table[i].name);
        if (d < best_d) best_d = d, best = &table[i];
    }
    return best && close_enough(best_d, name) ? best : NULL;
}

const char *tt_closest_word(const char *typed, const char *const *words, size_t count)
{
    const char *best = NULL;
    size_t best_d = 99;
    for (size_t i = 0; i < count; i++) {
        size_t d = distance(typed, words[i]);
        if (d < best_d) best_d = d, best = words[i];
    }
    return best && close_enough(best_d, typed) ? best : NULL;
}

static const tt_opt *find(const tt_opt *table, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (same_name(table[i].name, name)) return &table[i];
    return NULL;
}

static tt_status range_error(const tt_opt *o, const char *value, const char *where)
{
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: '%s' for %s is out of range; give %g to %g",
                        where, value, o->name, o->min, o->max);
}

static int parse_int(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return 0;
    *out = v;
    return 1;
}

/* The index of `value` in choices "a|b|c", -1 when it is none of them. */
static int choice_index(const char *choices, const char *value)
{
    size_t n = strlen(value);
    int index = 0;
    for (const char *p = choices; *p; index++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0) return index;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

const char *tt_opt_choice_name(const char *choices, int index, char *buf, size_t size)
{
    const char *p = choices;
    for (int i = 0; p && i < index; i++) {
        p = strchr(p, '|');
        if (p) p++;
    }
    if (!p || index < 0) p = "";
    snprintf(buf, size, "%.*s", (int)strcspn(p, "|"), p);
    return buf;
}

int tt_opt_index(const tt_opt *table, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (same_name(table[i].name, name)) return (int)i;
    return -1;
}

/* Options a release had and a later one replaced: what to write instead,
 * or NULL. */
static const char *retired(const tt_opt *table, size_t count, const char *name)
{
    static const char *const options[][2] = {
        {"dice-weight", "--loss bce+X*dice (e.g. --loss bce+0.5*dice; docs/guide.md, \"Losses\")"},
    };
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (same_name(options[i][0], name) && find(table, count, "loss")) return options[i][1];
    return NULL;
}

tt_status tt_opt_set(const tt_opt *table, size_t count, void *opts, const char *name,
                     const char *value, const char *where)
{
    const tt_opt *o = find(table, count, name);
    if (!o && retired(table, count, name))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: option '%s' was replaced: write %s",
                            where, name, retired(table, count, name));
    if (!o) {
        const tt_opt *near = closest(table, count, name);
        if (near)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: unknown option '%s'; did you mean '%s'?", where, name,
                                near->name);
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: unknown option '%s'; see --help for the "
                            "options there are", where, name);
    }
    char *field = (char *)opts + o->offset;
    int checked = o->min <= o->max;
    long long iv;
    switch (o->kind) {
    case TT_OPT_INT_AUTO:
        if (strcmp(value, "auto") == 0) {
            *(int *)field = 0;
            return NULL;
        }
        /* fall through */
    case TT_OPT_INT:
        if (!parse_int(value, &iv) || iv < INT_MIN || iv > INT_MAX)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: '%s' for %s is not a whole number",
                                where, value, o->name);
        if (checked && (iv < o->min || iv > o->max)) return range_error(o, value, where);
        *(int *)field = (int)iv;
        return NULL;
    case TT_OPT_U64:
        if (!parse_int(value, &iv) || iv < 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: '%s' for %s is not a non-negative whole number", where, value,
                                o->name);
        *(uint64_t *)field = (uint64_t)iv;
        return NULL;
    case TT_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: '%s' for %s is not a number", where,
                                value, o->name);
        if (checked && (v < o->min || v > o->max)) return range_error(o, value, where);
        *(double *)field = v;
        return NULL;
    }
    case TT_OPT_BYTES: {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        double unit = 1;
        while (*end == ' ') end++;
        static const struct { const char *suffix; double unit; } units[] = {
            {"", 1}, {"B", 1}, {"K", 1e3}, {"KB", 1e3}, {"KiB", 1024.0}, {"M", 1e6}, {"MB", 1e6},
            {"MiB", 1048576.0}, {"G", 1e9}, {"GB", 1e9}, {"GiB", 1073741824.0}, {"T", 1e12},
            {"TB", 1e12}, {"TiB", 1099511627776.0},
        };
        int known = 0;
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
            if (strcmp(end, units[u].suffix) == 0) unit = units[u].unit, known = 1;
        if (errno || end == value || !known || !(v > 0) || v * unit > 1.8e19)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: '%s' for %s is not a size; write e.g. 2GiB, 512MiB or 1.5GB",
                                where, value, o->name);
        *(uint64_t *)field = (uint64_t)(v * unit);
        return NULL;
    }
    case TT_OPT_STRING:
        if (strlen(value) >= TT_OPT_STRING_MAX)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the value of %s is too long", where,
                                o->name);
        strcpy(field, value);
        return NULL;
    case TT_OPT_CHOICE:
    case TT_OPT_ENUM: {
        int index = choice_index(o->choices, value);
        if (index < 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: '%s' for %s is not one of %s", where,
                                value, o->name, o->choices);
        if (o->kind == TT_OPT_ENUM) *(int *)field = index;
        else strcpy(field, value);
        return NULL;
    }
    case TT_OPT_TRIPLE: {
        float v[3];
        const char *p = value;
        char *end;
        int positive = checked && o->min > 0;
        for (int i = 0; i < 3; i++) {
            errno = 0;
            v[i] = strtof(p, &end);
            if (errno || end == p || (i < 2 && *end != ',') || (i == 2 && *end) ||
                !isfinite(v[i]) || (positive && !(v[i] > 0)))
                return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                    "%s: '%s' for %s is not three %snumbers, one per channel; "
                                    "write e.g. 0.485,0.456,0.406", where, value, o->name,
                                    positive ? "positive " : "");
            p = end + 1;
        }
        memcpy(field, v, sizeof v);
        return NULL;
    }
    case TT_OPT_FLAG:
        if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0)
            *(int *)field = 1;
        else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 ||
                 strcmp(value, "no") == 0)
            *(int *)field = 0;
        else
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: '%s' for %s is not true or false",
                                where, value, o->name);
        return NULL;
    case TT_OPT_SIZE2: {
        int *hw = (int *)field;
        long long h, w;
        char buf[64];
        snprintf(buf, sizeof buf, "%s", value);
        char *x = strchr(buf, 'x');
        if (!x) x = strchr(buf, 'X');
        if (x) *x = '\0';
        if (!parse_int(buf, &h) || (x ? !parse_int(x + 1, &w) : !parse_int(buf, &w)) || h < 1 ||
            w < 1 || h > 1000000 || w > 1000000)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: '%s' for %s is not a size; write HxW, e.g. 256x256", where,
                                value, o->name);
        hw[0] = (int)h;
        hw[1] = (int)w;
        return NULL;
    }
    }
    return tt_error_new(TT_ERR_INTERNAL, "option %s has an unknown kind", o->name);
}

typedef struct {
    const tt_opt *table;
    size_t count;
    void *opts;
    unsigned char *given;   /* may be NULL */
    char bad_name[128];     /* the first key that failed, to report with its line */
    char bad_value[TT_OPT_STRING_MAX];
    int failed;
} ini_ctx;

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
    (void)section;
    ini_ctx *c = user;
    tt_status s = tt_opt_set(c->table, c->count, c->opts, name, value, "");
    if (!s) {
        int i = tt_opt_index(c->table, c->count, name);
        if (c->given && i >= 0) c->given[i] = 1;
        return 1;
    }
    tt_status_free(s);
    snprintf(c->bad_name, sizeof c->bad_name, "%s", name);
    snprintf(c->bad_value, sizeof c->bad_value, "%s", value);
    c->failed = 1;
    return 0; /* inih then returns this line's number */
}

static tt_status load_json(const tt_opt *table, size_t count, void *opts, const char *path,
                           const char *text, unsigned char *given)
{
    cJSON *root = cJSON_Parse(text);
    if (!root || !cJSON_IsObject(root)) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && *p; p++) line += *p == '\n';
        cJSON_Delete(root);
        return tt_error_new(TT_ERR_FORMAT, "%s:%d: not a JSON object of options", path, line);
    }
    tt_status status = NULL;
    cJSON *item;
    cJSON_ArrayForEach(item, root)
    {
        /* the line of the key, for the message */
        int line = 1;
        char quoted[300];
        snprintf(quoted, sizeof quoted, "\"%s\"", item->string);
        const char *at = strstr(text, quoted);
        for (const char *p = text; at && p < at; p++) line += *p == '\n';
        char where[1100], value[TT_OPT_STRING_MAX];
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (cJSON_IsString(item)) snprintf(value, sizeof value, "%s", item->valuestring);
        else if (cJSON_IsBool(item)) snprintf(value, sizeof value, "%s", cJSON_IsTrue(item) ? "true" : "false");
        else if (cJSON_IsNumber(item)) {
            double v = item->valuedouble;
            if (v == floor(v) && fabs(v) < 1e15) snprintf(value, sizeof value, "%.0f", v);
            else snprintf(value, sizeof value, "%.17g", v);
        } else {
            status = tt_error_new(TT_ERR_FORMAT, "%s: the value of '%s' must be a string, number "
                                  "or boolean", where, item->string);
            break;
        }
        status = tt_opt_set(table, count, opts, item->string, value, where);
        if (status) break;
        int i = tt_opt_index(table, count, item->string);
        if (given && i >= 0) given[i] = 1;
    }
    cJSON_Delete(root);
    return status;
}

static tt_status load_file(const tt_opt *table, size_t count, void *opts, const char *path,
                           unsigned char *given)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tt_error_new(TT_ERR_IO, "cannot open config file '%s': %s", path, strerror(errno));
    tt_status unreadable = tt_read_fault("the config file", path);
    if (unreadable) {
        fclose(f);
        return unreadable;
    }
    char *text = NULL;
    size_t size = 0, cap = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        if (size + 2 > cap) {
            cap = cap ? 2 * cap : 4096;
            char *grown = tt_realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                return tt_error_new(TT_ERR_OUT_OF_MEMORY, "reading '%s': out of memory", path);
            }
            text = grown;
        }
        text[size++] = (char)ch;
    }
    if (ferror(f)) { /* a config read in part would set only some options */
        free(text);
        fclose(f);
        return tt_error_new(TT_ERR_IO, "cannot read config file '%s': %s; check the disk", path,
                            strerror(errno));
    }
    fclose(f);
    if (!text) return NULL; /* an empty file sets nothing */
    text[size] = '\0';
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    tt_status status = NULL;
    if (*p == '{') {
        status = load_json(table, count, opts, path, text, given);
    } else {
        ini_ctx c = {.table = table, .count = count, .opts = opts, .given = given};
        int line = ini_parse_string(text, on_ini_key, &c);
        char where[1100];
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (c.failed) /* again, now that the line is known, for the message */
            status = tt_opt_set(table, count, opts, c.bad_name, c.bad_value, where);
        else if (line != 0)
            status = tt_error_new(TT_ERR_FORMAT, "%s: not a 'name = value' line", where);
    }
    free(text);
    return status;
}

tt_status tt_opt_load_file(const tt_opt *table, size_t count, void *opts, const char *path)
{
    return load_file(table, count, opts, path, NULL);
}

tt_status tt_opt_parse_args(const tt_opt *table, size_t count, void *opts, int argc, char **argv,
                            int first, int *help)
{
    return tt_opt_parse_args_given(table, count, opts, argc, argv, first, help, NULL);
}

tt_status tt_opt_parse_args_given(const tt_opt *table, size_t count, void *opts, int argc,
                                  char **argv, int first, int *help, unsigned char *given)
{
    *help = 0;
    if (given) memset(given, 0, count);
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            *help = 1;
            return NULL;
        }
    }
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc)
                return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--config needs a file");
            TT_TRY(load_file(table, count, opts, argv[i + 1], given));
        }
    }
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unexpected argument '%s'", arg);
        char name[128];
        snprintf(name, sizeof name, "%s", arg + 2);
        char *eq = strchr(name, '=');
        const char *value = NULL;
        if (eq) {
            *eq = '\0';
            value = arg + 2 + (eq - name) + 1;
        }
        const tt_opt *o = find(table, count, name);
        if (!o && retired(table, count, name))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "option '--%s' was replaced: write %s",
                                name, retired(table, count, name));
        if (!o) {
            const tt_opt *near = closest(table, count, name);
            if (near)
                return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                    "unknown option '--%s'; did you mean '--%s'?", name, near->name);
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "unknown option '--%s'", name);
        }
        if (o->kind == TT_OPT_FLAG && !value) value = "1";
        if (!value) {
            if (i + 1 >= argc)
                return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--%s needs a value (%s)", o->name,
                                    o->metavar ? o->metavar : "VALUE");
            value = argv[++i];
        }
        char where[160];
        snprintf(where, sizeof where, "--%s", o->name);
        TT_TRY(tt_opt_set(table, count, opts, o->name, value, where));
        if (given) given[o - table] = 1;
    }
    return NULL;
}

tt_opt *tt_opt_table_concat(const tt_opt *base, size_t count, size_t offset, const tt_opt *extra,
                            size_t extra_count, size_t *total)
{
    *total = 0;
    tt_opt *out = tt_malloc((count + extra_count ? count + extra_count : 1) * sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < count; i++) {
        out[i] = base[i];
        out[i].offset += offset;
    }
    if (extra_count) memcpy(out + count, extra, extra_count * sizeof *out);
    *total = count + extra_count;
    return out;
}

/* The shortest %g text of v that reads back the same (as a float when
 * `single`), at most `most` digits. */
static void shortest(char *buf, size_t size, double v, int most, int single)
{
    for (int digits = 1; digits <= most; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) return;
    }
}

const char *tt_opt_format(const tt_opt *o, const void *opts, char *buf, size_t size)
{
    const char *field = (const char *)opts + o->offset;
    buf[0] = '\0';
    switch (o->kind) {
    case TT_OPT_INT:
        snprintf(buf, size, "%d", *(const int *)field);
        break;
    case TT_OPT_INT_AUTO:
        if (*(const int *)field == 0) snprintf(buf, size, "auto");
        else snprintf(buf, size, "%d", *(const int *)field);
        break;
    case TT_OPT_U64:
        snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case TT_OPT_DOUBLE:
        shortest(buf, size, *(const double *)field, 17, 0);
        break;
    case TT_OPT_BYTES: {
        uint64_t v = *(const uint64_t *)field;
        if (v && v % 1073741824u == 0) snprintf(buf, size, "%lluGiB", (unsigned long long)(v >> 30));
        else if (v && v % 1048576u == 0) snprintf(buf, size, "%lluMiB", (unsigned long long)(v >> 20));
        else if (v) snprintf(buf, size, "%llu", (unsigned long long)v);
        break;
    }
    case TT_OPT_STRING:
    case TT_OPT_CHOICE:
        snprintf(buf, size, "%s", field);
        break;
    case TT_OPT_FLAG:
        if (*(const int *)field) snprintf(buf, size, "true");
        break;
    case TT_OPT_SIZE2: {
        const int *hw = (const int *)field;
        snprintf(buf, size, "%dx%d", hw[0], hw[1]);
        break;
    }
    case TT_OPT_ENUM:
        tt_opt_choice_name(o->choices, *(const int *)field, buf, size);
        break;
    case TT_OPT_TRIPLE: {
        const float *v = (const float *)field;
        if (isnan(v[0])) break;
        char parts[3][32];
        for (int k = 0; k < 3; k++) shortest(parts[k], sizeof parts[k], v[k], 9, 1);
        snprintf(buf, size, "%s,%s,%s", parts[0], parts[1], parts[2]);
        break;
    }
    }
    return buf;
}

void tt_opt_print_help_full(const tt_opt *table, size_t count, const void *defaults, FILE *out,
                            const char *(*note)(const char *name))
{
    for (size_t i = 0; i < count; i++) {
        const tt_opt *o = &table[i];
        char left[96], value[96] = "", dflt[128] = "";
        if (o->kind == TT_OPT_FLAG) snprintf(left, sizeof left, "--%s", o->name);
        else snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        size_t len = strlen(o->help);
        int paren = len && o->help[len - 1] == ')'; /* "(0: off)" -> "(0: off; default 0)" */
        if (defaults && o->kind != TT_OPT_FLAG && !strstr(o->help, "default") &&
            tt_opt_format(o, defaults, value, sizeof value)[0])
            snprintf(dflt, sizeof dflt, paren ? "; default %s)" : " (default %s)", value);
        else
            paren = 0;
        const char *extra = note ? note(o->name) : NULL;
        fprintf(out, "  %-26s %.*s%s%s%s\n", left, (int)(paren ? len - 1 : len), o->help, dflt,
                extra ? " " : "", extra ? extra : "");
    }
    fprintf(out, "  %-26s %s\n", "--config FILE",
            "read options from an INI or JSON file; flags override it");
}

void tt_opt_print_help(const tt_opt *table, size_t count, FILE *out)
{
    tt_opt_print_help_full(table, count, NULL, out, NULL);
}
