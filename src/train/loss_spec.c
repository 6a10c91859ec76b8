/* --loss and --class-weights: parsing, formatting and the window's counts;
 * see loss_spec.h. */
#include "train/loss_spec.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys a term may take: where each lives in tt_loss_term, its range. */
typedef struct key_row {
    const char *name;
    size_t offset;   /* a double of tt_loss_term, or per_window for "reduce" */
    double lo, hi;
} key_row;

#define KEY(name, field, lo, hi) {name, offsetof(tt_loss_term, field), lo, hi}

enum { MASK_LABEL = 1, MASK_INDEX = 2 };

/* One row per kind, in tt_loss_kind's order. */
typedef struct kind_row {
    const char *name;
    int masks;             /* MASK_LABEL | MASK_INDEX: the mask kinds it takes */
    const char *instead;   /* what to use under the mask kind it does not take */
    tt_loss_term defaults;
    key_row keys[4];
} kind_row;

static const kind_row kinds[TT_LOSS_KIND_COUNT] = {
    [TT_LOSS_BCE] = {"bce", MASK_LABEL, "ce (class-index masks take softmax cross-entropy)",
                     {TT_LOSS_BCE, 1, 0, -1, 0, 0, 0}, {{0}}},
    [TT_LOSS_CE] = {"ce", MASK_INDEX, "bce (multi-label masks take one sigmoid per class)",
                    {TT_LOSS_CE, 1, 0, -1, 0, 0, 0}, {{0}}},
    [TT_LOSS_FOCAL] = {"focal", MASK_LABEL | MASK_INDEX, NULL,
                       {TT_LOSS_FOCAL, 1, 2, -1, 0, 0, 0},
                       {KEY("gamma", gamma, 0, 10), KEY("alpha", alpha, 0, 1)}},
    [TT_LOSS_DICE] = {"dice", MASK_LABEL | MASK_INDEX, NULL,
                      {TT_LOSS_DICE, 1, 0, 0.5, 0.5, 1, 0},
                      {KEY("smooth", smooth, 1e-6, 1e6), {"reduce", 0, 0, 0}}},
    [TT_LOSS_TVERSKY] = {"tversky", MASK_LABEL | MASK_INDEX, NULL,
                         {TT_LOSS_TVERSKY, 1, 0, 0.3, 0.7, 1, 0},
                         {KEY("alpha", alpha, 0, 1), KEY("beta", beta, 0, 1),
                          KEY("smooth", smooth, 1e-6, 1e6), {"reduce", 0, 0, 0}}},
    [TT_LOSS_LOVASZ] = {"lovasz", MASK_LABEL | MASK_INDEX, NULL,
                        {TT_LOSS_LOVASZ, 1, 0, -1, 0, 0, 0}, {{0}}},
};

const char *tt_loss_kind_name(tt_loss_kind kind)
{
    return kind >= 0 && kind < TT_LOSS_KIND_COUNT ? kinds[kind].name : "?";
}

tt_loss_normaliser tt_loss_term_normaliser(const tt_loss_term *t, tt_mask_kind kind)
{
    switch (t->kind) {
    case TT_LOSS_CE:
        return TT_NORMALISE_WEIGHTS;
    case TT_LOSS_DICE:
    case TT_LOSS_TVERSKY:
        return t->per_window ? TT_NORMALISE_ONE : TT_NORMALISE_IMAGES;
    case TT_LOSS_LOVASZ:
        return TT_NORMALISE_IMAGES;
    default:
        (void)kind;
        return TT_NORMALISE_ITEMS;
    }
}

static const char *mask_name(tt_mask_kind kind)
{
    return kind == TT_MASK_CLASS_INDEX ? "class-index" : "multi-label";
}

static tt_status bad(const char *term, const char *what)
{
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "--loss: term \"%s\": %s; write terms as [WEIGHT*]NAME[:KEY=VALUE...] "
                        "joined by +, names bce, ce, focal, dice, tversky, lovasz (e.g. "
                        "bce+0.5*dice, focal:gamma=2, tversky:alpha=0.3:beta=0.7, "
                        "dice:reduce=window; docs/guide.md)",
                        term, what);
}

