/* Learning-rate schedules: evaluation, checks, parsing; see schedule.h. */
#include "optim/schedule.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static const double tt_pi = 3.14159265358979323846;

tt_schedule tt_schedule_constant(void)
{
    return (tt_schedule){.kind = TT_SCHEDULE_CONSTANT, .gamma = 0.1};
}

double tt_schedule_lr(const tt_schedule *s, double base_lr, int64_t step)
{
    int64_t t = step < 1 ? 1 : step;
    if (t <= s->warmup_steps) return base_lr * (double)t / (double)s->warmup_steps;
    int64_t k = t - s->warmup_steps; /* 1-based step after the warmup */
    switch (s->kind) {
    case TT_SCHEDULE_CONSTANT: return base_lr;
    case TT_SCHEDULE_COSINE: {
        double progress = (double)k / (double)(s->total_steps - s->warmup_steps);
        if (progress > 1) progress = 1;
        return s->min_lr + (base_lr - s->min_lr) * 0.5 * (1.0 + cos(tt_pi * progress));
    }
    case TT_SCHEDULE_STEP: return base_lr * pow(s->gamma, (double)((k - 1) / s->step_every));
    }
    return base_lr;
}

tt_status tt_schedule_check(const tt_schedule *s)
{
    if (s->warmup_steps < 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "schedule: warmup %" PRId64 " must be >= 0",
                            s->warmup_steps);
    switch (s->kind) {
    case TT_SCHEDULE_CONSTANT: return NULL;
    case TT_SCHEDULE_COSINE:
        if (s->total_steps <= s->warmup_steps)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "schedule: cosine total %" PRId64 " must exceed warmup %" PRId64,
                                s->total_steps, s->warmup_steps);
        if (!(s->min_lr >= 0) || isinf(s->min_lr))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "schedule: cosine min_lr %g must be finite and >= 0", s->min_lr);
        return NULL;
    case TT_SCHEDULE_STEP:
        if (s->step_every < 1)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "schedule: step every %" PRId64 " must be >= 1", s->step_every);
        if (!(s->gamma > 0) || isinf(s->gamma))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "schedule: step gamma %g must be finite and > 0", s->gamma);
        return NULL;
    }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "schedule: unknown kind %d", (int)s->kind);
}

/* ---- parsing ------------------------------------------------------------ */

#define TT_SCHEDULE_EXAMPLES                                                   \
    "write e.g. 'constant', 'cosine:warmup=500,total=20000,min_lr=1e-6' or "  \
    "'step:every=1000,gamma=0.5'"

typedef struct parse_ctx {
    const char *text; /* the whole text, for messages */
} parse_ctx;

static tt_status parse_error(const parse_ctx *ctx, const char *what)
{
    return tt_error_new(TT_ERR_FORMAT, "learning-rate schedule '%s': %s; %s", ctx->text, what,
                        TT_SCHEDULE_EXAMPLES);
}

static tt_status parse_int(const parse_ctx *ctx, const char *key, const char *value, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    char what[512];
    if (!*value || *end || errno || v < 0) {
        snprintf(what, sizeof what, "'%s' is not a whole number >= 0 for %s", value, key);
        return parse_error(ctx, what);
    }
    *out = v;
    return NULL;
}

static tt_status parse_real(const parse_ctx *ctx, const char *key, const char *value, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    char what[512];
    if (!*value || *end || errno || !isfinite(v) || isspace((unsigned char)*value)) {
        snprintf(what, sizeof what, "'%s' is not a finite number for %s", value, key);
        return parse_error(ctx, what);
    }
    *out = v;
    return NULL;
}

/* The keys each kind takes, in a fixed order; bit i of `seen` marks key i. */
static const char *const tt_schedule_keys[] = {"warmup", "total", "min_lr", "every", "gamma"};
enum { KEY_WARMUP, KEY_TOTAL, KEY_MIN_LR, KEY_EVERY, KEY_GAMMA, KEY_COUNT };
static const unsigned tt_schedule_allowed[] = {
    [TT_SCHEDULE_CONSTANT] = 1u << KEY_WARMUP,
    [TT_SCHEDULE_COSINE] = 1u << KEY_WARMUP | 1u << KEY_TOTAL | 1u << KEY_MIN_LR,
    [TT_SCHEDULE_STEP] = 1u << KEY_WARMUP | 1u << KEY_EVERY | 1u << KEY_GAMMA,
};
static const char *const tt_schedule_kind_names[] = {"constant", "cosine", "step"};

