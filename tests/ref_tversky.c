/* Double-precision reference of the Tversky region loss; see ref_tversky.h.
 * Written straight from the formulas: probabilities first, then each
 * region's (I, P, T), the scores, and the chain rule back to the logits.
 * Then the suite's cases and their device round trips. */
#include "ref_tversky.h"

#include <math.h>
#include <stdlib.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "ref_loss.h"

static double sigmoid(double x)
{
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

double ref_tversky(const double *logits, const uint8_t *targets, const ref_tversky_case *k,
                   long *invalid, double *dlogits)
{
    int n = k->n, c = k->c, hw = k->hw;
    size_t total = (size_t)n * c * hw;
    int regions = k->per_image ? n * c : c;
    double *p = malloc(total * sizeof(double));
    double *t = malloc(total * sizeof(double));
    char *valid = malloc(total);
    double *sums = calloc((size_t)regions * 3, sizeof(double));
    CU_ASSERT_FATAL(p && t && valid && sums);
    long bad = 0;
    for (int i = 0; i < n; i++)
        for (int q = 0; q < hw; q++) {
            const double *x = logits + (size_t)i * c * hw + q; /* stride hw */
            double m = x[0], e = 0;
            for (int j = 1; j < c; j++) m = fmax(m, x[(size_t)j * hw]);
            for (int j = 0; j < c; j++) e += exp(x[(size_t)j * hw] - m);
            int label = targets[(size_t)i * hw + q];
            if (k->softmax && label != k->ignore && label >= c) bad++;
            for (int j = 0; j < c; j++) {
                size_t at = ((size_t)i * c + j) * hw + q;
                int target = k->softmax ? label == j : targets[at];
                int skip = k->softmax ? label == k->ignore || label >= c
                                      : targets[at] == k->ignore || targets[at] > 1;
                if (!k->softmax && targets[at] != k->ignore && targets[at] > 1) bad++;
                valid[at] = !skip;
                t[at] = target;
                p[at] = k->softmax ? exp(logits[at] - m) / e : sigmoid(logits[at]);
            }
        }
    for (size_t at = 0; at < total; at++) {
        if (!valid[at]) continue;
        int plane = (int)(at / hw), region = k->per_image ? plane : plane % c;
        sums[region * 3 + 0] += p[at] * t[at];
        sums[region * 3 + 1] += p[at];
        sums[region * 3 + 2] += t[at];
    }
    double weight_sum = 0, loss = 0;
    for (int j = 0; j < c; j++) weight_sum += k->weights ? k->weights[j] : 1;
    /* per region: score, then D in place of (P, T) */
    for (int r = 0; r < regions; r++) {
        double inter = sums[r * 3], psum = sums[r * 3 + 1], tsum = sums[r * 3 + 2];
        double denom = inter + k->alpha * (psum - inter) + k->beta * (tsum - inter) + k->smooth;
        double score = (inter + k->smooth) / denom;
        loss += (k->weights ? k->weights[r % c] : 1) * (1 - score) / weight_sum;
        sums[r * 3 + 1] = score;
        sums[r * 3 + 2] = denom;
    }
    if (dlogits) {
        /* g = d loss / d p at valid elements: share_k * -(t - score ((1 - a - b) t + a)) / D */
        double *g = calloc(total, sizeof(double));
        CU_ASSERT_FATAL(g != NULL);
        for (size_t at = 0; at < total; at++) {
            if (!valid[at]) continue;
            int plane = (int)(at / hw), region = k->per_image ? plane : plane % c;
            double score = sums[region * 3 + 1], denom = sums[region * 3 + 2];
            double share = (k->weights ? k->weights[plane % c] : 1) / weight_sum;
            g[at] = -share * (t[at] - score * ((1 - k->alpha - k->beta) * t[at] + k->alpha)) /
                    denom;
        }
        for (int i = 0; i < n; i++)
            for (int q = 0; q < hw; q++) {
                size_t base = (size_t)i * c * hw + q;
                if (!k->softmax) {
                    for (int j = 0; j < c; j++) {
                        size_t at = base + (size_t)j * hw;
                        if (valid[at]) dlogits[at] += g[at] * p[at] * (1 - p[at]);
                    }
                    continue;
                }
                if (!valid[base]) continue; /* a pixel: every class or none */
                double gp = 0;
                for (int j = 0; j < c; j++) {
                    size_t at = base + (size_t)j * hw;
                    gp += g[at] * p[at];
                }
                for (int j = 0; j < c; j++) {
                    size_t at = base + (size_t)j * hw;
                    dlogits[at] += p[at] * (g[at] - gp);
                }
            }
        free(g);
    }
    if (invalid) *invalid = bad;
    free(p), free(t), free(valid), free(sums);
    return loss;
}

/* ---- the suite's cases ---- */

ref_tversky_data ref_tversky_make(const ref_tversky_shape *s, int softmax, int per_image,
                                  uint64_t seed, float range)
{
    ref_tversky_data d = {.desc = tt_loss_desc_make(s->n, s->c, s->h, s->w)};
    d.tv = (tt_tversky){0.5f, 0.5f, TT_TVERSKY_SMOOTH_DEFAULT, softmax, per_image};
    d.total = (size_t)s->n * s->c * s->h * s->w;
    d.target_bytes = softmax ? (size_t)s->n * s->h * s->w : d.total;
    d.logits = malloc(d.total * sizeof(float));
    d.targets = malloc(d.target_bytes);
    CU_ASSERT_FATAL(d.logits && d.targets);
    th_fill_uniform(d.logits, d.total, -range, range, &seed);
    for (size_t i = 0; i < d.target_bytes; i++) {
        d.targets[i] = softmax ? (uint8_t)th_uniform(&seed, 0, s->c)
                               : th_uniform(&seed, 0, 1) < 0.3;
        if (th_uniform(&seed, 0, 100) < s->ignore_fraction) d.targets[i] = 255;
    }
    return d;
}

void ref_tversky_free(ref_tversky_data *d)
{
    free(d->logits);
    free(d->targets);
}

ref_tversky_case ref_tversky_case_of(const ref_tversky_data *d)
{
    return (ref_tversky_case){d->desc.n, d->desc.c, d->desc.h * d->desc.w, d->desc.ignore,
                              d->tv.alpha, d->tv.beta, d->tv.smooth, d->tv.softmax,
                              d->tv.per_image, d->has_weights ? d->weights : NULL};
}

ref_tversky_device ref_tversky_upload(ref_tversky_data *d)
{
    ref_tversky_device b = {th_upload(d->logits, d->total, "logits"),
                            ref_upload_u8(d->targets, d->target_bytes, "targets"), NULL};
    d->desc.weights = (tt_mem){NULL, 0};
    if (d->has_weights) {
        float w[8];
        for (int k = 0; k < d->desc.c; k++) w[k] = (float)d->weights[k];
        b.weights = th_upload(w, (size_t)d->desc.c, "class weights");
        d->desc.weights = tt_mem_of(b.weights);
    }
    return b;
}

void ref_tversky_device_free(ref_tversky_device *b)
{
    tt_buffer_free(b->logits), tt_buffer_free(b->targets), tt_buffer_free(b->weights);
}

tt_loss_value ref_tversky_device_forward(ref_tversky_data *d)
{
    ref_tversky_device b = ref_tversky_upload(d);
    tt_buffer *res = ref_loss_block();
    TH_OK(tt_tversky_forward(th_backend(), tt_mem_of(res), tt_mem_of(b.logits),
                             tt_mem_of(b.targets), &d->desc, &d->tv));
    tt_loss_value v;
    tt_status s = tt_loss_read(th_backend(), tt_mem_of(res), "Tversky", &v);
    tt_status_free(s); /* invalid targets are the caller's to check */
    tt_buffer_free(res);
    ref_tversky_device_free(&b);
    return v;
}

float *ref_tversky_device_backward(ref_tversky_data *d, const float *start, float scale,
                                   int times)
{
    ref_tversky_device b = ref_tversky_upload(d);
    tt_buffer *bg = start ? th_upload(start, d->total, "dlogits") : th_zeros(d->total, "dlogits");
    for (int r = 0; r < times; r++)
        TH_OK(tt_tversky_backward(th_backend(), tt_mem_of(bg), tt_mem_of(b.logits),
                                  tt_mem_of(b.targets), &d->desc, &d->tv, scale));
    float *got = malloc(d->total * sizeof(float));
    CU_ASSERT_FATAL(got != NULL);
    th_download(got, bg, d->total);
    tt_buffer_free(bg);
    ref_tversky_device_free(&b);
    return got;
}