/* "key=value" into the term. */
static tt_status parse_key(const kind_row *row, const char *term, char *pair, tt_loss_term *t)
{
    char *eq = strchr(pair, '=');
    char what[160];
    if (!eq) {
        snprintf(what, sizeof what, "\"%s\" is not KEY=VALUE", pair);
        return bad(term, what);
    }
    *eq = '\0';
    const char *value = eq + 1;
    for (int k = 0; k < 4 && row->keys[k].name; k++) {
        const key_row *key = &row->keys[k];
        if (strcmp(pair, key->name) != 0) continue;
        if (strcmp(key->name, "reduce") == 0) {
            if (strcmp(value, "image") == 0) t->per_window = 0;
            else if (strcmp(value, "window") == 0) t->per_window = 1;
            else {
                snprintf(what, sizeof what, "reduce=%s: use image (per image and class) or "
                         "window (per class over the whole window)", value);
                return bad(term, what);
            }
            return NULL;
        }
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        if (!*value || *end || errno || !isfinite(v) || v < key->lo || v > key->hi) {
            snprintf(what, sizeof what, "%s=%s: give a number from %g to %g", key->name, value,
                     key->lo, key->hi);
            return bad(term, what);
        }
        *(double *)((char *)t + key->offset) = v;
        return NULL;
    }
    int n = snprintf(what, sizeof what, "%s takes no key \"%s\"", row->name, pair);
    for (int k = 0; k < 4 && row->keys[k].name && n < (int)sizeof what; k++)
        n += snprintf(what + n, sizeof what - (size_t)n, "%s%s", k ? ", " : "; it takes ",
                      row->keys[k].name);
    return bad(term, what);
}

/* One TERM (modified in place: the text is a copy). */
static tt_status parse_term(char *term, tt_mask_kind mask, tt_loss_term *t)
{
    char shown[96];
    snprintf(shown, sizeof shown, "%.80s", term);
    double weight = 1;
    char *star = strchr(term, '*');
    if (star) {
        *star = '\0';
        char *end = NULL;
        errno = 0;
        weight = strtod(term, &end);
        if (!*term || *end || errno || !isfinite(weight) || !(weight > 0) || weight > 1e6)
            return bad(shown, "the weight before * must be a number > 0");
        term = star + 1;
    }
    char *keys = strchr(term, ':');
    if (keys) *keys++ = '\0';
    int found = -1;
    for (int k = 0; k < TT_LOSS_KIND_COUNT; k++)
        if (strcmp(term, kinds[k].name) == 0) found = k;
    if (found < 0) return bad(shown, "unknown loss name");
    const kind_row *row = &kinds[found];
    int wanted = mask == TT_MASK_CLASS_INDEX ? MASK_INDEX : MASK_LABEL;
    if (!(row->masks & wanted)) {
        char what[200];
        snprintf(what, sizeof what, "%s does not apply to %s masks; use %s", row->name,
                 mask_name(mask), row->instead);
        return bad(shown, what);
    }
    *t = row->defaults;
    t->weight = weight;
    while (keys && *keys) {
        char *next = strchr(keys, ':');
        if (next) *next++ = '\0';
        TT_TRY(parse_key(row, shown, keys, t));
        keys = next;
    }
    if (t->kind == TT_LOSS_TVERSKY && !(t->alpha + t->beta > 0))
        return bad(shown, "alpha + beta must be > 0 (both 0 scores every prediction 1)");
    return NULL;
}

tt_status tt_loss_spec_parse(const char *text, tt_mask_kind mask, tt_loss_spec *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text || strcmp(text, "auto") == 0)
        text = mask == TT_MASK_CLASS_INDEX ? "ce" : "bce";
    char copy[512];
    if (strlen(text) >= sizeof copy)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--loss: longer than %zu characters",
                            sizeof copy - 1);
    strcpy(copy, text);
    char *at = copy;
    while (at) {
        char *next = strchr(at, '+');
        if (next) *next++ = '\0';
        if (out->count == TT_LOSS_TERMS_MAX)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--loss %s: at most %d terms", text,
                                TT_LOSS_TERMS_MAX);
        if (!*at) return bad(text, "an empty term (two + in a row, or one at an end)");
        tt_loss_term *t = &out->terms[out->count];
        TT_TRY(parse_term(at, mask, t));
        for (int k = 0; k < out->count; k++)
            if (out->terms[k].kind == t->kind)
                return bad(text, "a loss named twice: give it once, with its weight");
        out->count++;
        at = next;
    }
    return NULL;
}

