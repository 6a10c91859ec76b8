/* Plain-C double reference of the Lovász hinge and softmax losses
 * (tests/ref_lovasz.h), written from the definition: sort, then
 * J_i = 1 - (G - cp_i) / (G + cn_i), loss = sum f(e_(i)) (J_i - J_{i-1}). */
#include "ref_lovasz.h"

#include <math.h>
#include <stdlib.h>

typedef struct ranked {
    double error;
    int pixel, target;
} ranked;

static int by_error(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->error != y->error) return x->error > y->error ? -1 : 1;
    return (x->pixel > y->pixel) - (x->pixel < y->pixel);
}

/* The Lovász loss of one plane's `count` errors (sorted here); dloss
 * (nullable) = d loss / d error per entry of `items` after sorting, with
 * `relu` applying max(e, 0) first.  *positives = G. */
static double plane_loss(ranked *items, int count, int relu, double *dloss, int *positives)
{
    qsort(items, (size_t)count, sizeof *items, by_error);
    int G = 0;
    for (int i = 0; i < count; i++) G += items[i].target;
    *positives = G;
    double loss = 0, previous = 0;
    int cp = 0, cn = 0;
    for (int i = 0; i < count; i++) {
        cp += items[i].target;
        cn += !items[i].target;
        double jaccard = G + cn == 0 ? 0 : 1 - (double)(G - cp) / (G + cn);
        double step = jaccard - previous;
        previous = jaccard;
        double e = items[i].error;
        loss += (relu ? fmax(e, 0) : e) * step;
        if (dloss) dloss[i] = relu && !(e > 0) ? 0 : step;
    }
    return loss;
}

double ref_lovasz(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                  int softmax, const double *weights, long *invalid, double *dlogits)
{
    ranked *items = malloc((size_t)hw * sizeof *items);
    double *dloss = malloc((size_t)hw * sizeof *dloss);
    double *prob = malloc((size_t)c * hw * sizeof *prob);
    double *dprob = malloc((size_t)c * hw * sizeof *dprob);
    double *plane_value = malloc((size_t)c * sizeof *plane_value);
    int *present = malloc((size_t)c * sizeof *present);
    if (!items || !dloss || !prob || !dprob || !plane_value || !present) abort();
    long bad = 0;
    double sum = 0;
    for (int img = 0; img < n; img++) {
        const double *x = logits + (size_t)img * c * hw;
        if (softmax) {
            const uint8_t *labels = targets + (size_t)img * hw;
            for (int p = 0; p < hw; p++) {
                double m = x[p];
                for (int k = 1; k < c; k++) m = fmax(m, x[k * hw + p]);
                double e = 0;
                for (int k = 0; k < c; k++) e += exp(x[k * hw + p] - m);
                for (int k = 0; k < c; k++) prob[k * hw + p] = exp(x[k * hw + p] - m) / e;
                if (labels[p] != ignore && labels[p] >= c) bad++;
            }
        } else {
            for (int i = 0; i < c * hw; i++) {
                int t = targets[(size_t)img * c * hw + i];
                if (t != ignore && t > 1) bad++;
            }
        }
        for (int i = 0; i < c * hw; i++) dprob[i] = 0;
        for (int k = 0; k < c; k++) {
            int count = 0;
            for (int p = 0; p < hw; p++) {
                int t = softmax ? targets[(size_t)img * hw + p]
                                : targets[((size_t)img * c + k) * hw + p];
                if (t == ignore || t >= (softmax ? c : 2)) continue;
                if (softmax) t = t == k;
                double e = softmax ? fabs(t - prob[k * hw + p]) : 1 - x[k * hw + p] * (2 * t - 1);
                items[count++] = (ranked){e, p, t};
            }
            int positives;
            plane_value[k] = plane_loss(items, count, !softmax, dloss, &positives);
            present[k] = !softmax || positives > 0;
            for (int i = 0; i < count; i++) {
                int p = items[i].pixel, s = 2 * items[i].target - 1;
                /* hinge: de/dx = -s; softmax: d|t - p|/dp = -s */
                dprob[k * hw + p] = -s * dloss[i];
            }
        }
        double weighted = 0, weight_sum = 0;
        for (int k = 0; k < c; k++) {
            if (!present[k]) continue;
            double w = weights ? weights[k] : 1;
            weighted += w * plane_value[k];
            weight_sum += w;
        }
        if (weight_sum > 0) sum += weighted / weight_sum;
        if (!dlogits || !(weight_sum > 0)) continue;
        double *dx = dlogits + (size_t)img * c * hw;
        for (int k = 0; k < c; k++) {
            double w = present[k] ? (weights ? weights[k] : 1) / weight_sum : 0;
            for (int p = 0; p < hw; p++) dprob[k * hw + p] *= w;
        }
        if (!softmax) {
            for (int i = 0; i < c * hw; i++) dx[i] += dprob[i];
            continue;
        }
        for (int p = 0; p < hw; p++) {
            double dot = 0;
            for (int k = 0; k < c; k++) dot += dprob[k * hw + p] * prob[k * hw + p];
            for (int k = 0; k < c; k++)
                dx[k * hw + p] += prob[k * hw + p] * (dprob[k * hw + p] - dot);
        }
    }
    if (invalid) *invalid = bad;
    free(items), free(dloss), free(prob), free(dprob), free(plane_value), free(present);
    return sum;
}
