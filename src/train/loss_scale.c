/* Dynamic loss scaling; see loss_scale.h. */
#include "train/loss_scale.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tt_status tt_loss_scale_start(const char *text, tt_precision precision, tt_loss_scale *out)
{
    *out = (tt_loss_scale){0};
    if (!text || !*text || strcmp(text, "auto") == 0) {
        if (precision == TT_PRECISION_FP16) out->scale = TT_LOSS_SCALE_INIT;
        return NULL;
    }
    if (strcmp(text, "off") == 0) return NULL;
    char *end;
    double v = strtod(text, &end);
    int exponent;
    if (*end || !(v >= TT_LOSS_SCALE_MIN && v <= TT_LOSS_SCALE_MAX) || frexp(v, &exponent) != 0.5)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--loss-scale %s: give auto (65536 with --precision fp16, none "
                            "otherwise), off, or the initial scale as a power of two from 2^-126 "
                            "to 2^127 (e.g. 65536)", text);
    out->scale = v;
    return NULL;
}

int tt_loss_scale_update(tt_loss_scale *s, int nonfinite)
{
    if (s->scale <= 0) return 0;
    if (nonfinite) {
        s->clean = 0;
        if (s->scale / 2 < TT_LOSS_SCALE_MIN) return 0;
        s->scale /= 2;
        return 1;
    }
    if (++s->clean < (s->interval > 0 ? s->interval : TT_LOSS_SCALE_INTERVAL)) return 0;
    s->clean = 0;
    if (s->scale * 2 > TT_LOSS_SCALE_MAX) return 0;
    s->scale *= 2;
    return 1;
}