tt_status tt_schedule_parse(const char *text, tt_schedule *out)
{
    parse_ctx ctx = {text ? text : ""};
    char buf[256], what[512];
    if (strlen(ctx.text) >= sizeof buf) return parse_error(&ctx, "the text is too long");
    snprintf(buf, sizeof buf, "%s", ctx.text);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    tt_schedule s = tt_schedule_constant();
    int kind = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(buf, tt_schedule_kind_names[i]) == 0) kind = i;
    if (kind < 0) {
        snprintf(what, sizeof what, "unknown kind '%s' (known: constant, cosine, step)", buf);
        return parse_error(&ctx, what);
    }
    s.kind = (tt_schedule_kind)kind;
    unsigned seen = 0;
    char *rest = colon ? colon + 1 : NULL;
    if (rest && !*rest) return parse_error(&ctx, "nothing follows ':'");
    while (rest) {
        char *item = rest, *comma = strchr(item, ',');
        rest = comma ? comma + 1 : NULL;
        if (comma) *comma = '\0';
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(what, sizeof what, "'%s' is not key=value", item);
            return parse_error(&ctx, what);
        }
        *eq = '\0';
        const char *value = eq + 1;
        int key = -1;
        for (int i = 0; i < KEY_COUNT; i++)
            if (strcmp(item, tt_schedule_keys[i]) == 0) key = i;
        if (key < 0 || !(tt_schedule_allowed[kind] & (1u << key))) {
            snprintf(what, sizeof what, "%s takes no key '%s'", tt_schedule_kind_names[kind], item);
            return parse_error(&ctx, what);
        }
        if (seen & (1u << key)) {
            snprintf(what, sizeof what, "key '%s' is given twice", item);
            return parse_error(&ctx, what);
        }
        seen |= 1u << key;
        tt_status st = NULL;
        switch (key) {
        case KEY_WARMUP: st = parse_int(&ctx, item, value, &s.warmup_steps); break;
        case KEY_TOTAL: st = parse_int(&ctx, item, value, &s.total_steps); break;
        case KEY_MIN_LR: st = parse_real(&ctx, item, value, &s.min_lr); break;
        case KEY_EVERY: st = parse_int(&ctx, item, value, &s.step_every); break;
        case KEY_GAMMA: st = parse_real(&ctx, item, value, &s.gamma); break;
        }
        if (st) return st;
    }
    if (kind == TT_SCHEDULE_COSINE && !(seen & (1u << KEY_TOTAL)))
        return parse_error(&ctx, "cosine needs total=<optimizer steps>");
    if (kind == TT_SCHEDULE_STEP && !(seen & (1u << KEY_EVERY)))
        return parse_error(&ctx, "step needs every=<optimizer steps>");
    tt_status st = tt_schedule_check(&s);
    if (st) {
        snprintf(what, sizeof what, "%s", tt_status_message(st));
        tt_status_free(st);
        return parse_error(&ctx, what);
    }
    *out = s;
    return NULL;
}

int tt_schedule_format(const tt_schedule *s, char *buf, size_t size)
{
    switch (s->kind) {
    case TT_SCHEDULE_COSINE:
        return snprintf(buf, size, "cosine:warmup=%" PRId64 ",total=%" PRId64 ",min_lr=%.17g",
                        s->warmup_steps, s->total_steps, s->min_lr);
    case TT_SCHEDULE_STEP:
        return snprintf(buf, size, "step:every=%" PRId64 ",gamma=%.17g,warmup=%" PRId64,
                        s->step_every, s->gamma, s->warmup_steps);
    case TT_SCHEDULE_CONSTANT: break;
    }
    return snprintf(buf, size, "constant:warmup=%" PRId64, s->warmup_steps);
}