/* printf into the rest of the buffer, stopping at its end */
static void append(char **at, size_t *left, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int n = vsnprintf(*at, *left, format, args);
    va_end(args);
    if (n < 0 || (size_t)n >= *left) n = *left ? (int)(*left - 1) : 0;
    *at += n;
    *left -= (size_t)n;
}

void tt_loss_spec_format(const tt_loss_spec *spec, char *text, size_t size)
{
    char *at = text;
    size_t left = size;
    if (size) text[0] = '\0';
    for (int i = 0; i < spec->count; i++) {
        const tt_loss_term *t = &spec->terms[i];
        const kind_row *row = &kinds[t->kind];
        if (i) append(&at, &left, "+");
        if (t->weight != 1) append(&at, &left, "%.9g*", t->weight);
        append(&at, &left, "%s", row->name);
        for (int k = 0; k < 4 && row->keys[k].name; k++) {
            const key_row *key = &row->keys[k];
            if (strcmp(key->name, "reduce") == 0) {
                if (t->per_window) append(&at, &left, ":reduce=window");
                continue;
            }
            double v = *(const double *)((const char *)t + key->offset);
            double d = *(const double *)((const char *)&row->defaults + key->offset);
            if (v != d) append(&at, &left, ":%s=%.9g", key->name, v);
        }
    }
}

int tt_loss_spec_two_pass(const tt_loss_spec *spec)
{
    for (int i = 0; i < spec->count; i++)
        if (spec->terms[i].per_window) return 1;
    return 0;
}

tt_status tt_class_weights_parse(const char *text, int classes, float *out)
{
    for (int k = 0; k < TT_LOSS_CLASSES_MAX; k++) out[k] = 1.0f;
    if (!text || !*text) return NULL;
    const char *at = text;
    int count = 0;
    double total = 0;
    while (*at) {
        char *end = NULL;
        errno = 0;
        double v = strtod(at, &end);
        if (end == at || errno || !isfinite(v) || v < 0 || v > 1e6 || (*end && *end != ','))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "--class-weights %s: value %d is not a number from 0 to 1e6; "
                                "give one weight per class, comma-separated (e.g. 1,2,1,4)",
                                text, count + 1);
        if (count < TT_LOSS_CLASSES_MAX) out[count] = (float)v;
        count++;
        total += v;
        at = *end ? end + 1 : end;
    }
    if (count != classes)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--class-weights %s: %d values for %d classes; give one per class "
                            "in the data set's order (`tiletrain data check --data DIR` lists them)",
                            text, count, classes);
    if (!(total > 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--class-weights %s: every weight is 0, so nothing would be "
                            "learned; give at least one > 0", text);
    return NULL;
}

void tt_loss_count(tt_loss_counts *c, const uint8_t *labels, int n, int planes, size_t hw,
                   int classes, tt_mask_kind kind, int ignore, const float *weights)
{
    c->images += n;
    if (kind == TT_MASK_CLASS_INDEX) {
        size_t pixels = (size_t)n * hw;
        double items = 0, weighted = 0;
        for (size_t i = 0; i < pixels; i++) {
            int label = labels[i];
            if (label == ignore || label >= classes) continue;
            items += 1;
            weighted += weights ? weights[label] : 1.0;
        }
        c->items += items;
        c->weights += weighted;
        return;
    }
    double items = 0;
    for (int image = 0; image < n; image++)
        for (int k = 0; k < planes; k++) {
            const uint8_t *plane = labels + ((size_t)image * planes + k) * hw;
            size_t valid = 0;
            for (size_t i = 0; i < hw; i++) valid += plane[i] != ignore && plane[i] <= 1;
            items += (double)valid;
        }
    c->items += items;
    c->weights += items;
}

double tt_loss_counts_of(const tt_loss_counts *c, const tt_loss_term *t, tt_mask_kind kind)
{
    switch (tt_loss_term_normaliser(t, kind)) {
    case TT_NORMALISE_ITEMS: return c->items;
    case TT_NORMALISE_WEIGHTS: return c->weights;
    case TT_NORMALISE_IMAGES: return c->images;
    default: return 1;
    }
}
